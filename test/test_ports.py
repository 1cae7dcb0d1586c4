"""The tests' ports: each worker's own block above the kernel's ephemeral range, bound ones skipped."""
from __future__ import annotations

import socket
from pathlib import Path

from support import ports


def test_ports_come_from_the_workers_block_above_the_ephemeral_range_and_skip_bound_ones() -> None:
    low, high = (int(value) for value in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    block = ports._block()
    first = ports.free_port()
    assert first in block and first > high and low < high
    with socket.socket() as held:
        held.bind(("127.0.0.1", first + 1 if first + 1 in block else block.start))
        taken = held.getsockname()[1]
        picked = [ports.free_port() for _ in range(5)]
    assert taken not in picked and len(set(picked)) == 5 and all(port in block for port in picked)
