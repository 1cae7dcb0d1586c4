// The operator console's page: one WebSocket (/ws, see CONSOLE-PROTOCOL.md), a Canvas 2D map, the
// conversation and the panels. Every text that comes from the scene or the model reaches the DOM through
// textContent / createTextNode only (an object class may be any string an operator typed).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const body = document.body;

  // ---- small DOM helpers (text only, never markup) ------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = v;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === "") continue;
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    }
    return node;
  }
  const setText = (node, text) => { node.textContent = text === null || text === undefined ? "" : String(text); };
  const fmt = (v, digits = 1) => (typeof v === "number" && isFinite(v) ? v.toFixed(digits) : "–");

  // ---- the connection -----------------------------------------------------------------------------
  let socket = null;
  let retryMs = 500;
  // A secured console's address carries ?token=: kept here for the socket, taken out of the address bar (the
  // server's cookie stands in for it from now on; an address to share or bookmark should not hold the secret).
  const token = new URLSearchParams(location.search).get("token");
  if (token) history.replaceState(null, "", location.pathname);

  // This tab's session, kept across reconnections and reloads (per tab): a page back within the server's
  // client_lost_s takes its session over, and the commands it started run on instead of being cancelled.
  let session = "";
  try { session = sessionStorage.getItem("heracles.session") || ""; } catch (err) { /* storage may be off */ }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = new URLSearchParams();
    if (token) query.set("token", token);
    if (session) query.set("session", session);
    socket = new WebSocket(`${scheme}//${location.host}/ws${String(query) ? "?" + query : ""}`);
    socket.onopen = () => { retryMs = 500; body.dataset.state = "ready"; setText($("connection"), "connected"); };
    socket.onmessage = (event) => {
      const started = performance.now();
      let message;
      try { message = JSON.parse(event.data); } catch (err) { logError(`unreadable message from the server: ${err}`); return; }
      const handler = handlers[message.type];
      if (handler) handler(message);
      if (message.type === "scene") {  // what a scene message costs the page (heracles bench console reads it)
        Object.assign($("map-stats").dataset, {
          sceneBytes: event.data.length, sceneMessageMs: (performance.now() - started).toFixed(2) });
      }
    };
    socket.onclose = (event) => {
      body.dataset.state = "closed";
      setText($("connection"), `disconnected (${event.code}${event.reason ? ": " + event.reason : ""}); retrying`);
      // The server may be restarting: try again, backing off up to 10 s.
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10000);
    };
  }

  function send(message) {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      logError(`not connected: ${message.op} was not sent`);
      return false;
    }
    socket.send(JSON.stringify(message));
    return true;
  }

  // ---- the map's data -----------------------------------------------------------------------------
  const scene = {
    items: new Map(),          // symbol -> ITEM as the server sent it
    edgePairs: new Map(),      // "P1 P2" -> [P1, P2]: the traversable place graph's edges, by their places
    edges: new Float64Array(0), // x1, y1, x2, y2, ... of those edges, from the places' positions
    robot: null,               // {x, y, place}
    plan: null,                // {commandId, steps, current, done}
    candidates: [],            // [{symbol, x, y}] of the open clarification
    moves: [],                 // [{symbol, from: [x, y], to: [x, y]}] from the history panel
    selected: null,            // the clicked object's symbol
  };
  // Arrays derived from scene.items, rebuilt once per scene message rather than per frame.
  let layers = { rooms: [], places: new Float64Array(0), byClass: new Map(), operator: [], objects: [] };
  let layersStale = true;
  let hullsStale = true; // the rooms' outlines depend on rooms and places only, not on objects
  let needFit = true;

  function rebuildLayers() {
    const started = performance.now();
    const rooms = [], places = [], byClass = new Map(), operator = [], objects = [];
    for (const item of scene.items.values()) {
      if (item.layer === "room") rooms.push({ ...item, hull: null });
      else if (item.layer === "place") places.push(item.x, item.y);
      else if (item.layer === "object") {
        objects.push(item);
        if (item.operator) operator.push(item);
        else {
          if (!byClass.has(item.cls)) byClass.set(item.cls, []);
          byClass.get(item.cls).push(item);
        }
      }
    }
    // A room is known by its centre only: its outline is the hull of the places nearer to it than to any
    // other room's centre, widened by half a metre (a room without places gets a 2 m disc).
    if (!hullsStale) {
      const before = new Map(layers.rooms.map((room) => [room.symbol, room]));
      for (const room of rooms) Object.assign(room, { hull: before.get(room.symbol).hull, width: before.get(room.symbol).width });
    } else {
      outlineRooms(rooms, places);
      hullsStale = false;
    }
    // Each edge between its two places where they are now (an edge to a place not drawn is left out).
    const edges = [];
    for (const [a, b] of scene.edgePairs.values()) {
      const from = scene.items.get(a), to = scene.items.get(b);
      if (from && to) edges.push(from.x, from.y, to.x, to.y);
    }
    scene.edges = Float64Array.from(edges);
    layers = { rooms, places: Float64Array.from(places), byClass, operator, objects };
    layersStale = false;
    renderLegend();
    layersMs = performance.now() - started;
  }

  function outlineRooms(rooms, places) {
    const members = rooms.map(() => []);
    for (let i = 0; rooms.length && i < places.length; i += 2) {
      let best = 0, bestD = Infinity;
      for (let r = 0; r < rooms.length; r++) {
        const d = (rooms[r].x - places[i]) ** 2 + (rooms[r].y - places[i + 1]) ** 2;
        if (d < bestD) { bestD = d; best = r; }
      }
      members[best].push([places[i], places[i + 1]]);
    }
    rooms.forEach((room, r) => {
      room.hull = members[r].length >= 3 ? widen(convexHull(members[r]), 0.5) : null;
      const xs = room.hull ? room.hull.map((p) => p[0]) : [room.x - 2, room.x + 2];
      room.width = Math.max(...xs) - Math.min(...xs);  // metres: its name is drawn only where it fits
    });
  }

  function convexHull(points) {  // Andrew's monotone chain
    points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
    const half = (list) => {
      const out = [];
      for (const p of list) {
        while (out.length >= 2 && cross(out[out.length - 2], out[out.length - 1], p) <= 0) out.pop();
        out.push(p);
      }
      out.pop();
      return out;
    };
    return half(points).concat(half([...points].reverse()));
  }

  function widen(hull, metres) {
    const cx = hull.reduce((s, p) => s + p[0], 0) / hull.length, cy = hull.reduce((s, p) => s + p[1], 0) / hull.length;
    return hull.map(([x, y]) => {
      const d = Math.hypot(x - cx, y - cy) || 1;
      return [x + (x - cx) / d * metres, y + (y - cy) / d * metres];
    });
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
  let layersMs = 0;
  function requestDraw() {
    if (frameRequested) return;
    frameRequested = true;
    requestAnimationFrame(draw);
  }

  function draw() {
    frameRequested = false;
    if (layersStale) rebuildLayers();
    const started = performance.now();  // the frame alone (the layers' rebuild is layersMs)
    if (needFit && scene.items.size && fit()) needFit = false;
    const ratio = canvas.width / Math.max(cssWidth, 1);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, cssWidth, cssHeight);
    // The world rectangle in view (plus a margin), for culling.
    const [left, top] = toWorld(-20, -20);
    const [right, bottom] = toWorld(cssWidth + 20, cssHeight + 20);
    const inView = (x, y, r = 0) => x + r >= left && x - r <= right && y + r >= bottom && y - r <= top;
    const drawn = { rooms: 0, places: 0, edges: 0, objects: 0 };

    // Rooms: translucent outlines with their names.
    ctx.textAlign = "center"; ctx.textBaseline = "middle";
    const roomInView = (room) => (room.hull ? room.hull.some(([x, y]) => inView(x, y, 50 / view.scale)) : inView(room.x, room.y, 2));
    const visibleRooms = layers.rooms.filter(roomInView);
    for (const room of visibleRooms) {
      drawn.rooms++;
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

    // Places: the graph's edges as one path, the places as one path of dots.
    const e = scene.edges;
    ctx.beginPath();
    for (let i = 0; i + 3 < e.length; i += 4) {
      const x1 = e[i], y1 = e[i + 1], x2 = e[i + 2], y2 = e[i + 3];
      if (Math.max(x1, x2) < left || Math.min(x1, x2) > right || Math.max(y1, y2) < bottom || Math.min(y1, y2) > top) continue;
      drawn.edges++;
      ctx.moveTo(toScreenX(x1), toScreenY(y1));
      ctx.lineTo(toScreenX(x2), toScreenY(y2));
    }
    ctx.strokeStyle = "rgba(120, 130, 145, 0.55)"; ctx.lineWidth = 1;
    ctx.stroke();
    const p = layers.places;
    const dot = view.scale > 20 ? 3 : 2;
    ctx.beginPath();
    for (let i = 0; i + 1 < p.length; i += 2) {
      if (!inView(p[i], p[i + 1])) continue;
      drawn.places++;
      ctx.rect(toScreenX(p[i]) - dot / 2, toScreenY(p[i + 1]) - dot / 2, dot, dot);
    }
    ctx.fillStyle = "#7b8794";
    ctx.fill();

    // Moved objects (history): a dashed arrow from where they were.
    if (scene.moves.length) {
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

    // The plan: every step's waypoints, the current step thicker.
    let planPoints = 0;
    if (scene.plan) {
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
    }

    // Objects by class; operator additions as outlined diamonds.
    const radius = view.scale > 30 ? 5 : 4;
    for (const [cls, items] of layers.byClass) {
      ctx.beginPath();
      for (const item of items) {
        if (!inView(item.x, item.y)) continue;
        drawn.objects++;
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
      drawn.objects++;
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

    // The clicked object and the clarification's candidates: rings.
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
    const selected = scene.selected && scene.items.get(scene.selected);
    if (selected) ring(selected.x, selected.y, 9, "#000", 2);

    // The robot.
    if (scene.robot) {
      const sx = toScreenX(scene.robot.x), sy = toScreenY(scene.robot.y);
      ctx.beginPath(); ctx.arc(sx, sy, 8, 0, 2 * Math.PI);
      ctx.fillStyle = "#ff6f00"; ctx.fill();
      ctx.lineWidth = 2; ctx.strokeStyle = "#4e2600"; ctx.stroke();
    }

    drawScaleBar();
    frames++;
    // The first frame that shows a scene, in ms from the page's navigation start (its first paint of the map).
    if (!firstSceneMs && layers.objects.length + layers.places.length) firstSceneMs = performance.now();
    const stats = $("map-stats");
    Object.assign(stats.dataset, {
      rooms: layers.rooms.length, places: layers.places.length / 2, objects: layers.objects.length,
      operator: layers.operator.length, edges: scene.edges.length / 4,
      drawnRooms: drawn.rooms, drawnPlaces: drawn.places, drawnEdges: drawn.edges, drawnObjects: drawn.objects,
      robotX: scene.robot ? scene.robot.x : "", robotY: scene.robot ? scene.robot.y : "",
      robotPlace: scene.robot ? scene.robot.place || "" : "",
      planSteps: scene.plan ? scene.plan.steps.length : 0, planPoints,
      currentStep: scene.plan ? scene.plan.current : -1, candidates: scene.candidates.length,
      moves: scene.moves.length, firstSceneMs: firstSceneMs.toFixed(1), layersMs: layersMs.toFixed(2), view: [view.cx, view.cy, view.scale].join(","), frames, drawMs: (performance.now() - started).toFixed(2),
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

  function ago(seconds) {
    if (typeof seconds !== "number" || !isFinite(seconds)) return "unknown";
    if (seconds < 90) return `${seconds.toFixed(0)} s ago`;
    if (seconds < 5400) return `${(seconds / 60).toFixed(0)} min ago`;
    if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h ago`;
    return `${(seconds / 86400).toFixed(1)} days ago`;
  }

  // ---- the conversation ---------------------------------------------------------------------------
  const log = $("log");
  const commands = new Map(); // command_id -> entry
  const pending = [];         // entries sent, their command_id not yet known
  let requestCounter = 0;

  // The newest exchange stays in sight.
  function append(node) {
    log.appendChild(node);
    log.scrollTop = log.scrollHeight;
    return node;
  }
  function logError(text) {
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

  function onStage(message) {
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

  function onResult(message) {
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

  function onAnswer(message) {
    const li = [...log.querySelectorAll("li.ask")].find((node) => node.dataset.requestId === message.request_id);
    if (!li) return;
    setText(li.querySelector(".answer-text"), message.error ? `error: ${message.error}` : message.text);
    setText(li.querySelector(".explanation"), message.explanation);
    li.dataset.state = message.error ? "error" : "answered";
    if (message.error) li.classList.add("error");
  }

  function onError(message) {
    logError(`${message.about ? message.about + ": " : ""}${message.message}`);
    // A panel's request that failed says so in the panel too.
    const panel = { changes: "history-list", corrections: "corrections-list", revert: "corrections-list" }[message.about];
    if (panel) $(panel).replaceChildren(el("li", { class: "error" }, message.message));
    // A command the server refused before naming it: the oldest sent one.
    if ((message.about === "command" || message.about === "choose") && pending.length) {
      finish(pending.shift(), "rejected", message.message);
    }
  }

  // ---- STOP and resume ----------------------------------------------------------------------------
  $("stop").addEventListener("click", () => {
    // No confirmation, no queue: the stop leaves at once.
    if (socket && socket.readyState === WebSocket.OPEN) socket.send('{"op":"stop"}');
    else logError("not connected: the stop did not reach the robot");
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
  function onStop(message) {
    body.dataset.stopped = message.stopped ? "true" : "false";
    $("stopped-banner").hidden = !message.stopped;
    const who = message.operator ? ` (by ${message.operator})` : "";
    setText($("stopped-reason"), `${message.hard ? "hard stop" : "stop"}${message.reason ? ": " + message.reason : ""}${who}`);
    if (wasStopped !== null && wasStopped !== message.stopped) {
      append(el("li", { class: "notice" }, message.stopped ? "Stopped" : "Resumed", message.reason ? ": " + message.reason : "", who));
    }
    wasStopped = message.stopped;
  }

  // ---- panels -------------------------------------------------------------------------------------
  $("history-load").addEventListener("click", () => send({ op: "changes", since_s: Number($("history-range").value) }));
  $("history-on-map").addEventListener("change", () => { if (!$("history-on-map").checked) scene.moves = []; requestDraw(); });
  $("corrections-load").addEventListener("click", () => send({ op: "corrections" }));
  $("panel-corrections").addEventListener("toggle", () => { if ($("panel-corrections").open) send({ op: "corrections" }); });

  function onChanges(message) {
    const list = $("history-list");
    list.replaceChildren();
    if (message.error) { list.appendChild(el("li", { class: "error" }, message.error)); return; }
    const events = message.events || [];
    if (!events.length) list.appendChild(el("li", {}, "nothing changed in that time"));
    scene.moves = [];
    for (const event of events) {
      const what = [event.time || "", event.kind, event.symbol, event.class ? `(${event.class})` : "",
        event.room ? `in ${event.room}` : "", typeof event.distance_m === "number" ? `${event.distance_m.toFixed(1)} m` : "",
        event.why || ""].filter(Boolean).join(" ");
      list.appendChild(el("li", { data: { kind: event.kind || "", symbol: event.symbol || "" } }, what));
      if (event.kind === "moved" && event.from_position && event.position) {
        scene.moves.push({ symbol: event.symbol, from: event.from_position, to: event.position });
      }
    }
    if (!$("history-on-map").checked) scene.moves = [];
    requestDraw();
  }

  function onCorrections(message) {
    const list = $("corrections-list");
    list.replaceChildren();
    if (message.error) { list.appendChild(el("li", { class: "error" }, message.error)); return; }
    const items = message.items || [];
    if (!items.length) list.appendChild(el("li", {}, "no corrections"));
    for (const item of items) {
      const li = el("li", { data: { correctionId: item.id, status: item.status } },
        `${item.id}: ${JSON.stringify(item.original)} → ${JSON.stringify(item.value)} (${item.status}${item.author ? ", " + item.author : ""})`);
      if (item.status === "active") {
        const revert = el("button", { type: "button", class: "revert", data: { correctionId: item.id } }, "Revert");
        revert.addEventListener("click", () => { revert.disabled = true; send({ op: "revert", correction_id: item.id }); });
        li.appendChild(document.createTextNode(" "));
        li.appendChild(revert);
      }
      list.appendChild(li);
    }
  }

  function onStatus(message) {
    const mirror = message.mirror || {}, database = message.database || {};
    setText($("health-sequence"), mirror.sequence ?? "–");
    setText($("health-nodes"), mirror.nodes ?? "–");
    setText($("health-lag"), typeof mirror.lag_s === "number" ? `${fmt(mirror.lag_s, 2)} s` : "–");
    setText($("health-age"), typeof mirror.age_s === "number" ? ago(mirror.age_s) : "–");
    setText($("health-error"), mirror.last_error || "none");
    $("health-error").classList.toggle("bad", Boolean(mirror.last_error));
    setText($("health-database"), database.ok ? "ok" : `unreachable${database.error ? ": " + database.error : ""}`);
    $("health-database").classList.toggle("bad", !database.ok);
  }

  // ---- server messages ----------------------------------------------------------------------------
  const handlers = {
    hello(message) {
      setText($("namespace"), message.namespace);
      body.dataset.session = session = message.session;
      try { sessionStorage.setItem("heracles.session", session); } catch (err) { /* storage may be off */ }
      body.dataset.secured = message.secured ? "true" : "false";
      // Offer only the history windows the server answers (a longer one would always be an error).
      const range = $("history-range");
      for (const option of range.options) option.disabled = Number(option.value) > message.history_max_s;
      const offered = [...range.options].filter((option) => !option.disabled);
      if (range.selectedOptions[0].disabled && offered.length) range.value = offered[offered.length - 1].value;
    },
    scene(message) {
      const outlines = (item) => item && (item.layer === "room" || item.layer === "place");
      if (message.full) { scene.items.clear(); scene.edgePairs.clear(); hullsStale = true; }
      for (const symbol of message.remove || []) {
        if (outlines(scene.items.get(symbol))) hullsStale = true;
        scene.items.delete(symbol);
      }
      for (const item of message.upsert || []) {
        if (outlines(item)) hullsStale = true;
        scene.items.set(item.symbol, item);
      }
      const edges = message.edges || {};
      for (const [a, b] of edges.remove || []) scene.edgePairs.delete(a + " " + b);
      for (const [a, b] of edges.add || []) scene.edgePairs.set(a + " " + b, [a, b]);
      layersStale = true;
      body.dataset.scene = "loaded";
      requestDraw();
    },
    robot(message) {
      scene.robot = { x: message.x, y: message.y, place: message.place };
      requestDraw();
    },
    stop: onStop,
    status: onStatus,
    stage: onStage,
    result: onResult,
    answer: onAnswer,
    object(message) {
      if (message.symbol !== scene.selected) return;
      setText($("info-class"), message.cls);
      // An object gone from the scene still has its class and when it was last seen, with the error.
      setText($("info-room"), message.error || message.room || "none");
      const seen = message.last_seen_s;  // epoch seconds; null for an operator's addition or without history
      const item = scene.items.get(message.symbol);
      setText($("info-seen"), typeof seen === "number"
        ? `${new Date(seen * 1000).toISOString().replace("T", " ").slice(0, 19)} UTC (${ago(Date.now() / 1000 - seen)})`
        : item && item.operator ? "never (added by an operator)" : "unknown");
    },
    command(message) {  // the server took a command: its id, before any stage
      const entry = entryFor(message.command_id);
      setText(entry.li.querySelector(".said"), `Command: ${message.text}`);
    },
    changes: onChanges,
    corrections: onCorrections,
    error: onError,
  };

  new ResizeObserver(resize).observe(canvas);
  resize();
  connect();
})();
