"""Recordings of Hydra's DsgUpdate topic read for ``heracles replay``: any damage is a ReplayInputError, found
before the first frame goes out (the CLI's exit 2 is in test/cli/test_replay.py)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer
from rclpy.serialization import serialize_message
from support.mcap_recording import SCHEMA_NAME, dsg_update, msgdef
from support.tiny_scene import tiny_scene

from heracles_ros.desk.recordings import ReplaySources
from heracles_ros.errors import ReplayInputError

TOPIC = "/hydra/backend/dsg"
T0 = 1_700_000_000.0


def chunked_recording(path: Path, messages: int, *, compression: CompressionType = CompressionType.ZSTD) -> Path:
    """``messages`` snapshots of the tiny scene on TOPIC, each in a chunk of its own."""
    with path.open("wb") as stream:
        writer = Writer(stream, chunk_size=1, compression=compression)
        writer.start(profile="ros2", library="heracles_ros test")
        channel = writer.register_channel(TOPIC, "cdr", writer.register_schema(SCHEMA_NAME, "ros2msg",
                                                                               msgdef().encode()))
        for index in range(messages):
            stamp = int((T0 + index) * 1e9)
            writer.add_message(channel, log_time=stamp, publish_time=stamp, sequence=index,
                               data=serialize_message(dsg_update(tiny_scene(), index + 1, T0 + index)))
        writer.finish()
    return path


def chunks(path: Path) -> list[tuple[int, int]]:
    """(start, length) of each chunk record, from the file's summary."""
    with path.open("rb") as stream:
        summary = make_reader(stream).get_summary()
    assert summary is not None
    return [(index.chunk_start_offset, index.chunk_length) for index in summary.chunk_indexes]


@pytest.mark.parametrize("compression", [CompressionType.ZSTD, CompressionType.LZ4, CompressionType.NONE])
def test_a_damaged_last_chunk_is_found_before_any_frame_is_handed_out(tmp_path: Path, compression) -> None:
    path = chunked_recording(tmp_path / "hydra.mcap", 3, compression=compression)
    assert len(ReplaySources([path], TOPIC)._items) == 1 and len(list(ReplaySources([path], TOPIC).frames())) == 3
    start, length = chunks(path)[-1]
    data = bytearray(path.read_bytes())
    data[start + length - 20] ^= 0x5A  # inside the chunk's (compressed) records
    path.write_bytes(bytes(data))
    with pytest.raises(ReplayInputError, match=rf"^{path}: not a readable MCAP recording, damaged after message 2 "):
        ReplaySources([path], TOPIC)


def test_damage_to_any_single_byte_is_read_through_or_refused_as_bad_input(tmp_path: Path) -> None:
    """Every byte of a small recording flipped in turn: the file reads whole, or the refusal is a ReplayInputError
    naming it (the libraries raised ZstdError, struct.error, KeyError, MemoryError ... before)."""
    good = chunked_recording(tmp_path / "good.mcap", 2).read_bytes()
    damaged = tmp_path / "damaged.mcap"
    started, refused = time.monotonic(), 0
    for position in range(len(good)):
        data = bytearray(good)
        data[position] ^= 0xFF
        damaged.write_bytes(bytes(data))
        try:
            frames = list(ReplaySources([damaged], TOPIC).frames())
        except ReplayInputError as exc:
            assert str(exc).startswith(f"{damaged}: "), exc
            refused += 1
        else:
            assert sorted(frame.sequence for frame in frames) in ([1, 2], [1], [2]), position  # an index may reorder
    assert refused > len(good) // 2, (refused, len(good))
    assert time.monotonic() - started < 120
