// The page's one WebSocket to the console's server (/ws): every message both ways is specified in
// docs/console.md, "Wire protocol". It reconnects on its own, asking for this tab's session again.
import { $, setText } from "./dom.js";

let socket = null;
let retryMs = 500;
let deliver = () => {};  // (message, {bytes, started}) for each message from the server
let report = () => {};   // (text) for what went wrong on the page's side

// A secured console's address carries ?token=: kept here for the socket, taken out of the address bar (the
// server's cookie stands in for it from now on; an address to share or bookmark should not hold the secret).
const token = new URLSearchParams(location.search).get("token");
if (token) history.replaceState(null, "", location.pathname);

// This tab's session, kept across reconnections and reloads (per tab): a page back within the server's
// client_lost_s takes its session over, and the commands it started run on instead of being cancelled.
let session = "";
try { session = sessionStorage.getItem("heracles.session") || ""; } catch (err) { /* storage may be off */ }

// The session hello names: this tab's from now on.
export function keepSession(id) {
  session = id;
  document.body.dataset.session = id;
  try { sessionStorage.setItem("heracles.session", id); } catch (err) { /* storage may be off */ }
}

// Open the socket: each message from the server goes to onMessage(message, {bytes, started}) (started: when it
// arrived, in performance.now() ms), and what goes wrong on the page's side to onProblem(text).
export function connect(onMessage, onProblem) {
  deliver = onMessage;
  report = onProblem;
  open();
}

function open() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const query = new URLSearchParams();
  if (token) query.set("token", token);
  if (session) query.set("session", session);
  socket = new WebSocket(`${scheme}//${location.host}/ws${String(query) ? "?" + query : ""}`);
  socket.onopen = () => { retryMs = 500; document.body.dataset.state = "ready"; setText($("connection"), "connected"); };
  socket.onmessage = (event) => {
    const started = performance.now();
    let message;
    try { message = JSON.parse(event.data); } catch (err) { report(`unreadable message from the server: ${err}`); return; }
    deliver(message, { bytes: event.data.length, started });
  };
  socket.onclose = (event) => {
    document.body.dataset.state = "closed";
    setText($("connection"), `disconnected (${event.code}${event.reason ? ": " + event.reason : ""}); retrying`);
    // The server may be restarting: try again, backing off up to 10 s.
    setTimeout(open, retryMs);
    retryMs = Math.min(retryMs * 2, 10000);
  };
}

// One op to the server; false (and said) when the socket is not open.
export function send(message) {
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    report(`not connected: ${message.op} was not sent`);
    return false;
  }
  socket.send(JSON.stringify(message));
  return true;
}

// The stop, as it is, at once: no confirmation, no queue. False when the socket is not open.
export function sendStop() {
  if (!socket || socket.readyState !== WebSocket.OPEN) return false;
  socket.send('{"op":"stop"}');
  return true;
}
