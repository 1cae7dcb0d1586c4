"""The console's state between the ROS side and the open pages: tabs, the map's feed, the latest status.

Runs on the web server's asyncio loop, and keeps it free: every blocking call (the
database, the bridge's services) goes to a thread, the stop to a pool of its own so
it never waits behind an ask or a confirm, questions (a model's turns: minutes at
worst) to another; the map's read (what changed since the last, :mod:`.map_reads`),
diff and encoding to a thread too, and the map as of a past time to a small pool, one read
per tab at a time. Each message is encoded once, however many tabs get it.
Each tab has a bounded outbox that its writer drains, so a slow page never holds up
the others and a page that stops reading is cut off. A tab that goes away has its
commands cancelled after ``client_lost_s``, as the language server does for a client
that leaves the ROS graph. ROS threads hand messages in through ``on_stop``,
``on_robot``, ``on_mirror`` and :meth:`ConsoleHub.post` (built by :mod:`.ros_messages`);
every message a tab gets is one of :mod:`.protocol`'s.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from heracles_ros.console import protocol
from heracles_ros.console.as_of_view import read_as_of
from heracles_ros.console.map_reads import read_map
from heracles_ros.console.object_details import read_object
from heracles_ros.console.protocol import (
    CLIENT_LOST_S,
    ApproveOp,
    AskOp,
    CancelOp,
    ChangesOp,
    ChooseOp,
    CommandOp,
    CorrectionsOp,
    DatabaseHealth,
    ObjectOp,
    PageOp,
    RefuseOp,
    ResumeOp,
    RevertOp,
    SceneAtOp,
    ServerMessage,
    StopOp,
)
from heracles_ros.console.ros_messages import MirrorReport
from heracles_ros.console.scene_feed import MapRead, SceneFeed
from heracles_ros.errors import ConsoleMessageError, HeraclesError
from heracles_ros.graphdb.store import GraphStore

log = logging.getLogger(__name__)

#: Seconds between two reads of the scene (at most), and between two status messages.
REFRESH_S = 1.0
#: Seconds one scene read may take.
SCENE_TIMEOUT_S = 60.0
#: Questions in flight at once (more wait their turn; the language server answers one model query per slot).
ASK_THREADS = 4
#: Reads of the map as of a past time in flight at once, all tabs together (one per tab; more wait their turn).
AS_OF_THREADS = 2

#: Seconds a page asking for a session still held by an open tab waits for that tab to close (a reloaded page
#: can reach the server before its old socket's close does); a session still held then stays with its tab.
RESUME_WAIT_S = 1.0

#: Messages, and characters (bytes: messages are ASCII), waiting for one page before it counts as fallen
#: behind: its socket is closed with the reason, and the page, reconnecting, gets the whole map again. A full
#: map of 16k places is ~2.2 MB, a walk's progress a few dozen small messages a second.
OUTBOX_MESSAGES = 1000
OUTBOX_BYTES = 16 * 1024 * 1024
#: Why every tab ends when the console closes (its close code is CloseCode.GOING_AWAY).
CLOSING = "the console is closing"


class Tab:
    """One open page: its session (the conversation its commands and questions belong to) and its outbox.

    The outbox holds encoded messages and is bounded: a page that does not read (a stalled browser, a slow
    link, a socket nobody reads) would otherwise hold every message since in the console's memory. Urgent ones
    (the stop state) go ahead of everything waiting but the first message (hello): a page on a slow link shows
    STOP's effect without waiting for megabytes of map before it."""

    def __init__(self, session: str):
        self.session = session
        self._outbox: collections.deque[str] = collections.deque()
        self._urgent: collections.deque[str] = collections.deque()
        self._first_taken = False
        self._waiting_bytes = 0
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._closed = asyncio.Event()
        #: Why the socket is to be closed ('' while the page is served): it fell behind, or the console closes.
        self.ended = ""
        #: The tab has its whole map: what is broadcast from now on is for it too.
        self.joined = False
        #: A read of the map as of a past time runs for this tab (a second one is refused meanwhile).
        self.reading_as_of = False

    def send(self, message: ServerMessage) -> None:
        self.send_text(protocol.encode(message))

    def send_text(self, text: str, *, urgent: bool = False) -> None:
        if self.ended:
            return
        waiting = len(self._outbox) + len(self._urgent)
        if waiting >= OUTBOX_MESSAGES or self._waiting_bytes + len(text) > OUTBOX_BYTES:
            self.end(f"this page fell behind ({waiting} messages, {self._waiting_bytes / 1e6:.1f} MB "
                     "not read); reconnecting gets the whole map")
            return
        (self._urgent if urgent else self._outbox).append(text)
        self._waiting_bytes += len(text)
        self._ready.set()

    def end(self, reason: str) -> None:
        """Drop what waits and send nothing more; the socket is to be closed with ``reason``."""
        if not self.ended:
            self.ended = reason
            self._outbox.clear()
            self._urgent.clear()
            self._waiting_bytes = 0
            self._ready.set()
            self._ended.set()

    async def wait_ended(self) -> None:
        await self._ended.wait()

    def close(self) -> None:
        """The page went away and the console has let go of the tab."""
        self.end("closed")
        self._closed.set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    @property
    def waiting_bytes(self) -> int:
        return self._waiting_bytes

    async def next(self) -> str | None:
        """The next message for the page, once there is one; None once the tab has ended."""
        while not (self._outbox or self._urgent):
            if self.ended:
                return None
            self._ready.clear()
            await self._ready.wait()
        lane = self._urgent if self._urgent and (self._first_taken or not self._outbox) else self._outbox
        self._first_taken = True
        text = lane.popleft()
        self._waiting_bytes -= len(text)
        return text


class ConsoleHub:
    """See the module's docstring. ``bridge`` is a :class:`~heracles_ros.console.bridge.ConsoleBridge`."""

    def __init__(self, namespace: str, secured: bool, open_database: Callable[[], GraphStore], *,
                 client_lost_s: float = CLIENT_LOST_S):
        self.namespace = namespace
        self.secured = secured
        self.client_lost_s = client_lost_s
        self.bridge: Any = None
        self.feed = SceneFeed()
        self._open_database = open_database
        self._store: GraphStore | None = None
        self._database: DatabaseHealth = {"ok": False, "error": "not read yet"}
        self._tabs: dict[str, Tab] = {}  # the open tabs by session
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="console-stop")
        self._ask_pool = concurrent.futures.ThreadPoolExecutor(max_workers=ASK_THREADS,
                                                               thread_name_prefix="console-ask")
        self._as_of_pool = concurrent.futures.ThreadPoolExecutor(max_workers=AS_OF_THREADS,
                                                                 thread_name_prefix="console-as-of")
        self._closing = asyncio.Event()
        self._scene_due = True
        self._mirror: MirrorReport | None = None
        #: The last stop state and robot position as sent, for a tab that opens later.
        self._last_stop: str | None = None
        self._last_robot: str | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        #: Held from a map change's diff to its broadcast, and from a new tab's full map to its joining: a tab
        #: gets the map as of some change and then every diff after it.
        self._scene_lock = asyncio.Lock()
        self._lost_timers: dict[str, asyncio.TimerHandle] = {}

    # -- life -------------------------------------------------------------------------------------------------
    async def start(self, make_bridge: Callable[[ConsoleHub], Any]) -> None:
        self._loop = asyncio.get_running_loop()
        self.bridge = await asyncio.to_thread(make_bridge, self)
        self._refresher = asyncio.create_task(self._refresh())

    async def close(self) -> None:
        self._closing.set()
        for tab in list(self._tabs.values()):
            tab.end(CLOSING)
        for timer in self._lost_timers.values():
            timer.cancel()
        if self._refresher is not None:
            await self._refresher
        if self.bridge is not None:
            await asyncio.to_thread(self.bridge.close)
        for pool in (self._stop_pool, self._ask_pool, self._as_of_pool):
            pool.shutdown(wait=False, cancel_futures=True)
        if self._store is not None:
            self._store.close()

    # -- from ROS threads -------------------------------------------------------------------------------------
    def on_stop(self, message: Mapping[str, Any]) -> None:
        self._threadsafe(self._stop_changed, message)

    def on_robot(self, message: Mapping[str, Any]) -> None:
        self._threadsafe(self._robot_moved, message)

    def on_mirror(self, report: MirrorReport) -> None:
        self._threadsafe(self._mirror_reported, report)

    def post(self, session: str, message: Mapping[str, Any]) -> None:
        """To the page that holds ``session`` when the message arrives (dropped while none does)."""
        self._threadsafe(self._to_session, session, message)

    def _to_session(self, session: str, message: Mapping[str, Any]) -> None:
        if (tab := self._tabs.get(session)) is not None:
            tab.send_text(protocol.encode(message))

    def _threadsafe(self, call: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between: the console is going away
                loop.call_soon_threadsafe(call, *args)

    def _stop_changed(self, message: Mapping[str, Any]) -> None:
        self._last_stop = protocol.encode(message)
        for tab in self._tabs.values():  # ahead of anything waiting, a map included; a joining tab too
            tab.send_text(self._last_stop, urgent=True)

    def _robot_moved(self, message: Mapping[str, Any]) -> None:
        self._last_robot = protocol.encode(message)
        self._broadcast_text(self._last_robot)

    def _mirror_reported(self, report: MirrorReport) -> None:
        if self._mirror is None or report.revision != self._mirror.revision:
            self._scene_due = True
        self._mirror = report

    # -- tabs -----------------------------------------------------------------------------------------------
    async def open_tab(self, resume: str = "") -> Tab:
        """A new tab with hello and the last stop state in its outbox; :meth:`join` sends it the map.

        ``resume``: the session of a tab that went away less than client_lost_s ago (a page reconnecting, or
        reloaded): the new tab takes it over, with its commands, which are then not cancelled. Any other
        value (an open tab's session, one long gone) gets a new session."""
        if (holder := self._tabs.get(resume)) is not None:  # a reload: the old socket may not have closed yet
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(holder.wait_closed(), RESUME_WAIT_S)
        if (timer := self._lost_timers.pop(resume, None)) is not None:
            timer.cancel()
            session = resume
        else:
            session = uuid.uuid4().hex[:12]
        tab = Tab(session)
        self._tabs[session] = tab  # taken at once: no other page can resume it meanwhile
        tab.send(protocol.hello(tab.session, self.namespace, self.secured))
        if self._last_stop is not None:
            tab.send_text(self._last_stop, urgent=True)
        return tab

    async def join(self, tab: Tab) -> None:
        """The whole map to a tab (rooms and objects, the last robot position, then the places a piece at a time),
        then every change after it. Runs beside the tab's reader: its STOP is read while the map is encoded."""
        try:
            async with self._scene_lock:
                tab.send_text(await asyncio.to_thread(self.feed.head_text))  # the page draws these at once
                if self._last_robot is not None:
                    tab.send_text(self._last_robot)
                _, pieces = await asyncio.to_thread(self.feed.full_texts)
                for piece in pieces[1:]:
                    tab.send_text(piece)
                tab.joined = True
        except Exception:  # a bug: the page is cut off (reconnecting asks again), the log has the trace
            log.exception("the map could not be sent to a console tab")
            tab.end("the map could not be sent; reconnecting gets the whole map")

    def close_tab(self, tab: Tab) -> None:
        """The page went away: nothing more for it, and its commands cancelled after client_lost_s unless a page
        resumes its session first."""
        if self._tabs.get(tab.session) is tab:
            del self._tabs[tab.session]
            if self.client_lost_s > 0 and self._loop is not None and not self._closing.is_set():
                self._lost_timers[tab.session] = self._loop.call_later(self.client_lost_s, self._tab_lost,
                                                                       tab.session)
        tab.close()

    def _tab_lost(self, session: str) -> None:
        self._lost_timers.pop(session, None)
        if self.bridge is None or self._closing.is_set():
            return
        if cancelled := self.bridge.cancel_session(session):
            log.warning("a console tab went away %g s ago: cancelled its commands %s", self.client_lost_s,
                        ", ".join(cancelled))

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` reports: the console's node on the ROS graph, open tabs and commands running."""
        bridge = self.bridge
        return {"node": bridge.node_name if bridge is not None else "", "tabs": len(self._tabs),
                "commands": len(bridge.running()) if bridge is not None else 0}

    def broadcast(self, message: ServerMessage) -> None:
        self._broadcast_text(protocol.encode(message))

    def _broadcast_text(self, text: str) -> None:
        for tab in self._tabs.values():
            if tab.joined:  # a tab still getting its whole map gets what follows it, not what precedes it
                tab.send_text(text)

    # -- the map and the health panel ------------------------------------------------------------------------
    async def _refresh(self) -> None:
        """Re-read the scene when the mirror says it changed (at most every REFRESH_S), send the status."""
        while not self._closing.is_set():
            if self._scene_due:
                self._scene_due = False
                await self._read_scene()
            self.broadcast(protocol.status(self._mirror.to_json() if self._mirror else None, self._database))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._closing.wait(), REFRESH_S)

    async def _read_scene(self) -> None:
        """What changed since the last read (:mod:`.map_reads`), diffed and encoded in a worker thread, to every
        page."""
        try:
            store = await self._database_store()
            read = await asyncio.to_thread(read_map, store, self.feed.mark, places_shown=self.feed.place_count,
                                           timeout_s=SCENE_TIMEOUT_S)
        except HeraclesError as exc:
            self._database = {"ok": False, "error": str(exc)}
            self._scene_due = True  # read again once it answers
            return
        self._database = {"ok": True, "error": ""}
        if not read.settled:  # a reconcile overlapped it: its events may not all have been there yet
            self._scene_due = True
        async with self._scene_lock:
            text = await asyncio.to_thread(self._scene_change, read)
            if text:
                self._broadcast_text(text)

    def _scene_change(self, read: MapRead) -> str:
        """In a worker thread: the diff to what ``read`` found, as wire text ('' when nothing changed)."""
        diff = self.feed.apply(read)
        return "" if diff.empty else diff.to_text()

    async def _database_store(self) -> GraphStore:
        """The store, opened on first use (one, however many reads ask for it at once)."""
        async with self._opening:
            if self._store is None:
                self._store = await asyncio.to_thread(self._open_database)
        return self._store

    # -- a page's message --------------------------------------------------------------------------------------
    async def handle(self, tab: Tab, raw: str | bytes) -> None:
        """Parse and act on one page message; any error goes back to that page as an ``error`` message."""
        about = ""
        try:
            op = protocol.parse_op(raw)
            about = op.op_name
            await self._act(tab, op)
        except ConsoleMessageError as exc:
            tab.send(protocol.error(str(exc), exc.about))
        except HeraclesError as exc:
            tab.send(protocol.error(str(exc), about))
        except Exception as exc:  # a bug must not end the tab silently: the page is told, the log has the trace
            log.exception("console op %r failed", about)
            tab.send(protocol.error(f"internal error: {type(exc).__name__}: {exc}", about))

    async def _act(self, tab: Tab, op: PageOp) -> None:
        bridge = self.bridge
        if isinstance(op, StopOp):
            loop = asyncio.get_running_loop()
            success, message = await loop.run_in_executor(self._stop_pool, bridge.stop)
            if not success:
                tab.send(protocol.error(message, "stop"))
        elif isinstance(op, ResumeOp):
            success, message = await asyncio.to_thread(bridge.resume, op.operator, op.reason)
            if not success:
                tab.send(protocol.error(message, "resume"))
        elif isinstance(op, CommandOp):
            self._command(tab, op.text, op.execute)
        elif isinstance(op, ChooseOp):
            instruction = bridge.instruction_of(op.command_id)
            if instruction is None:
                raise ConsoleMessageError(f"choose: no command {op.command_id!r} of this console", about="choose")
            self._command(tab, f"{instruction} (I mean {op.symbol})", True)
        elif isinstance(op, (ApproveOp, RefuseOp)):
            name = "approve" if isinstance(op, ApproveOp) else "refuse"
            success, message = await asyncio.to_thread(bridge.confirm, op.command_id, name == "approve")
            if not success:
                tab.send(protocol.error(message, name))
        elif isinstance(op, CancelOp):
            if not bridge.cancel(op.command_id):
                tab.send(protocol.error(f"no command {op.command_id!r} is running", "cancel"))
        elif isinstance(op, AskOp):
            loop = asyncio.get_running_loop()
            reply = await loop.run_in_executor(self._ask_pool, bridge.ask, op.text, tab.session)
            self._to_session(tab.session, protocol.answer(op.request_id, reply.answer or reply.clarification,
                                                          reply.explanation, reply.error))
        elif isinstance(op, ObjectOp):
            store = await self._database_store()
            details = await asyncio.to_thread(read_object, store, op.symbol)
            tab.send(details.to_message())
        elif isinstance(op, SceneAtOp):
            await self._scene_at(tab, op.ago_s)
        elif isinstance(op, ChangesOp):
            events = await asyncio.to_thread(bridge.changes, op.since_s)
            tab.send(protocol.changes(events))
        elif isinstance(op, RevertOp):
            await asyncio.to_thread(bridge.revert, op.correction_id)
            await self._act(tab, CorrectionsOp())
        elif isinstance(op, CorrectionsOp):
            items = await asyncio.to_thread(bridge.corrections)
            tab.send(protocol.corrections(items))

    async def _scene_at(self, tab: Tab, ago_s: float) -> None:
        """The objects as of ``ago_s`` seconds ago, marked against the map the tab has now (one read at a time)."""
        if tab.reading_as_of:
            raise ConsoleMessageError("scene_at: this page's last as-of read has not been answered yet; ask again "
                                      "once it is", about="scene_at")
        tab.reading_as_of = True
        try:
            store = await self._database_store()
            loop = asyncio.get_running_loop()
            tab.send(await loop.run_in_executor(self._as_of_pool, read_as_of, store, ago_s, self.feed.items()))
        finally:
            tab.reading_as_of = False

    def _command(self, tab: Tab, text: str, execute: bool) -> None:
        """Start it; the page gets its id at once (to cancel it before its first stage)."""
        session = tab.session
        command_id = self.bridge.command(text, session=session, execute=execute,
                                         emit=lambda message: self.post(session, message), locate=self._locate)
        tab.send(protocol.command(command_id, text))

    def _locate(self, symbol: str) -> tuple[float, float] | None:
        return self.feed.position(symbol)
