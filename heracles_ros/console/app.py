"""The console's web server: a starlette application run by uvicorn.

Routes: ``/`` (the page), ``/static/<file>`` (its assets, shipped in
``heracles_ros/data/console/``: nothing from a CDN), ``/healthz`` and the
WebSocket ``/ws``. The secret gate (:mod:`.security`) wraps every route; the
WebSocket also checks its Origin, and uvicorn closes a socket whose message
passes 16 KiB with 1009 (docs/console.md, "Wire protocol", has every close code).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from heracles_ros.console import protocol
from heracles_ros.console.hub import CLOSING, ConsoleHub, Tab
from heracles_ros.console.protocol import CLIENT_LOST_S, MAX_MESSAGE_BYTES, CloseCode
from heracles_ros.console.security import (
    COOKIE,
    Access,
    RateLimit,
    check_token,
    is_loopback,
    loopback_host_header,
    same_origin,
    secret_for,
    session_cookie,
)
from heracles_ros.errors import ConfigError, HeraclesError
from heracles_ros.graphdb.store import GraphStore

log = logging.getLogger(__name__)

#: The page and its assets.
STATIC_DIR = Path(__file__).resolve().parents[1] / "data" / "console"
#: A Host header that may go into the page's content security policy as it is.
_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d+)?|\[[0-9A-Fa-f:.]+\](:\d+)?")
#: Seconds uvicorn gives open sockets to close when the console ends.
GRACEFUL_S = 2


@dataclass(frozen=True)
class ConsoleConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    namespace: str = "/spot"
    db_uri: str = "embedded"
    graph_name: str = "heracles"
    #: The secret every request must carry ('' = none; only allowed on loopback, see security.secret_for).
    secret: str = ""
    static_dir: Path = STATIC_DIR
    #: Seconds a tab that went away leaves its commands running before they are cancelled (0: never).
    client_lost_s: float = CLIENT_LOST_S

    @property
    def url(self) -> str:
        """What the operator opens (with the token when a secret is set; this machine's name for 0.0.0.0 / ::)."""
        host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        token = f"?token={quote(self.secret, safe='')}" if self.secret else ""
        return f"http://{host}:{self.port}/{token}"


def create_app(config: ConsoleConfig, make_bridge: Callable[[ConsoleHub], Any]) -> ASGIApp:
    """The application; ``make_bridge(hub)`` builds the ROS side when the server starts (in a thread)."""
    hub = ConsoleHub(config.namespace, bool(config.secret), lambda: _open_database(config),
                     client_lost_s=config.client_lost_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await hub.start(make_bridge)
        try:
            yield
        finally:
            await hub.close()

    async def index(_: Request) -> Response:
        page = config.static_dir / "index.html"
        if not page.is_file():
            return PlainTextResponse(f"the console's page is not installed ({page})", status_code=500)
        return FileResponse(page, headers={"Cache-Control": "no-store"})

    async def healthz(_: Request) -> Response:
        return JSONResponse({"ok": True, **hub.health()})

    async def tab_socket(websocket: WebSocket) -> None:
        if not same_origin(websocket.headers.get("origin"), websocket.headers.get("host")):
            await websocket.close(code=CloseCode.REFUSED)  # before accept: uvicorn answers the handshake with 403
            return
        await websocket.accept()
        await _serve_tab(hub, websocket)

    routes = [
        Route("/", index),
        Route("/healthz", healthz),
        WebSocketRoute("/ws", tab_socket),
        Mount("/static", app=StaticFiles(directory=config.static_dir, check_dir=False), name="static"),
    ]
    app = PageHeaders(Starlette(routes=routes, lifespan=lifespan))
    return SecretGate(app, config.secret, loopback=is_loopback(config.host))


async def _serve_tab(hub: ConsoleHub, websocket: WebSocket) -> None:
    """One tab: a reader takes its messages (rate-limited), a writer drains its outbox. When the page goes away
    the tab ends; when the server ends it (the page fell behind, the console closes) or a send fails, the socket
    is closed with the reason (within CLOSE_S: a socket nobody reads takes no close frame, and is dropped):
    a page never shows "connected" over a dead stream."""
    tab = await hub.open_tab(resume=websocket.query_params.get("session", ""))
    reader = asyncio.create_task(_read(hub, tab, websocket))
    writer = asyncio.create_task(_write(tab, websocket))
    joining = asyncio.create_task(hub.join(tab))  # the map, while the page's messages are read
    ended = asyncio.create_task(tab.wait_ended())
    try:
        done, _ = await asyncio.wait({reader, writer, ended}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        why = tab.ended
        hub.close_tab(tab)
        for task in (reader, writer, joining, ended):
            task.cancel()
        await asyncio.gather(reader, writer, joining, ended, return_exceptions=True)
    if reader in done:
        return  # the page went away
    code, reason = _close(why)
    log.warning("closing a console tab (session %s): %s", tab.session, reason)
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(websocket.close(code=code, reason=reason[:_REASON_MAX]), CLOSE_S)


#: Seconds the server waits to send a close frame to a page it ends (one that does not read by then gets none).
CLOSE_S = 10.0
#: A close frame's reason is at most 123 bytes.
_REASON_MAX = 120


def _close(why: str) -> tuple[CloseCode, str]:
    """The close code and reason for a tab the server ends (``why``: Tab.ended, '' when a send failed)."""
    if not why:
        return CloseCode.SEND_FAILED, "the server could not send a message"
    if why == CLOSING:
        return CloseCode.GOING_AWAY, why
    return CloseCode.TRY_AGAIN, why  # it fell behind: reconnecting gets the whole map


async def _read(hub: ConsoleHub, tab: Tab, websocket: WebSocket) -> None:
    """Until the page goes away: each message handled in a task of its own (a stop never waits behind another)."""
    limit = RateLimit()
    handling: set[asyncio.Task[None]] = set()
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text") if message.get("text") is not None else message.get("bytes")
            if raw is None:
                continue
            if not limit.allow():
                tab.send(protocol.error(f"more than {limit.per_s} messages per second: dropped", ""))
                continue
            task = asyncio.create_task(hub.handle(tab, raw))
            handling.add(task)
            task.add_done_callback(handling.discard)


async def _write(tab: Tab, websocket: WebSocket) -> None:
    """Until the tab ends (returns) or a send fails (raises)."""
    while (text := await tab.next()) is not None:
        await websocket.send_text(text)


def _open_database(config: ConsoleConfig) -> GraphStore:
    """The scene's store, read-only where the backend offers it (the embedded read replica), as the language
    server opens its query store."""
    from heracles_ros.graphdb import open_store

    try:
        return open_store(config.db_uri, graph=config.graph_name, timeout_s=10.0, read_replica=True)
    except HeraclesError as exc:
        log.warning("no read replica (%s); the console reads the main database", exc)
        return open_store(config.db_uri, graph=config.graph_name, timeout_s=10.0)


class PageHeaders:
    """Every HTTP response says what the page may do: its own scripts, styles and socket only (a class name an
    operator typed as ``<img onerror=...>`` could run nothing even if it reached the page as markup), never
    inside another site's frame (no clicking Approve through a disguise), no referrer (the URL may carry the
    secret)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = HTTPConnection(scope).headers.get("host", "")
        sockets = f" ws://{host} wss://{host}" if _HOST.fullmatch(host) else ""  # 'self' alone, for old browsers
        policy = (f"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                  f"connect-src 'self'{sockets}; frame-ancestors 'none'; base-uri 'none'; "
                  "form-action 'none'; object-src 'none'")
        extra = [(b"content-security-policy", policy.encode("latin-1")), (b"x-frame-options", b"DENY"),
                 (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SecretGate:
    """Every HTTP request and WebSocket handshake carries the secret (``?token=`` or the cookie) when one is set,
    and on loopback names a loopback host (:func:`~heracles_ros.console.security.loopback_host_header`).

    A right ``?token=`` on an HTTP request sets the cookie, so the page's later requests and its WebSocket
    need no token in their URL. Missing: 401; wrong: 403 (a WebSocket is refused with 403 either way).
    """

    def __init__(self, app: ASGIApp, secret: str, *, loopback: bool):
        self.app = app
        self.secret = secret
        self.loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        if self.loopback and not loopback_host_header(connection.headers.get("host")):
            await self._refuse(scope, receive, send, 403, "403: this console answers only to a loopback host name")
            return
        if not self.secret:
            await self.app(scope, receive, send)
            return
        cookie = connection.cookies.get(COOKIE)
        check = check_token(self.secret, connection.query_params.get("token"),
                            unquote(cookie) if cookie else None)
        if check.access is not Access.ALLOWED:
            status = 401 if check.access is Access.MISSING else 403
            await self._refuse(scope, receive, send, status,
                               f"{status}: this console needs its secret (open the URL with ?token=...)")
            return
        if not check.from_query or scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = session_cookie(self.secret).encode("latin-1")
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, text: str) -> None:
        """An HTTP error, or a WebSocket handshake refused (uvicorn answers it with 403)."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": CloseCode.REFUSED, "reason": ""})
        else:
            await PlainTextResponse(text, status_code=status)(scope, receive, send)


def serve(config: ConsoleConfig, make_bridge: Callable[[ConsoleHub], Any], announce: Callable[[], None]) -> None:
    """Run until SIGINT/SIGTERM; ``announce()`` once it listens. ConfigError before binding off loopback without a
    secret, and when it cannot start (a port in use: uvicorn logs why)."""
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, announcing itself once bound, and ending on SIGINT/SIGTERM with exit status 0
        (uvicorn re-raises the signal after its shutdown, which a process runner such as ``heracles up`` reads
        as a crash)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                announce()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            handlers = {sig: signal.signal(sig, lambda *_: setattr(self, "should_exit", True))
                        for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)

    secret_for(config.host, {"HERACLES_CONSOLE_SECRET": config.secret})
    try:
        Server(uvicorn_config(config, make_bridge)).run()
    except SystemExit as exc:  # uvicorn's startup failure (a port in use, a ROS side that could not start)
        raise ConfigError(f"the console did not start on {config.host}:{config.port} (the error above says why)"
                          ) from exc


def uvicorn_config(config: ConsoleConfig, make_bridge: Callable[[ConsoleHub], Any]) -> Any:
    """uvicorn's settings: the websockets protocol with the 16 KiB cap, a bounded graceful shutdown."""
    import uvicorn

    return uvicorn.Config(create_app(config, make_bridge), host=config.host, port=config.port,
                          ws="websockets-sansio", ws_max_size=MAX_MESSAGE_BYTES, ws_ping_interval=20.0,
                          log_level="warning", timeout_graceful_shutdown=GRACEFUL_S, lifespan="on")
