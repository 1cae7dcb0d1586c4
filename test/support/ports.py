"""Ports a test hands to a process it starts: from its worker's own block, above the kernel's ephemeral range.

A port the kernel picks (bind to 0) is free when picked but not when the process binds it a moment
later: in a parallel run another worker's server or any outgoing connection can take it first (seed 404:
``heracles up``'s console port was taken). Each xdist worker takes its ports from a block of its own
above ``ip_local_port_range`` (where neither the kernel nor DDS, whose test domains end below 57,700,
hands any out), in turn, skipping any that is bound. A worker runs one test at a time, so nothing else
of the run takes them.
"""
from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterator

#: The first port of the blocks, and each worker's block size (eight workers, then one for a run without xdist).
FIRST_PORT = 61000
BLOCK = 500


def _block() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) % 8 if worker.startswith("gw") and worker[2:].isdigit() else 8
    return range(FIRST_PORT + index * BLOCK, FIRST_PORT + (index + 1) * BLOCK)


_turns: Iterator[int] = itertools.cycle(_block())


def free_port() -> int:
    """The next port of this worker's block that nothing has bound."""
    for _ in range(BLOCK):
        port = next(_turns)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"every port of {_block()} is bound")
