"""``heracles bench console``: what the operator console's map costs on the kilometre-scale scene.

The scene (``--scale`` F: the large one times F) is mirrored into a throwaway embedded FalkorDB (or ``--db``), then:

- ``scene_read_s``: the server's whole read of the map (``map_reads.read_whole_map``);
- ``full_build_ms`` / ``full_message_mb`` / ``full_messages`` / ``full_first_kb``: the whole map as a page gets it
  (the feed's diff from nothing and its JSON as the server sends it: rooms and objects first, then the places
  a piece at a time), its size, its number of messages and the size of the first;
- ``update_read_s`` / ``update_diff_ms`` / ``update_message_bytes``: one object moved 2 m by the mirror, then the
  server's read of what changed since its last read, diff and message (what every open page receives);
- ``change_*``: the same after 1 % of the places changed (3 in 4 moved 1 m, 1 in 4 removed): the read's time, the
  places it read (``change_places_read``, against ``change_places``), the message's size;
- with Chromium (``/usr/bin/chromium`` and its driver, through Selenium, the tools extra): the page served by
  the real console server, opened in headless Chromium: ``page_first_scene_ms`` from navigation start to
  the first frame that draws the scene (rooms and objects, before the places arrive), ``page_whole_scene_ms``
  to the first frame of the whole map, ``page_scene_message_ms`` (parsing and applying the last piece),
  ``page_layers_ms`` (sorting the whole scene into what is drawn, rooms' outlines included: once per scene
  message that changes rooms or places), ``page_frame_ms`` (one more frame of the whole scene, as a pan or a
  robot message draws). Medians of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import queue
import signal
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import spark_dsg as dsg

from heracles_ros.bench.mirror import _database, _fresh_graph
from heracles_ros.bench.scene_size import add_scale_argument, scene_name
from heracles_ros.console.map_reads import read_map, read_whole_map
from heracles_ros.console.scene_feed import MapRead, SceneFeed
from heracles_ros.errors import ConfigError, HeraclesError
from heracles_ros.mirror.reconcile import Mirror

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
#: Seconds the page may take to show the whole scene, and the server to start.
PAGE_WAIT_S = 120.0
START_WAIT_S = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=("small", "large"), default="large",
                        help="synthetic scene (default: large, the kilometre-scale one with 16k places)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    add_scale_argument(parser)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measure; medians are reported")
    parser.add_argument("--no-browser", action="store_true", help="leave out the page's figures (no Chromium)")
    parser.add_argument("--no-stop", action="store_true",
                        help="leave out the STOP's figures (no dispatcher, mirror and console processes)")
    parser.add_argument("--db", default=None, metavar="URI",
                        help="database to measure on (default: a throwaway embedded FalkorDB); a graph named "
                        "bench_console_* is created and dropped")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be >= 1, got {args.repeat}")
    from heracles_ros.scene.synthetic import generate_scene

    scene = generate_scene(args.kind, args.seed, scale=args.scale)
    graph = f"bench_console_{uuid.uuid4().hex[:8]}"
    figures: dict[str, Any] = {"scene": scene_name(args.kind, args.seed, args.scale)}
    with _database(args.db) as uri, _fresh_graph(uri, graph) as store:
        Mirror(store).reconcile(scene)
        reads, builds, feed = [], [], SceneFeed()
        texts: tuple[str, ...] = ()
        for _ in range(args.repeat):
            started = time.perf_counter()
            read = read_whole_map(store, why="heracles bench console", timeout_s=120.0)
            reads.append(time.perf_counter() - started)
            started = time.perf_counter()
            feed = SceneFeed()
            feed.apply(read)
            texts = feed.full_texts()[1]
            builds.append(time.perf_counter() - started)
        messages = [json.loads(text) for text in texts]
        layers = [item["layer"] for message in messages for item in message["upsert"]]
        figures.update({
            "rooms": layers.count("room"), "places": sum(len(m["places"]["symbols"]) for m in messages),
            "objects": layers.count("object"), "place_edges": sum(len(m["edges"]["add"]) for m in messages),
            "scene_read_s": round(statistics.median(reads), 3),
            "full_build_ms": round(1000 * statistics.median(builds), 1),
            "full_message_mb": round(sum(len(text) for text in texts) / 1e6, 2),
            "full_messages": len(texts), "full_first_kb": round(len(texts[0]) / 1e3, 1),
        })
        figures.update(_one_object_moved(store, scene, feed, args.repeat))
        figures.update(_one_percent_changed(store, scene, feed))
        if args.no_stop:
            figures["stop"] = "left out (--no-stop)"
        else:
            figures.update(_stop_while_map_changes(uri, graph, scene, args.repeat))
        if args.no_browser:
            figures["page"] = "left out (--no-browser)"
        elif not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
            figures["page"] = f"left out: no {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        else:
            figures.update(_page(uri, graph, figures["objects"], args.repeat))
    return figures


def _one_object_moved(store: Any, scene: dsg.DynamicSceneGraph, feed: SceneFeed, repeat: int) -> dict[str, Any]:
    moved = dsg.DynamicSceneGraph.from_binary(scene.to_binary(include_mesh=False))
    node = next(iter(moved.get_layer(dsg.DsgLayers.OBJECTS).nodes))
    reads, diffs, sizes, upserts = [], [], [], []
    mirror = Mirror(store)
    for run in range(repeat):
        node.attributes.position = node.attributes.position + np.array([2.0 if run % 2 == 0 else -2.0, 0.0, 0.0])
        mirror.reconcile(moved)
        read, seconds = _read_changes(store, feed)
        reads.append(seconds)
        started = time.perf_counter()
        text = feed.apply(read).to_text()
        diffs.append(time.perf_counter() - started)
        sizes.append(len(text))
        upserts.append(len(json.loads(text)["upsert"]))
    return {"update_read_s": round(statistics.median(reads), 3),
            "update_diff_ms": round(1000 * statistics.median(diffs), 1),
            "update_message_bytes": int(statistics.median(sizes)), "update_items": max(upserts)}


def _one_percent_changed(store: Any, scene: dsg.DynamicSceneGraph, feed: SceneFeed) -> dict[str, Any]:
    """1 % of the places changed by the mirror (3 in 4 moved 1 m, 1 in 4 removed), then the server's read."""
    changed = dsg.DynamicSceneGraph.from_binary(scene.to_binary(include_mesh=False))
    places = sorted(changed.get_layer(3, 1).nodes, key=lambda node: node.id.value)
    picked = places[::100]
    for index, node in enumerate(picked):
        if index % 4 == 3:
            changed.remove_node(node.id.value)
        else:
            node.attributes.position = node.attributes.position + np.array([1.0, 0.0, 0.0])
    Mirror(store).reconcile(changed)
    read, seconds = _read_changes(store, feed)
    started = time.perf_counter()
    text = feed.apply(read).to_text()
    return {"change_places": len(picked), "change_places_read": len(read.changed), "change_whole": read.whole,
            "change_read_s": round(seconds, 3), "change_diff_ms": round(1000 * (time.perf_counter() - started), 1),
            "change_message_kb": round(len(text) / 1e3, 1)}


def _read_changes(store: Any, feed: SceneFeed) -> tuple[MapRead, float]:
    """The console's read of what changed since the feed's last (and how long it took)."""
    started = time.perf_counter()
    read = read_map(store, feed.mark, places_shown=feed.place_count, timeout_s=120.0)
    return read, time.perf_counter() - started


def _page(uri: str, graph: str, objects: int, repeat: int) -> dict[str, Any]:
    """The real console server (its ROS side in a namespace of its own, discovery on this machine only) and
    the page in headless Chromium: loaded once to warm the server, then ``repeat`` fresh loads measured."""
    from heracles_ros.extras import tool_library

    webdriver = tool_library("selenium.webdriver", "heracles bench console's page figures")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    firsts, wholes, messages, layers, frames = [], [], [], [], []
    with _console(uri, graph) as url, _browser(webdriver) as driver:
        driver.get(url)
        _wait_for_scene(driver, objects)
        for _ in range(repeat):
            driver.get(url)
            stats = _wait_for_scene(driver, objects)
            firsts.append(float(stats["firstSceneMs"]))
            wholes.append(float(stats["wholeSceneMs"]))
            messages.append(float(stats["sceneMessageMs"]))
            layers.append(float(stats["layersMs"]))
            frames.append(_frame_ms(driver, int(stats["frames"])))
    return {"page_first_scene_ms": round(statistics.median(firsts), 1),
            "page_whole_scene_ms": round(statistics.median(wholes), 1),
            "page_scene_message_ms": round(statistics.median(messages), 1),
            "page_layers_ms": round(statistics.median(layers), 1),
            "page_frame_ms": round(statistics.median(frames), 1)}


def _frame_ms(driver: Any, frames: int) -> float:
    """One more frame of the whole scene, as a pan or a robot message asks for (a wheel event of no zoom)."""
    driver.execute_script("document.getElementById('map').dispatchEvent("
                          "new WheelEvent('wheel', {deltaY: 0, clientX: 300, clientY: 300}))")
    deadline = time.monotonic() + PAGE_WAIT_S
    while time.monotonic() < deadline:
        stats = driver.execute_script("return Object.assign({}, document.getElementById('map-stats').dataset)")
        if int(stats["frames"]) > frames:
            return float(stats["drawMs"])
        time.sleep(0.02)
    raise HeraclesError(f"the page drew no frame within {PAGE_WAIT_S:g} s")


def _wait_for_scene(driver: Any, objects: int) -> dict[str, str]:
    deadline = time.monotonic() + PAGE_WAIT_S
    script = "return Object.assign({}, document.getElementById('map-stats').dataset)"
    while time.monotonic() < deadline:
        stats: dict[str, str] = driver.execute_script(script)
        if stats.get("objects") == str(objects) and float(stats.get("wholeSceneMs") or 0) > 0 \
                and stats.get("drawnObjects") == str(objects):
            return stats
        time.sleep(0.05)
    raise HeraclesError(f"the page did not show the scene's {objects} objects within {PAGE_WAIT_S:g} s")


@contextlib.contextmanager
def _console(uri: str, graph: str) -> Iterator[str]:
    import uvicorn

    from heracles_ros.console.app import ConsoleConfig, uvicorn_config
    from heracles_ros.console.bridge import bridge_factory

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    namespace = f"/bench_console_{os.getpid()}"
    config = ConsoleConfig(port=port, namespace=namespace, db_uri=uri, graph_name=graph)
    server = uvicorn.Server(uvicorn_config(config, bridge_factory(namespace)))
    thread = threading.Thread(target=server.run, name="bench-console", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_WAIT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise HeraclesError(f"the console's server did not start within {START_WAIT_S:g} s")
            time.sleep(0.02)
        yield config.url
    finally:
        server.should_exit = True
        thread.join(15.0)


@contextlib.contextmanager
def _browser(webdriver: Any) -> Iterator[Any]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="heracles-bench-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
                         "--no-first-run", "--disable-background-networking", "--disable-component-update",
                         f"--user-data-dir={profile}"):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=webdriver.ChromeService(str(CHROMEDRIVER)), options=options)
        try:
            driver.set_page_load_timeout(60)
            yield driver
        finally:
            driver.quit()


#: Stops measured with the map still, and per --repeat while it changes; seconds between snapshots meanwhile.
_IDLE_STOPS, _BUSY_STOPS, _SNAPSHOT_PERIOD_S = 5, 10, 1.0
#: Seconds the processes are left to settle (their first reads) before the stops with the map still.
_SETTLE_S = 3.0
#: Seconds between a page's probes of the console's loop while the map changes.
_PROBE_S = 0.1
#: Seconds a process may take to start, and a STOP or a resume to come back.
_ANSWER_S = 20.0


def _stop_while_map_changes(uri: str, graph: str, scene: dsg.DynamicSceneGraph, repeat: int) -> dict[str, Any]:
    """A page's STOP through the real processes, with the map still and while every place keeps moving."""
    import random

    from heracles_ros.ros.client_context import ClientContext
    from heracles_ros.ros.interfaces import DSG_UPDATE

    dsg_update = DSG_UPDATE.type
    places = list(scene.get_layer(3, 1).nodes)  # Hydra's mesh places: the planner's layer, the map's places
    snapshots = []
    for shift in (1.0, -1.0):  # past the history's move threshold: the console reads the map (whole: every place)
        for node in places:
            node.attributes.position = node.attributes.position + np.array([shift, 0.0, 0.0])
        snapshots.append(dsg_update(layer_contents=scene.to_binary(include_mesh=False), full_update=True))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    namespace = f"/bench_console_stop_{os.getpid()}"
    with _processes(uri, graph, namespace, places[0].id.str()) as port, \
            ClientContext(f"bench_console_{os.getpid()}") as ros:
        publisher = DSG_UPDATE.publisher(ros.node, name=f"{namespace}/dsg_update")
        with _Page.opened(port) as connection, _Page(connection) as page:
            idle = [page.stop_ms() for _ in range(_IDLE_STOPS)]
            updates_before = page.scene_messages
            busy: list[float] = []

            still = threading.Event()

            def change_the_map() -> None:
                for snapshot in itertools.cycle(snapshots):
                    publisher.publish(snapshot)
                    if still.wait(_SNAPSHOT_PERIOD_S):
                        return

            changer = threading.Thread(target=change_the_map, name="bench-map-changes", daemon=True)
            changer.start()
            try:
                page.wait_for_scene_messages(updates_before + 2)  # the mirror is taking snapshots
                with page.probing():
                    for _ in range(_BUSY_STOPS * repeat):
                        time.sleep(random.uniform(0.2, 1.0))
                        busy.append(page.stop_ms())
            finally:
                still.set()
                changer.join(10.0)
            updates = page.scene_messages - updates_before
    return {"stop_places": len(places), "stop_idle_ms": round(statistics.median(idle), 1),
            "stop_busy_ms": round(statistics.median(busy), 1), "stop_busy_max_ms": round(max(busy), 1),
            "stop_map_updates": updates, "reply_busy_max_ms": round(max(page.replies_ms), 1)}


@contextlib.contextmanager
def _processes(uri: str, graph: str, namespace: str, start_place: str) -> Iterator[int]:
    """A dispatcher (simulator), a dsg_mirror and ``heracles console`` in ``namespace``, each a process of its
    own; the console's port once it listens. Each is sent SIGINT afterwards (killed if it lingers)."""
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    database = ["-p", f"db_uri:={uri}", "-p", f"graph_name:={graph}"]
    commands = {
        "dispatcher": ["-m", "heracles_ros.nodes.dispatcher", "--ros-args", "-r", f"__ns:={namespace}", *database,
                       "-p", f"start_place:={start_place}"],
        "mirror": ["-m", "heracles_ros.nodes.dsg_mirror", "--ros-args", "-r", f"__ns:={namespace}", *database,
                   "-p", f"dsg_topic:={namespace}/dsg_update"],
        "console": ["-m", "heracles_ros.cli", "console", "--port", str(port), "--namespace", namespace, "--db", uri,
                    "--graph", graph],
    }
    started: list[subprocess.Popen[bytes]] = []
    try:
        for name, command in commands.items():
            output = subprocess.PIPE if name == "console" else subprocess.DEVNULL
            started.append(subprocess.Popen([sys.executable, *command], stdout=output, stderr=subprocess.DEVNULL))
        console = started[-1]
        assert console.stdout is not None
        listening = threading.Event()

        def announced() -> None:
            for line in console.stdout:  # type: ignore[union-attr]
                if b"heracles console: open http" in line:
                    listening.set()

        threading.Thread(target=announced, name="bench-console-output", daemon=True).start()
        if not listening.wait(START_WAIT_S):
            raise HeraclesError(f"heracles console did not listen within {START_WAIT_S:g} s")
        yield port
    finally:
        for process in started:
            process.send_signal(signal.SIGINT)
        for process in started:
            try:
                process.wait(timeout=15.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5.0)


class _Page:
    """A page's socket to the console: its STOPs timed; its scene messages counted (not parsed)."""

    def __init__(self, connection: Any):
        self._socket = connection
        self.scene_messages = 0
        self._stops: queue.Queue[tuple[float, bool]] = queue.Queue()
        self._mirror_up = threading.Event()
        self._replies: queue.Queue[float] = queue.Queue()
        self.replies_ms: list[float] = []
        self._reader = threading.Thread(target=self._read, name="bench-page", daemon=True)
        self._reader.start()

    def __enter__(self) -> _Page:
        self._next_stop(lambda stopped: not stopped)  # the dispatcher's latched state: it is up
        if not self._mirror_up.wait(PAGE_WAIT_S):
            raise HeraclesError(f"the mirror's status did not reach the page within {PAGE_WAIT_S:g} s")
        time.sleep(_SETTLE_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self._socket.close()
        self._reader.join(5.0)

    @staticmethod
    def opened(port: int) -> Any:
        """The console's socket as a page opens it (its own Origin)."""
        from websockets.sync.client import connect
        from websockets.typing import Origin

        return connect(f"ws://127.0.0.1:{port}/ws", origin=Origin(f"http://127.0.0.1:{port}"), max_size=None,
                       open_timeout=_ANSWER_S)

    @contextlib.contextmanager
    def probing(self) -> Iterator[None]:
        """For the block: every PROBE_S, a message only the console's loop answers (a cancel of no command);
        how long each answer took goes to ``replies_ms``."""
        done = threading.Event()

        def probe() -> None:
            while not done.wait(_PROBE_S):
                started = time.perf_counter()
                self._socket.send('{"op":"cancel","command_id":"bench-probe"}')
                with contextlib.suppress(queue.Empty):
                    self.replies_ms.append(1000 * (self._replies.get(timeout=_ANSWER_S) - started))

        prober = threading.Thread(target=probe, name="bench-page-probe", daemon=True)
        prober.start()
        try:
            yield
        finally:
            done.set()
            prober.join(_ANSWER_S)

    def stop_ms(self) -> float:
        """Milliseconds from sending STOP to the page holding ``stopped``; then resumed."""
        started = time.perf_counter()
        self._socket.send('{"op":"stop"}')
        stopped_at = self._next_stop(lambda stopped: stopped)
        self._socket.send('{"op":"resume","operator":"bench","reason":"heracles bench console"}')
        self._next_stop(lambda stopped: not stopped)
        return 1000 * (stopped_at - started)

    def wait_for_scene_messages(self, count: int) -> None:
        deadline = time.monotonic() + PAGE_WAIT_S
        while self.scene_messages < count:
            if time.monotonic() > deadline:
                raise HeraclesError(f"the map did not change on the page within {PAGE_WAIT_S:g} s")
            time.sleep(0.05)

    def _next_stop(self, wanted: Any) -> float:
        deadline = time.monotonic() + _ANSWER_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                when, stopped = self._stops.get(timeout=left)
            except queue.Empty:
                break
            if wanted(stopped):
                return when
        raise HeraclesError(f"the dispatcher's stop state did not reach the page within {_ANSWER_S:g} s")

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            for text in self._socket:
                if isinstance(text, str) and text.startswith('{"type":"scene"'):
                    self.scene_messages += 1
                elif (message := json.loads(text)).get("type") == "stop":
                    self._stops.put((time.perf_counter(), bool(message["stopped"])))
                elif message.get("type") == "status" and message.get("mirror") is not None:
                    self._mirror_up.set()
                elif message.get("type") == "error" and message.get("about") == "cancel":
                    self._replies.put(time.perf_counter())
