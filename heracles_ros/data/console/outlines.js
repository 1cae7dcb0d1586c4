// Rooms' outlines on the map. A room is known by its centre only: its outline is the hull of the places nearer
// to it than to any other room's centre, widened by half a metre (a room without places gets a 2 m disc).

// Each room gets `hull` ([[x, y], ...] or null) and `width` (metres across: its name is drawn only where it
// fits); places: x, y, x, y, ... of the places.
export function outlineRooms(rooms, places) {
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
    room.width = Math.max(...xs) - Math.min(...xs);
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
