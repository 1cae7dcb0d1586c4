"""Who may use the console: loopback by default, a secret on any other address, same-origin sockets, bounded rates.

The console moves a robot, so a page on the robot's network must not be usable
by whoever finds the port: off loopback the server refuses to start without
``HERACLES_CONSOLE_SECRET``, and with a secret every request and the WebSocket
handshake carry it (``?token=`` once, then an HttpOnly cookie), compared in
constant time. A WebSocket's ``Origin`` must be the page's own, so another site
open in the operator's browser cannot drive the robot through it; on loopback the
``Host`` must name loopback too, so a site rebinding its own name to 127.0.0.1
cannot either.
"""
from __future__ import annotations

import collections
import hmac
import ipaddress
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from urllib.parse import quote, urlsplit

from heracles_ros.console.protocol import RATE_PER_S
from heracles_ros.errors import ConfigError

SECRET_ENV = "HERACLES_CONSOLE_SECRET"
COOKIE = "heracles_console"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost; anything else (0.0.0.0 included) reaches the network."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def secret_for(host: str, environ: Mapping[str, str] = os.environ) -> str:
    """The secret to require ('' = none); ConfigError for a non-loopback ``host`` without one."""
    secret = environ.get(SECRET_ENV, "")
    if not secret and not is_loopback(host):
        raise ConfigError(f"the console would be reachable from the network on {host}: set {SECRET_ENV} to a "
                          "secret (the operator opens the URL with ?token=<secret> once), or bind to 127.0.0.1")
    return secret


class Access(Enum):
    ALLOWED = "allowed"
    #: No token at all (HTTP 401).
    MISSING = "missing"
    #: A token that is not the secret (HTTP 403).
    WRONG = "wrong"


@dataclass(frozen=True)
class TokenCheck:
    access: Access
    #: The request carried the right secret in its query (the response sets the cookie).
    from_query: bool = False


def check_token(secret: str, query_token: str | None, cookie_token: str | None) -> TokenCheck:
    """The query's token, else the cookie's, against ``secret`` (constant time); no secret: always allowed."""
    if not secret:
        return TokenCheck(Access.ALLOWED)
    for token, from_query in ((query_token, True), (cookie_token, False)):
        if token:
            if hmac.compare_digest(token.encode(), secret.encode()):
                return TokenCheck(Access.ALLOWED, from_query)
            return TokenCheck(Access.WRONG)
    return TokenCheck(Access.MISSING)


def loopback_host_header(host: str | None) -> bool:
    """A request to a console on loopback names a loopback host (``127.0.0.1:8765``, ``localhost:8765``,
    ``[::1]:8765``): a page on another site whose name an attacker pointed at 127.0.0.1 (DNS rebinding) is
    same-origin with itself, not with the console, and is refused by this."""
    if not host:
        return False
    name = urlsplit(f"//{host}").hostname or ""
    return is_loopback(name)


def same_origin(origin: str | None, host: str | None) -> bool:
    """The WebSocket's Origin names the host:port the page was served from (no Origin: refused)."""
    if not origin or not host:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


def session_cookie(secret: str) -> str:
    """The Set-Cookie value that authenticates the page's later requests and its WebSocket."""
    return f"{COOKIE}={quote(secret, safe='')}; HttpOnly; SameSite=Strict; Path=/"


class RateLimit:
    """At most ``per_s`` messages in any second (a sliding window over the last ``per_s`` arrivals)."""

    def __init__(self, per_s: int = RATE_PER_S):
        self.per_s = per_s
        self._arrivals: collections.deque[float] = collections.deque(maxlen=per_s)

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if len(self._arrivals) == self.per_s and now - self._arrivals[0] < 1.0:
            return False
        self._arrivals.append(now)
        return True
