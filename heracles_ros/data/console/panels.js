// STOP (on every screen, never waiting for anything) with the stopped banner and Resume, and the side panels:
// the history of changes (moves drawn on the map), the corrections with Revert, and the mirror's and the
// database's health.
import { send, sendStop } from "./connection.js";
import { append, logError } from "./conversation.js";
import { $, ago, el, fmt, setText } from "./dom.js";
import { requestDraw, scene } from "./map.js";

// ---- STOP and resume ----------------------------------------------------------------------------
$("stop").addEventListener("click", () => {
  // No confirmation, no queue: the stop leaves at once.
  if (!sendStop()) logError("not connected: the stop did not reach the robot");
});
const nameBox = $("operator-name");
try { nameBox.value = localStorage.getItem("heracles.operator") || ""; } catch (err) { /* storage may be off */ }
$("resume").addEventListener("click", () => {
  const operator = nameBox.value.trim();
  if (!operator) { setText($("resume-hint"), "Enter your name to resume."); nameBox.focus(); return; }
  try { localStorage.setItem("heracles.operator", operator); } catch (err) { /* storage may be off */ }
  setText($("resume-hint"), "");
  send({ op: "resume", operator, reason: "resumed from the console" });
});

let wasStopped = null;
export function onStop(message) {
  document.body.dataset.stopped = message.stopped ? "true" : "false";
  $("stopped-banner").hidden = !message.stopped;
  const who = message.operator ? ` (by ${message.operator})` : "";
  setText($("stopped-reason"), `${message.hard ? "hard stop" : "stop"}${message.reason ? ": " + message.reason : ""}${who}`);
  if (wasStopped !== null && wasStopped !== message.stopped) {
    append(el("li", { class: "notice" }, message.stopped ? "Stopped" : "Resumed", message.reason ? ": " + message.reason : "", who));
  }
  wasStopped = message.stopped;
}

// ---- history, corrections, health ---------------------------------------------------------------
$("history-load").addEventListener("click", () => send({ op: "changes", since_s: Number($("history-range").value) }));
$("history-on-map").addEventListener("change", () => { if (!$("history-on-map").checked) scene.moves = []; requestDraw(); });
$("corrections-load").addEventListener("click", () => send({ op: "corrections" }));
$("panel-corrections").addEventListener("toggle", () => { if ($("panel-corrections").open) send({ op: "corrections" }); });

// Offer only the history windows the server answers (hello's history_max_s: a longer one would always be an
// error).
export function offerHistoryUpTo(maxSeconds) {
  const range = $("history-range");
  for (const option of range.options) option.disabled = Number(option.value) > maxSeconds;
  const offered = [...range.options].filter((option) => !option.disabled);
  if (range.selectedOptions[0].disabled && offered.length) range.value = offered[offered.length - 1].value;
}

// A panel's list, replaced: the server's error, or `empty` when there is nothing, or one row per entry.
function refill(id, error, entries, empty, row) {
  const list = $(id);
  list.replaceChildren();
  if (error) { list.appendChild(el("li", { class: "error" }, error)); return false; }
  if (!entries.length) list.appendChild(el("li", {}, empty));
  for (const entry of entries) list.appendChild(row(entry));
  return true;
}

export function onChanges(message) {
  const moves = [];
  const listed = refill("history-list", message.error, message.events || [], "nothing changed in that time", (event) => {
    if (event.kind === "moved" && event.from_position && event.position) {
      moves.push({ symbol: event.symbol, from: event.from_position, to: event.position });
    }
    const what = [event.time || "", event.kind, event.symbol, event.class ? `(${event.class})` : "",
      event.room ? `in ${event.room}` : "", typeof event.distance_m === "number" ? `${event.distance_m.toFixed(1)} m` : "",
      event.why || ""].filter(Boolean).join(" ");
    return el("li", { data: { kind: event.kind || "", symbol: event.symbol || "" } }, what);
  });
  if (!listed) return;  // the map keeps the moves it shows
  scene.moves = $("history-on-map").checked ? moves : [];
  requestDraw();
}

export function onCorrections(message) {
  refill("corrections-list", message.error, message.items || [], "no corrections", (item) => {
    const li = el("li", { data: { correctionId: item.id, status: item.status } },
      `${item.id}: ${JSON.stringify(item.original)} → ${JSON.stringify(item.value)} (${item.status}${item.author ? ", " + item.author : ""})`);
    if (item.status === "active") {
      const revert = el("button", { type: "button", class: "revert", data: { correctionId: item.id } }, "Revert");
      revert.addEventListener("click", () => { revert.disabled = true; send({ op: "revert", correction_id: item.id }); });
      li.appendChild(document.createTextNode(" "));
      li.appendChild(revert);
    }
    return li;
  });
}

// Snapshots the mirror says never arrived or came late. While the sender leaves its sequence numbers at 0 nothing
// can be told, and the panel says so: never "none" then, and never an alarm.
function gapsText(mirror) {
  if (!mirror) return { text: "–", bad: false };
  if (!mirror.gaps_detectable) return { text: "gaps cannot be detected (the sender's sequence numbers are 0)", bad: false };
  const missed = mirror.snapshots_missed || 0, late = mirror.snapshots_late || 0;
  if (!missed && !late) return { text: "none", bad: false };
  return { text: `${missed} missed, ${late} late${mirror.last_gap ? "; last: " + mirror.last_gap : ""}`, bad: true };
}

export function onStatus(message) {
  const mirror = message.mirror || {}, database = message.database || {};
  setText($("health-sequence"), mirror.sequence ?? "–");
  setText($("health-nodes"), mirror.nodes ?? "–");
  setText($("health-lag"), typeof mirror.lag_s === "number" ? `${fmt(mirror.lag_s, 2)} s` : "–");
  setText($("health-age"), typeof mirror.age_s === "number" ? ago(mirror.age_s) : "–");
  setText($("health-error"), mirror.last_error || "none");
  $("health-error").classList.toggle("bad", Boolean(mirror.last_error));
  const gaps = gapsText(message.mirror);
  setText($("health-gaps"), gaps.text);
  $("health-gaps").classList.toggle("bad", gaps.bad);
  setText($("health-database"), database.ok ? "ok" : `unreachable${database.error ? ": " + database.error : ""}`);
  $("health-database").classList.toggle("bad", !database.ok);
}

