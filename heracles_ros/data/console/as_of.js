// The map as of a past time: a slider from "now" back over the span chosen, answered by the server from the
// mirror's history (docs/console.md, op scene_at). The objects then are drawn where they were, those that moved
// since marked, those not there then hidden; "Now" returns to the live map. A time the history cannot answer
// (older than it keeps) is said in words, and the map stays live. One request at a time: a slider moved while
// one is answered asks for its latest position once the answer is in.
import { send } from "./connection.js";
import { $, ago, el, setText } from "./dom.js";
import { showAsOf } from "./map.js";

const slider = $("as-of-ago"), span = $("as-of-span");
let pending = null;  // ago_s of the request in flight
let wanted = null;   // ago_s asked for while one was in flight

const agoOfSlider = () => -Number(slider.value);

function label() {
  const seconds = agoOfSlider();
  setText($("as-of-label"), seconds > 0 ? ago(seconds) : "now");
}

function ask(seconds) {
  if (seconds <= 0) { live(); return; }
  if (pending !== null) { wanted = seconds; return; }
  pending = seconds;
  document.body.dataset.asOf = "reading";
  if (!send({ op: "scene_at", ago_s: seconds })) { pending = null; document.body.dataset.asOf = ""; }
}

// Back to the live map.
function live() {
  wanted = null;
  slider.value = "0";
  label();
  showAsOf(null);
  document.body.dataset.asOf = "";
  $("as-of-banner").hidden = true;
  setText($("as-of-summary"), "");
  $("as-of-summary").classList.remove("error");
  $("as-of-list").replaceChildren();
}

// The span the slider covers, in seconds back from now.
function setSpan() {
  const seconds = Number(span.value);
  slider.min = String(-seconds);
  slider.step = String(Math.max(1, Math.round(seconds / 360)));
  if (agoOfSlider() > seconds) slider.value = String(-seconds);
  label();
}

slider.addEventListener("input", label);
slider.addEventListener("change", () => ask(agoOfSlider()));
span.addEventListener("change", () => { setSpan(); if (agoOfSlider() > 0) ask(agoOfSlider()); });
$("as-of-now").addEventListener("click", live);
$("as-of-banner-now").addEventListener("click", live);
setSpan();

// The answer to this page's latest request; an older one, or one after "Now", is dropped.
export function onSceneAt(message) {
  const answered = pending;
  pending = null;
  if (wanted !== null) { const next = wanted; wanted = null; if (next !== answered) { ask(next); return; } }
  if (agoOfSlider() <= 0 || message.ago_s !== answered) return;
  const summary = $("as-of-summary"), list = $("as-of-list");
  list.replaceChildren();
  if (message.error) {
    showAsOf(null);
    document.body.dataset.asOf = "error";
    $("as-of-banner").hidden = true;
    summary.classList.add("error");
    setText(summary, message.error);
    return;
  }
  summary.classList.remove("error");
  showAsOf({ time: message.time, objects: message.objects, hidden: message.hidden });
  document.body.dataset.asOf = "shown";
  setText($("as-of-time"), message.time);
  $("as-of-banner").hidden = false;
  const moved = message.objects.filter((item) => item.moved), gone = message.objects.filter((item) => item.gone);
  setText(summary, `As of ${message.time}: ${message.objects.length} objects; ${moved.length} moved since (drawn ` +
    `where they were), ${gone.length} gone since, ${message.hidden.length} not there then (hidden).`);
  const row = (mark, symbol, text) => list.appendChild(el("li", { data: { mark, symbol } }, text));
  for (const item of moved) row("moved", item.symbol, `${item.symbol} (${item.cls}) was at ${item.x.toFixed(2)}, ${item.y.toFixed(2)}${item.room ? " in " + item.room : ""}`);
  for (const item of gone) row("gone", item.symbol, `${item.symbol} (${item.cls}) was there, gone since`);
  for (const symbol of message.hidden) row("hidden", symbol, `${symbol} was not there then`);
}

// The server refused or could not answer the request (an error about scene_at).
export function onSceneAtError() {
  pending = null;
  if (wanted !== null) { const next = wanted; wanted = null; ask(next); return; }
  if (document.body.dataset.asOf === "reading") document.body.dataset.asOf = "error";
}
