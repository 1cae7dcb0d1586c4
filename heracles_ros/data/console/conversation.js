// The conversation: questions with their answers and explanations; commands with each stage as it happens, the
// plan's Approve / Refuse, Cancel, and a clarification's candidates as buttons; errors the server or the page
// report. A command's plan, its current step and the candidates are drawn on the map.
import { send } from "./connection.js";
import { $, el, setText } from "./dom.js";
import { requestDraw, scene } from "./map.js";

const log = $("log");
const commands = new Map(); // command_id -> entry
const pending = [];         // entries sent, their command_id not yet known
let requestCounter = 0;

// The newest exchange stays in sight.
export function append(node) {
  log.appendChild(node);
  log.scrollTop = log.scrollHeight;
  return node;
}
export function logError(text) {
  append(el("li", { class: "error", role: "alert" }, text));
}

function newCommandEntry(text) {
  const entry = { id: "", finished: false, shown: new Set() };
  entry.stages = el("ol", { class: "stages" });
  entry.actions = el("div", { class: "actions" });
  entry.result = el("div", { class: "result" });
  entry.li = append(el("li", { class: "command", data: { state: "sent" } },
    el("div", { class: "said" }, "Command: ", text), entry.stages, entry.actions, entry.result));
  pending.push(entry);
  return entry;
}

// The server names a command in its first stage or result; until then the oldest sent one is meant.
function entryFor(commandId) {
  const known = commands.get(commandId);
  if (known && !known.finished) return known;
  const entry = pending.shift() || known || newCommandEntry("(started elsewhere)");
  if (!entry.id) {
    const index = pending.indexOf(entry);
    if (index >= 0) pending.splice(index, 1);
  }
  entry.id = commandId;
  entry.li.dataset.commandId = commandId;
  commands.set(commandId, entry);
  if (!entry.cancel) {
    entry.cancel = el("button", { type: "button", class: "cancel", data: { commandId } }, "Cancel");
    entry.cancel.addEventListener("click", () => send({ op: "cancel", command_id: commandId }));
    entry.actions.appendChild(entry.cancel);
  }
  entry.li.dataset.state = "running";
  return entry;
}

function sendCommand(text) {
  const entry = newCommandEntry(text);
  if (!send({ op: "command", text, execute: true })) finish(entry, "failed", "not connected");
}

function sendAsk(text) {
  const requestId = `q${++requestCounter}-${Date.now()}`;
  append(el("li", { class: "ask", data: { requestId } },
    el("div", { class: "said" }, "Question: ", text), el("div", { class: "answer-text" }, "…"),
    el("div", { class: "explanation" })));
  send({ op: "ask", text, request_id: requestId });
}

function talk(kind) {
  const box = $("instruction");
  const text = box.value.trim();
  if (!text) { box.focus(); return; }
  box.value = "";
  if (kind === "ask") sendAsk(text); else sendCommand(text);
}
$("talk").addEventListener("submit", (event) => { event.preventDefault(); talk("command"); });
$("send-ask").addEventListener("click", () => talk("ask"));
$("instruction").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); talk(event.ctrlKey ? "ask" : "command"); }
});

// A stage's structured parts (queries, goal, plan) are shown once per command; its message only when
// the stage brings nothing new (the message repeats the parts in words).
function stageLine(entry, message) {
  const li = el("li", { data: { stage: message.stage } }, el("strong", {}, message.stage));
  const parts = [
    ...(message.queries || []).map((query) => ["code", "query", query]),
    ["div", "goal-text", message.goal_text],
    ["code", "goal", message.goal],
    ["pre", "plan-summary", message.plan && message.plan.summary],
  ];
  let added = 0;
  for (const [tag, cls, text] of parts) {
    if (!text || entry.shown.has(cls + "\n" + text)) continue;
    entry.shown.add(cls + "\n" + text);
    li.appendChild(el(tag, { class: cls }, text));
    added++;
  }
  // A step's walking left and its time, as the CLI's progress line says them.
  const said = [message.message, message.step && message.step.remaining].filter(Boolean).join(" — ");
  if (!added && said) li.insertBefore(document.createTextNode(": " + said), li.children[0].nextSibling);
  return li;
}

function clearDecision(entry) {
  for (const button of entry.actions.querySelectorAll(".decision")) button.remove();
}

export function onStage(message) {
  const entry = entryFor(message.command_id);
  const last = entry.stages.lastElementChild;
  const line = stageLine(entry, message);
  // Steps repeat (start, end of each): one line per step, updated, rather than two.
  if (message.stage === "step" && message.step && last && last.dataset.stage === "step" &&
      last.dataset.index === String(message.step.index)) last.replaceWith(line);
  else entry.stages.appendChild(line);
  if (message.step) line.dataset.index = String(message.step.index);
  if (entry.li === log.lastElementChild) log.scrollTop = log.scrollHeight;
  if (message.plan) {
    scene.plan = { commandId: message.command_id, steps: message.plan.steps || [], current: -1, done: false };
    scene.candidates = [];
  }
  if (message.step && scene.plan && scene.plan.commandId === message.command_id) {
    scene.plan.current = message.step.index;
    if (message.step.robot) scene.robot = { ...(scene.robot || {}), x: message.step.robot[0], y: message.step.robot[1] };
  }
  if (message.stage === "confirm") {
    // One Approve / Refuse at a time carries the ids (an older confirm is answered or gone).
    for (const old of document.querySelectorAll("#approve, #refuse")) old.removeAttribute("id");
    clearDecision(entry);
    const approve = el("button", { type: "button", id: "approve", class: "decision", data: { commandId: entry.id } }, "Approve");
    const refuse = el("button", { type: "button", id: "refuse", class: "decision", data: { commandId: entry.id } }, "Refuse");
    approve.addEventListener("click", () => { clearDecision(entry); send({ op: "approve", command_id: entry.id }); });
    refuse.addEventListener("click", () => { clearDecision(entry); send({ op: "refuse", command_id: entry.id }); });
    entry.actions.prepend(approve, refuse);
    entry.li.dataset.state = "confirm";
  } else if (message.stage === "executing" || message.stage === "step") {
    clearDecision(entry);
    entry.li.dataset.state = "executing";
  }
  requestDraw();
}

function finish(entry, outcome, text) {
  entry.finished = true;
  clearDecision(entry);
  if (entry.cancel) { entry.cancel.remove(); entry.cancel = null; }
  entry.li.dataset.state = "done";
  entry.li.dataset.outcome = outcome;
  setText(entry.result, text);
}

export function onResult(message) {
  const entry = entryFor(message.command_id);
  const parts = [message.outcome];
  if (message.reason) parts.push(message.reason);
  if (message.goal_text && message.outcome !== "clarify") parts.push(message.goal_text);
  if (message.steps_completed) parts.push(`${message.steps_completed} steps done`);
  finish(entry, message.outcome, parts.join(": "));
  if (scene.plan && scene.plan.commandId === message.command_id) scene.plan.done = true;
  if (message.outcome === "clarify") {
    if (message.clarification && message.clarification !== message.reason) {
      entry.result.appendChild(el("div", { class: "clarification" }, message.clarification));
    }
    const candidates = message.candidates || [];
    for (const candidate of candidates) {
      // The server's description names the symbol, class and room already when it has one.
      const label = candidate.description ||
        [candidate.symbol, candidate.cls, candidate.room ? "in " + candidate.room : ""].filter(Boolean).join(" ");
      const button = el("button", { type: "button", class: "candidate", data: { symbol: candidate.symbol } }, label);
      button.addEventListener("click", () => {
        for (const other of entry.actions.querySelectorAll(".candidate")) other.disabled = true;
        button.dataset.chosen = "true";
        scene.candidates = [];
        requestDraw();
        const follow = newCommandEntry(`(I mean ${candidate.symbol})`);
        if (!send({ op: "choose", command_id: message.command_id, symbol: candidate.symbol })) finish(follow, "failed", "not connected");
      });
      entry.actions.appendChild(button);
    }
    scene.candidates = candidates
      .map((c) => {
        const item = scene.items.get(c.symbol);
        const x = typeof c.x === "number" ? c.x : item && item.x, y = typeof c.y === "number" ? c.y : item && item.y;
        return typeof x === "number" && typeof y === "number" ? { symbol: c.symbol, x, y } : null;
      })
      .filter(Boolean);
  }
  if (entry.li === log.lastElementChild) log.scrollTop = log.scrollHeight;
  requestDraw();
}

export function onAnswer(message) {
  const li = [...log.querySelectorAll("li.ask")].find((node) => node.dataset.requestId === message.request_id);
  if (!li) return;
  setText(li.querySelector(".answer-text"), message.error ? `error: ${message.error}` : message.text);
  setText(li.querySelector(".explanation"), message.explanation);
  li.dataset.state = message.error ? "error" : "answered";
  if (message.error) li.classList.add("error");
}

export function onError(message) {
  logError(`${message.about ? message.about + ": " : ""}${message.message}`);
  // A panel's request that failed says so in the panel too.
  const panel = { changes: "history-list", corrections: "corrections-list", revert: "corrections-list" }[message.about];
  if (panel) $(panel).replaceChildren(el("li", { class: "error" }, message.message));
  // A command the server refused before naming it: the oldest sent one.
  if ((message.about === "command" || message.about === "choose") && pending.length) {
    finish(pending.shift(), "rejected", message.message);
  }
}

// The server took a command: its id, before any stage.
export function onCommand(message) {
  const entry = entryFor(message.command_id);
  setText(entry.li.querySelector(".said"), `Command: ${message.text}`);
}
