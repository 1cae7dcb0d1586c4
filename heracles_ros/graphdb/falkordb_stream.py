"""Read a FalkorDB query reply row by row and stop at a cap, so a huge result never fills memory.

redis-py reads a whole reply into Python objects before anyone can look at
it: ``UNWIND range(1,3000000) AS x RETURN x`` cost 2.3 GB in the asking
process. Here the query goes over a socket of its own and the reply (RESP2,
FalkorDB's compact form: header, rows, statistics) is parsed one row at a
time; the rows array's length gives the total at once, and after ``max_rows``
rows or ``max_bytes`` bytes the socket is closed, leaving the rest unread.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import IO, Any, cast

from redis._parsers.base import BaseParser


class ReplyTooLarge(Exception):
    """The byte budget ran out inside the header or a row."""


@dataclass
class RawReply:
    """The reply's header, the rows read (still in compact form), and how many the server had."""

    header: list[Any]
    rows: list[Any]
    total: int
    #: True when the byte budget (not the row cap) stopped the reading.
    bytes_exhausted: bool = False


def encode_command(*args: str | int) -> bytes:
    """One Redis command in RESP2."""
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def run_capped(
    address: tuple[str, int],
    command: list[str | int],
    *,
    password: str | None,
    timeout_s: float,
    max_rows: int,
    max_bytes: int,
) -> RawReply:
    """Send ``command`` (a GRAPH.RO_QUERY in compact form) and read at most ``max_rows`` rows.

    Raises redis's ResponseError (and subclasses) for the server's errors and OSError (socket.timeout included)
    for connection problems, so the caller translates them like any other reply.
    """
    with socket.create_connection(address, timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        stream = cast(IO[bytes], sock.makefile("rb", buffering=1 << 16))
        reader = _Reader(stream, max_bytes)
        if password:
            sock.sendall(encode_command("AUTH", password))
            reader.value()
        sock.sendall(encode_command(*command))
        return reader.reply(max_rows)


class _Reader:
    def __init__(self, stream: IO[bytes], max_bytes: int):
        self.stream = stream
        self.left = max_bytes

    def _line(self) -> bytes:
        line = self.stream.readline(self.left + 2)
        if not line.endswith(b"\r\n"):
            if not line:
                raise ConnectionError("the server closed the connection mid-reply")
            raise ReplyTooLarge
        self.left -= len(line)
        return line[:-2]

    def _kind(self) -> tuple[bytes, bytes]:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            # redis-py's own mapping: "ERR ..." -> ResponseError, "READONLY ..." -> ReadOnlyError, ...
            raise BaseParser.parse_error(rest.decode(errors="replace"))
        return kind, rest

    def value(self) -> Any:
        kind, rest = self._kind()
        if kind in (b"+", b":"):
            return int(rest) if kind == b":" else rest
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            if size + 2 > self.left:
                raise ReplyTooLarge
            data = self.stream.read(size + 2)
            self.left -= len(data)
            return data[:-2]
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self.value() for _ in range(size)]
        raise ConnectionError(f"unexpected reply from the server: {kind + rest!r}"[:200])

    def reply(self, max_rows: int) -> RawReply:
        kind, rest = self._kind()
        if kind != b"*":
            raise ConnectionError(f"unexpected reply from the server: {kind + rest!r}"[:200])
        if int(rest) < 3:
            return RawReply([], [], 0)  # statistics only: the query returns nothing
        try:
            header = self.value()
        except ReplyTooLarge:
            return RawReply([], [], 0, bytes_exhausted=True)
        kind, rest = self._kind()
        total = int(rest)
        rows: list[Any] = []
        try:
            while len(rows) < min(total, max_rows):
                rows.append(self.value())
        except ReplyTooLarge:
            return RawReply(header, rows, total, bytes_exhausted=True)
        if len(rows) == total:
            self.value()  # the statistics; a run-time error arrives here instead, and is raised
        return RawReply(header, rows, total)
