"""Fuzz the snapshot decoder in a process of its own and report its peak memory per payload.

Run as ``python -m support.decode_fuzz EXAMPLES FACTOR`` (test/ on the path): it decodes, with one
:class:`SnapshotDecoder` that already holds a graph as the mirror's does, every real payload
(the 75 KB synthetic scene, the rich scene with a mesh) with each length field made huge, with
each field made just too long, cut at many points, and then EXAMPLES random mutations drawn by
Hypothesis. Before each decode the peak resident size is reset (``/proc/self/clear_refs``), so
each figure is what that payload alone cost in memory (file-backed pages, code run for the first
time, left out). Prints one JSON object: per kind of payload, the
outcomes, the most memory each took, and the decodes that took more than FACTOR times their
payload's size; any exception other than SceneError ends it (a traceback, status 1).
"""
from __future__ import annotations

import json
import re
import struct
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heracles_ros.errors import SceneError
from heracles_ros.scene.io import SnapshotDecoder
from heracles_ros.scene.synthetic import generate_scene
from support.rich_scene import rich_scene

_LENGTH_TAGS = (0xDB, 0xDD)


def _memory_kb() -> tuple[int, int]:
    """Peak resident size, and the part of the resident size that is files (libraries' code and data)."""
    with open("/proc/self/status") as status:
        fields = dict(re.findall(r"^(\w+):\s+(\d+) kB", status.read(), re.MULTILINE))
    return int(fields["VmHWM"]), int(fields["RssFile"]) + int(fields["RssShmem"])


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


#: What a decode may cost whatever its payload: Python's allocator takes memory in pools of 16 KiB (a
#: refused payload was seen to cost up to 60 KiB: the message, the walk's few lists and sets).
SLACK_BYTES = 128 * 1024


@dataclass
class Tally:
    """What one kind of payload did: how each decode ended, the most memory each outcome took, the worst cases."""

    outcomes: Counter[str] = field(default_factory=Counter)
    most_bytes: dict[str, int] = field(default_factory=dict)
    #: (growth, payload size, outcome) of each decode that took over ``factor`` times its payload's size.
    over: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, outcome: str, growth: int, size: int, factor: int) -> None:
        self.outcomes[outcome] += 1
        self.most_bytes[outcome] = max(self.most_bytes.get(outcome, 0), growth)
        if growth > factor * size + SLACK_BYTES:
            self.over.append((growth, size, outcome))


class Probe:
    def __init__(self, base: bytes, factor: int):
        self.base = base
        self.factor = factor
        self.decoder = SnapshotDecoder()
        self.decoder.decode(base)
        self.tallies: dict[str, Tally] = {}

    def decode(self, kind: str, payload: bytes) -> None:
        _reset_peak()
        peak_before, files_before = _memory_kb()
        try:
            self.decoder.decode(payload)
            outcome = "decoded"
        except SceneError as exc:
            outcome = "refused before decoding" if "refused before decoding" in str(exc) else "refused by spark_dsg"
        peak, files = _memory_kb()
        # Less the code pages a path run for the first time brings in (spark_dsg's first exception: 576 KB).
        growth = max(0, peak - peak_before - (files - files_before)) * 1024
        self.tallies.setdefault(kind, Tally()).add(outcome, growth, len(payload), self.factor)
        if outcome != "refused before decoding":  # back to holding the base graph, as after the mirror's next snapshot
            self.decoder = SnapshotDecoder()
            self.decoder.decode(self.base)


def lengths(data: bytes) -> Iterator[int]:
    """Every offset a length could be at (a STR32 or ARR32 tag with four bytes after it)."""
    return (i for i in range(len(data) - 4) if data[i] in _LENGTH_TAGS)


def with_length(data: bytes, at: int, value: int) -> bytes:
    return data[: at + 1] + struct.pack("<I", value) + data[at + 5 :]


def systematic(probe: Probe, name: str, data: bytes) -> None:
    for at in lengths(data):
        probe.decode(f"{name}: length huge", with_length(data, at, 0x7FFFFFF0))
        probe.decode(f"{name}: length one too many", with_length(data, at, len(data) - at - 5 + 1))
    for cut in range(1, len(data), max(1, len(data) // 200)):
        probe.decode(f"{name}: truncated", data[:cut])


def mutations(payloads: list[bytes]) -> st.SearchStrategy[bytes]:
    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(st.sampled_from(payloads)))
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data) - 1))
            edit = draw(st.sampled_from(["byte", "u32", "delete", "repeat", "truncate"]))
            if edit == "byte":
                data[at] = draw(st.integers(0, 255))
            elif edit == "u32":
                value = draw(st.one_of(st.integers(0, 2**32 - 1), st.integers(len(data) - at - 8, len(data) - at)))
                data[at : at + 4] = struct.pack("<I", value % 2**32)
            elif edit == "delete":
                del data[at : at + draw(st.integers(1, 64))]
            elif edit == "repeat":
                data[at:at] = data[at : at + draw(st.integers(1, 64))]
            else:
                del data[at:]
            if not data:
                data = bytearray(b"\x00")
        return bytes(data)

    return mutate()


def main(examples: int, factor: int) -> None:
    small = generate_scene("small").to_binary(include_mesh=False)
    rich = rich_scene().to_binary(include_mesh=True)
    probe = Probe(small, factor)
    systematic(probe, "small", small)
    systematic(probe, "rich", rich)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutations([small, rich]))
    def random_mutations(payload: bytes) -> None:
        probe.decode("random mutations", payload)

    random_mutations()
    report = {
        kind: {"outcomes": dict(t.outcomes), "most_bytes": t.most_bytes, "over": t.over[:10]}
        for kind, t in probe.tallies.items()
    }
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(examples=int(sys.argv[1]), factor=int(sys.argv[2]))
