// The map: the scene the server sends (rooms, places and their edges, objects, the operator's additions), the
// robot, the plan and the clarification's candidates, drawn on a Canvas 2D in world metres; pan, zoom, Fit, and
// a clicked object's details. #map-stats says what it holds and what its last frame drew (for tests and
// `heracles bench console`). Other modules change `scene` and call requestDraw().
import { send } from "./connection.js";
import { $, ago, el, setText } from "./dom.js";
import { outlineRooms } from "./outlines.js";

export const scene = {
  items: new Map(),          // symbol -> ITEM as the server sent it: rooms and objects
  places: new Map(),         // symbol -> [x, y]: the traversable place graph's nodes
  loading: false,            // the whole map is still arriving (its places, a message at a time)
  edgePairs: new Map(),      // "P1 P2" -> [P1, P2]: the traversable place graph's edges, by their places
  edges: new Float64Array(0), // x1, y1, x2, y2, ... of those edges, from the places' positions
  robot: null,               // {x, y, place}
  plan: null,                // {commandId, steps, current, done}
  candidates: [],            // [{symbol, x, y}] of the open clarification
  moves: [],                 // [{symbol, from: [x, y], to: [x, y]}] from the history panel
  selected: null,            // the clicked object's symbol
  asOf: null,                // {time, objects: [AS_OF_ITEM], hidden: [symbol]}: the objects of a past time, or null
};
// Arrays derived from scene.items, rebuilt once per scene message rather than per frame.
let layers = { rooms: [], places: new Float64Array(0), byClass: new Map(), operator: [], objects: [] };
let layersStale = true;
let hullsStale = true; // the rooms' outlines depend on rooms and places only, not on objects
let needFit = true;

function rebuildLayers() {
  const started = performance.now();
  const rooms = [], places = [], byClass = new Map(), operator = [], objects = [];
  const addObject = (item) => {
    objects.push(item);
    if (item.operator) operator.push(item);
    else {
      if (!byClass.has(item.cls)) byClass.set(item.cls, []);
      byClass.get(item.cls).push(item);
    }
  };
  for (const item of scene.items.values()) {
    if (item.layer === "room") rooms.push({ ...item, hull: null });
    else if (item.layer === "object" && !scene.asOf) addObject(item);
  }
  for (const [x, y] of scene.places.values()) places.push(x, y);
  // As of a past time: the objects there then, where they were (those not there then are left out).
  if (scene.asOf) {
    for (const item of scene.asOf.objects) {
      const now = scene.items.get(item.symbol);
      addObject({ ...item, layer: "object", operator: Boolean(now && now.operator) });
    }
  }
  // The rooms' outlines depend on rooms and places only: kept while only objects changed, and left for when the
  // whole map is there (until then rooms are discs).
  if (!hullsStale) {
    const before = new Map(layers.rooms.map((room) => [room.symbol, room]));
    for (const room of rooms) Object.assign(room, { hull: before.get(room.symbol).hull, width: before.get(room.symbol).width });
  } else if (scene.loading) {
    for (const room of rooms) Object.assign(room, { hull: null, width: 4 });
  } else {
    outlineRooms(rooms, places);
    hullsStale = false;
  }
  // Each edge between its two places where they are now (an edge to a place not drawn is left out); once the
  // whole map is there (rebuilt for each piece of 10^5 places' edges, they cost more than the pieces themselves).
  if (!scene.loading) {
    const edges = [];
    for (const [a, b] of scene.edgePairs.values()) {
      const from = scene.places.get(a), to = scene.places.get(b);
      if (from && to) edges.push(from[0], from[1], to[0], to[1]);
    }
    scene.edges = Float64Array.from(edges);
  }
  layers = { rooms, places: Float64Array.from(places), byClass, operator, objects };
  layersStale = false;
  renderLegend();
  layersMs = performance.now() - started;
}

// A stable colour per class: the same class gets the same hue in every session.
const colourCache = new Map();
function classColour(cls) {
  let colour = colourCache.get(cls);
  if (!colour) {
    let hash = 2166136261;
    for (let i = 0; i < cls.length; i++) hash = Math.imul(hash ^ cls.charCodeAt(i), 16777619);
    colour = `hsl(${(hash >>> 0) % 360}, 70%, 42%)`;
    colourCache.set(cls, colour);
  }
  return colour;
}
function roomColour(symbol) { return classColour("room:" + symbol).replace("hsl", "hsla").replace(")", ", 0.13)"); }

let legendKey = "";
function renderLegend() {
  const classes = [...layers.byClass.keys()].sort();
  const key = JSON.stringify([classes, classes.map((c) => layers.byClass.get(c).length), layers.operator.length]);
  if (key === legendKey) return;
  legendKey = key;
  const list = $("legend-list");
  list.replaceChildren();
  for (const cls of classes) {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = classColour(cls);
    list.appendChild(el("li", { data: { cls } }, swatch, cls, ` (${layers.byClass.get(cls).length})`));
  }
  if (layers.operator.length) {
    list.appendChild(el("li", {}, el("span", { class: "swatch operator" }), `added by an operator (${layers.operator.length})`));
  }
  list.appendChild(el("li", {}, el("span", { class: "swatch robot" }), "robot"));
  list.appendChild(el("li", {}, el("span", { class: "swatch plan" }), "plan"));
}

// ---- the view: world metres <-> canvas pixels ---------------------------------------------------
const canvas = $("map");
const ctx = canvas.getContext("2d");
const view = { cx: 0, cy: 0, scale: 10 }; // scale: CSS pixels per metre
let cssWidth = 0, cssHeight = 0;

const toScreenX = (x) => (x - view.cx) * view.scale + cssWidth / 2;
const toScreenY = (y) => cssHeight / 2 - (y - view.cy) * view.scale;
const toWorld = (sx, sy) => [(sx - cssWidth / 2) / view.scale + view.cx, (cssHeight / 2 - sy) / view.scale + view.cy];

function resize() {
  const rect = canvas.getBoundingClientRect();
  cssWidth = rect.width; cssHeight = rect.height;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(cssWidth * ratio));
  canvas.height = Math.max(1, Math.round(cssHeight * ratio));
  requestDraw();
}

function fit() {
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const item of scene.items.values()) {
    minX = Math.min(minX, item.x); maxX = Math.max(maxX, item.x);
    minY = Math.min(minY, item.y); maxY = Math.max(maxY, item.y);
  }
  for (const [x, y] of scene.places.values()) {
    minX = Math.min(minX, x); maxX = Math.max(maxX, x);
    minY = Math.min(minY, y); maxY = Math.max(maxY, y);
  }
  if (scene.robot) {
    minX = Math.min(minX, scene.robot.x); maxX = Math.max(maxX, scene.robot.x);
    minY = Math.min(minY, scene.robot.y); maxY = Math.max(maxY, scene.robot.y);
  }
  if (!isFinite(minX) || cssWidth <= 0 || cssHeight <= 0) return false;
  view.cx = (minX + maxX) / 2; view.cy = (minY + maxY) / 2;
  view.scale = 0.9 * Math.min(cssWidth / Math.max(maxX - minX, 2), cssHeight / Math.max(maxY - minY, 2));
  return true;
}

// ---- drawing: one frame per change --------------------------------------------------------------
let frameRequested = false;
let frames = 0;
let firstSceneMs = 0;
let wholeSceneMs = 0;
let layersMs = 0;
export function requestDraw() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(draw);
}

function draw() {
  frameRequested = false;
  if (layersStale) rebuildLayers();
  const started = performance.now();  // the frame alone (the layers' rebuild is layersMs)
  // Fitted once the whole map is there (a map still arriving is fitted to what it holds, and again then).
  if (needFit && scene.items.size + scene.places.size && fit() && !scene.loading) needFit = false;
  const ratio = canvas.width / Math.max(cssWidth, 1);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, cssWidth, cssHeight);
  const box = visibleBox();
  const drawn = { rooms: drawRooms(box), edges: drawEdges(box), places: drawPlaces(box) };
  drawMoves();
  const planPoints = drawPlan();
  drawn.objects = drawObjects(box);
  drawAsOfMarks();
  drawRings();
  drawRobot();
  drawScaleBar();
  frames++;
  reportFrame(drawn, planPoints, started);
}

// The world rectangle in view (plus a margin), for culling.
function visibleBox() {
  const [left, top] = toWorld(-20, -20);
  const [right, bottom] = toWorld(cssWidth + 20, cssHeight + 20);
  const inView = (x, y, r = 0) => x + r >= left && x - r <= right && y + r >= bottom && y - r <= top;
  return { left, top, right, bottom, inView };
}

// Rooms: translucent outlines with their names. Returns how many were drawn.
function drawRooms({ inView }) {
  ctx.textAlign = "center"; ctx.textBaseline = "middle";
  const roomInView = (room) => (room.hull ? room.hull.some(([x, y]) => inView(x, y, 50 / view.scale)) : inView(room.x, room.y, 2));
  const visibleRooms = layers.rooms.filter(roomInView);
  for (const room of visibleRooms) {
    ctx.beginPath();
    if (room.hull) room.hull.forEach(([x, y], k) => (k ? ctx.lineTo : ctx.moveTo).call(ctx, toScreenX(x), toScreenY(y)));
    else ctx.arc(toScreenX(room.x), toScreenY(room.y), 2 * view.scale, 0, 2 * Math.PI);
    ctx.closePath();
    ctx.fillStyle = roomColour(room.symbol);
    ctx.fill();
  }
  ctx.font = "bold 13px system-ui, sans-serif";
  ctx.fillStyle = "rgba(40, 50, 70, 0.75)";
  for (const room of visibleRooms) {
    const name = room.name || room.symbol;
    if (room.width * view.scale > ctx.measureText(name).width + 8) ctx.fillText(name, toScreenX(room.x), toScreenY(room.y));
  }
  return visibleRooms.length;
}

// The place graph's edges as one path. Returns how many were drawn.
function drawEdges({ left, top, right, bottom }) {
  const e = scene.edges;
  let drawn = 0;
  ctx.beginPath();
  for (let i = 0; i + 3 < e.length; i += 4) {
    const x1 = e[i], y1 = e[i + 1], x2 = e[i + 2], y2 = e[i + 3];
    if (Math.max(x1, x2) < left || Math.min(x1, x2) > right || Math.max(y1, y2) < bottom || Math.min(y1, y2) > top) continue;
    drawn++;
    ctx.moveTo(toScreenX(x1), toScreenY(y1));
    ctx.lineTo(toScreenX(x2), toScreenY(y2));
  }
  ctx.strokeStyle = "rgba(120, 130, 145, 0.55)"; ctx.lineWidth = 1;
  ctx.stroke();
  return drawn;
}

// The places as one path of dots. Returns how many were drawn.
function drawPlaces({ inView }) {
  const p = layers.places;
  const dot = view.scale > 20 ? 3 : 2;
  let drawn = 0;
  ctx.beginPath();
  for (let i = 0; i + 1 < p.length; i += 2) {
    if (!inView(p[i], p[i + 1])) continue;
    drawn++;
    ctx.rect(toScreenX(p[i]) - dot / 2, toScreenY(p[i + 1]) - dot / 2, dot, dot);
  }
  ctx.fillStyle = "#7b8794";
  ctx.fill();
  return drawn;
}

// Moved objects (history): a dashed arrow from where they were.
function drawMoves() {
  if (!scene.moves.length) return;
  ctx.save();
  ctx.setLineDash([4, 3]); ctx.strokeStyle = "#8e24aa"; ctx.lineWidth = 1.5;
  ctx.beginPath();
  for (const move of scene.moves) {
    ctx.moveTo(toScreenX(move.from[0]), toScreenY(move.from[1]));
    ctx.lineTo(toScreenX(move.to[0]), toScreenY(move.to[1]));
  }
  ctx.stroke();
  ctx.restore();
}

// The plan: every step's waypoints, the current step thicker. Returns how many points it drew.
function drawPlan() {
  let planPoints = 0;
  if (!scene.plan) return planPoints;
  const { steps, current, done } = scene.plan;
  steps.forEach((step, index) => {
    const points = step.waypoints && step.waypoints.length ? step.waypoints : (step.target ? [step.target] : []);
    if (!points.length) return;
    planPoints += points.length;
    ctx.beginPath();
    points.forEach(([x, y], k) => (k ? ctx.lineTo : ctx.moveTo).call(ctx, toScreenX(x), toScreenY(y)));
    const now = index === current && !done;
    ctx.strokeStyle = now ? "#ff6f00" : done ? "rgba(21, 101, 192, 0.35)" : "#1565c0";
    ctx.lineWidth = now ? 5 : 3;
    ctx.stroke();
    if (step.target) {
      ctx.beginPath();
      ctx.arc(toScreenX(step.target[0]), toScreenY(step.target[1]), 4, 0, 2 * Math.PI);
      ctx.fillStyle = ctx.strokeStyle; ctx.fill();
    }
  });
  return planPoints;
}

// Objects by class; operator additions as outlined diamonds; close up, each one's class beside it. Returns how
// many were drawn.
function drawObjects({ inView }) {
  let drawn = 0;
  const radius = view.scale > 30 ? 5 : 4;
  for (const [cls, items] of layers.byClass) {
    ctx.beginPath();
    for (const item of items) {
      if (!inView(item.x, item.y)) continue;
      drawn++;
      const sx = toScreenX(item.x), sy = toScreenY(item.y);
      ctx.moveTo(sx + radius, sy);
      ctx.arc(sx, sy, radius, 0, 2 * Math.PI);
    }
    ctx.fillStyle = classColour(cls);
    ctx.fill();
  }
  ctx.beginPath();
  for (const item of layers.operator) {
    if (!inView(item.x, item.y)) continue;
    drawn++;
    const sx = toScreenX(item.x), sy = toScreenY(item.y), r = radius + 2;
    ctx.moveTo(sx, sy - r); ctx.lineTo(sx + r, sy); ctx.lineTo(sx, sy + r); ctx.lineTo(sx - r, sy); ctx.closePath();
  }
  ctx.strokeStyle = "#c2185b"; ctx.lineWidth = 2;
  ctx.stroke();
  if (view.scale > 25) {  // close enough to read: the class beside each object
    ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.fillStyle = "#333";
    for (const item of layers.objects) {
      if (inView(item.x, item.y)) ctx.fillText(item.cls, toScreenX(item.x) + radius + 3, toScreenY(item.y));
    }
  }
  return drawn;
}

// As of a past time: a dashed ring around each object drawn where it was then, with a dashed line to where the
// map has it now; a cross over each one gone from the scene since.
function drawAsOfMarks() {
  if (!scene.asOf) return;
  ctx.save();
  ctx.setLineDash([4, 3]); ctx.strokeStyle = "#6a1b9a"; ctx.lineWidth = 2;
  ctx.beginPath();
  for (const item of layers.objects) {
    if (!item.moved) continue;
    const sx = toScreenX(item.x), sy = toScreenY(item.y);
    ctx.moveTo(sx + 9, sy);
    ctx.arc(sx, sy, 9, 0, 2 * Math.PI);
    const now = scene.items.get(item.symbol);
    if (now) { ctx.moveTo(sx, sy); ctx.lineTo(toScreenX(now.x), toScreenY(now.y)); }
  }
  ctx.stroke();
  ctx.setLineDash([]); ctx.strokeStyle = "#424242";
  ctx.beginPath();
  for (const item of layers.objects) {
    if (!item.gone) continue;
    const sx = toScreenX(item.x), sy = toScreenY(item.y);
    ctx.moveTo(sx - 7, sy - 7); ctx.lineTo(sx + 7, sy + 7); ctx.moveTo(sx + 7, sy - 7); ctx.lineTo(sx - 7, sy + 7);
  }
  ctx.stroke();
  ctx.restore();
}

// The objects of a past time instead of the present ones (null: back to the live map).
export function showAsOf(asOf) {
  scene.asOf = asOf;
  layersStale = true;
  requestDraw();
}

// The clicked object and the clarification's candidates: rings.
function drawRings() {
  const ring = (x, y, r, colour, width) => {
    ctx.beginPath(); ctx.arc(toScreenX(x), toScreenY(y), r, 0, 2 * Math.PI);
    ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.stroke();
  };
  ctx.font = "bold 12px system-ui, sans-serif"; ctx.textAlign = "left";
  for (const candidate of scene.candidates) {
    ring(candidate.x, candidate.y, 11, "#f9a825", 3);
    ctx.fillStyle = "#8d6e00";
    ctx.fillText(candidate.symbol, toScreenX(candidate.x) + 13, toScreenY(candidate.y) - 8);
  }
  // Where the map draws it: as of a past time, where it was then.
  const selected = scene.selected && (layers.objects.find((item) => item.symbol === scene.selected) || scene.items.get(scene.selected));
  if (selected) ring(selected.x, selected.y, 9, "#000", 2);
}

function drawRobot() {
  if (!scene.robot) return;
  const sx = toScreenX(scene.robot.x), sy = toScreenY(scene.robot.y);
  ctx.beginPath(); ctx.arc(sx, sy, 8, 0, 2 * Math.PI);
  ctx.fillStyle = "#ff6f00"; ctx.fill();
  ctx.lineWidth = 2; ctx.strokeStyle = "#4e2600"; ctx.stroke();
}

// What the map holds and what this frame drew, in #map-stats.
function reportFrame(drawn, planPoints, started) {
  // The first frame that shows a scene, in ms from the page's navigation start (its first paint of the map).
  if (!firstSceneMs && layers.objects.length + layers.places.length) firstSceneMs = performance.now();
  // The first frame of the whole map, places and their edges included.
  if (!wholeSceneMs && !scene.loading && layers.objects.length + layers.places.length) wholeSceneMs = performance.now();
  Object.assign($("map-stats").dataset, {
    rooms: layers.rooms.length, places: layers.places.length / 2, objects: layers.objects.length,
    operator: layers.operator.length, edges: scene.edges.length / 4,
    drawnRooms: drawn.rooms, drawnPlaces: drawn.places, drawnEdges: drawn.edges, drawnObjects: drawn.objects,
    robotX: scene.robot ? scene.robot.x : "", robotY: scene.robot ? scene.robot.y : "",
    robotPlace: scene.robot ? scene.robot.place || "" : "",
    planSteps: scene.plan ? scene.plan.steps.length : 0, planPoints,
    currentStep: scene.plan ? scene.plan.current : -1, candidates: scene.candidates.length,
    moves: scene.moves.length, asOf: scene.asOf ? scene.asOf.time : "",
    asOfMoved: layers.objects.filter((item) => item.moved).length,
    asOfGone: layers.objects.filter((item) => item.gone).length,
    asOfHidden: scene.asOf ? scene.asOf.hidden.length : 0, firstSceneMs: firstSceneMs.toFixed(1), wholeSceneMs: wholeSceneMs.toFixed(1), layersMs: layersMs.toFixed(2), view: [view.cx, view.cy, view.scale].join(","), frames, drawMs: (performance.now() - started).toFixed(2),
  });
}

function drawScaleBar() {
  // The longest 1/2/5 x 10^n metres that fits in ~120 px.
  const target = 120 / view.scale;
  const power = Math.pow(10, Math.floor(Math.log10(target)));
  const metres = [5, 2, 1].map((k) => k * power).find((m) => m <= target) || power;
  const px = metres * view.scale;
  const x = 16, y = cssHeight - 20;
  ctx.fillStyle = "rgba(255, 255, 255, 0.8)"; ctx.fillRect(x - 6, y - 20, px + 12, 28);
  ctx.beginPath();
  ctx.moveTo(x, y - 6); ctx.lineTo(x, y); ctx.lineTo(x + px, y); ctx.lineTo(x + px, y - 6);
  ctx.strokeStyle = "#111"; ctx.lineWidth = 2; ctx.stroke();
  ctx.fillStyle = "#111"; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "bottom";
  ctx.fillText(metres >= 1000 ? `${metres / 1000} km` : `${+metres.toPrecision(3)} m`, x + px / 2, y - 6);
  ctx.textBaseline = "middle";
}

// ---- pan, zoom, click ---------------------------------------------------------------------------
let drag = null;
canvas.addEventListener("pointerdown", (event) => {
  drag = { x: event.clientX, y: event.clientY, cx: view.cx, cy: view.cy, moved: false };
  canvas.setPointerCapture(event.pointerId);
});
canvas.addEventListener("pointermove", (event) => {
  if (!drag) return;
  const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
  if (Math.hypot(dx, dy) > 4) { drag.moved = true; canvas.classList.add("dragging"); }
  if (!drag.moved) return;
  view.cx = drag.cx - dx / view.scale;
  view.cy = drag.cy + dy / view.scale;
  requestDraw();
});
canvas.addEventListener("pointerup", (event) => {
  const wasClick = drag && !drag.moved;
  drag = null;
  canvas.classList.remove("dragging");
  if (wasClick) {
    const rect = canvas.getBoundingClientRect();
    pick(event.clientX - rect.left, event.clientY - rect.top);
  }
});
canvas.addEventListener("wheel", (event) => {
  event.preventDefault();
  const rect = canvas.getBoundingClientRect();
  const sx = event.clientX - rect.left, sy = event.clientY - rect.top;
  const [wx, wy] = toWorld(sx, sy);
  view.scale = Math.min(2000, Math.max(0.01, view.scale * Math.exp(-event.deltaY * 0.0015)));
  // Keep the point under the cursor where it was.
  view.cx = wx - (sx - cssWidth / 2) / view.scale;
  view.cy = wy - (cssHeight / 2 - sy) / view.scale;
  requestDraw();
}, { passive: false });
$("fit").addEventListener("click", () => { fit(); requestDraw(); });

function pick(sx, sy) {
  let best = null, bestD = 10; // pixels
  for (const item of layers.objects) {
    const d = Math.hypot(toScreenX(item.x) - sx, toScreenY(item.y) - sy);
    if (d < bestD) { best = item; bestD = d; }
  }
  if (!best) return;
  showObject(best.symbol);
}

function showObject(symbol) {
  scene.selected = symbol;
  requestDraw();
  const item = scene.items.get(symbol);
  setText($("info-symbol"), symbol);
  setText($("info-class"), item ? item.cls : "");
  setText($("info-room"), "…");
  setText($("info-seen"), "…");
  $("object-info").hidden = false;
  send({ op: "object", symbol });
}
$("object-info-close").addEventListener("click", () => {
  $("object-info").hidden = true; scene.selected = null; requestDraw();
});

// ---- server messages ----------------------------------------------------------------------------
export function onScene(message, received) {
  const outlines = (item) => item && item.layer === "room";
  if (message.full) {
    scene.items.clear(); scene.places.clear(); scene.edgePairs.clear(); scene.edges = new Float64Array(0); hullsStale = true;
  }
  for (const symbol of message.remove || []) {
    if (outlines(scene.items.get(symbol)) || scene.places.delete(symbol)) hullsStale = true;
    scene.items.delete(symbol);
  }
  for (const item of message.upsert || []) {
    if (outlines(item)) hullsStale = true;
    scene.items.set(item.symbol, item);
  }
  const places = message.places || { symbols: [], xy: [] };
  places.symbols.forEach((symbol, i) => scene.places.set(symbol, [places.xy[2 * i], places.xy[2 * i + 1]]));
  if (places.symbols.length) hullsStale = true;
  const edges = message.edges || {};
  for (const [a, b] of edges.remove || []) scene.edgePairs.delete(a + " " + b);
  for (const [a, b] of edges.add || []) scene.edgePairs.set(a + " " + b, [a, b]);
  scene.loading = Boolean(message.more);
  layersStale = true;
  document.body.dataset.scene = scene.loading ? "loading" : "loaded";
  requestDraw();
  // What a scene message costs the page, parsing included (heracles bench console reads it).
  Object.assign($("map-stats").dataset, {
    sceneBytes: received.bytes, sceneMessageMs: (performance.now() - received.started).toFixed(2) });
}

export function onRobot(message) {
  scene.robot = { x: message.x, y: message.y, place: message.place };
  requestDraw();
}

export function onObject(message) {
  if (message.symbol !== scene.selected) return;
  setText($("info-class"), message.cls);
  // An object gone from the scene still has its class and when it was last seen, with the error.
  setText($("info-room"), message.error || message.room || "none");
  const seen = message.last_seen_s;  // epoch seconds; null for an operator's addition or without history
  const item = scene.items.get(message.symbol);
  setText($("info-seen"), typeof seen === "number"
    ? `${new Date(seen * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC (${ago(Date.now() / 1000 - seen)})`
    : item && item.operator ? "never (added by an operator)" : "unknown");
}

// Size the canvas to its box, now and whenever the box changes.
export function startMap() {
  new ResizeObserver(resize).observe(canvas);
  resize();
}
