"""What ``heracles replay`` publishes: scene files, or a recording of Hydra's ``DsgUpdate`` topic, as frames.

A frame is one ``DsgUpdate``'s content: the spark_dsg payload and, for a
recording, the header fields Hydra sent. Recordings are MCAP files as
``ros2 bag record -s mcap`` writes them (the ``ros2`` profile: schema
``hydra_msgs/msg/DsgUpdate`` in ``ros2msg``, messages in ``cdr``), read with the
``mcap`` libraries, so no ROS installation is needed to read one. Everything is
checked before the first frame is published: a bad input fails whole, with a
message naming the file and what is wrong with it. A recording is read through
once up front, its chunks' checksums checked and every message on the topic
decoded, so a damaged chunk is found before anything goes out; the snapshots'
spark_dsg payloads are passed on as recorded (the mirror judges those).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.errors import ReplayInputError, SceneError

DSG_UPDATE_SCHEMA = "hydra_msgs/msg/DsgUpdate"
MCAP_MAGIC = b"\x89MCAP0\r\n"


@dataclass(frozen=True)
class Frame:
    """One DsgUpdate to publish; ``sequence`` / ``stamp_s`` None: the publisher numbers and stamps it."""

    payload: bytes
    source: str
    full_update: bool = True
    sequence: int | None = None
    stamp_s: float | None = None


def is_mcap(path: Path) -> bool:
    with path.open("rb") as head:
        return head.read(len(MCAP_MAGIC)) == MCAP_MAGIC


class ReplaySources:
    """Scene files and recordings to replay, checked up front; :meth:`frames` reads them anew on every pass.

    A scene file is decoded once (it is one snapshot); a recording is streamed, so one of any length
    never has to fit in memory.
    """

    def __init__(self, paths: Sequence[Path], topic: str):
        self.topic = topic
        self._items: list[Frame | Path] = []
        for path in paths:
            if not path.is_file():
                raise ReplayInputError(f"{path}: no such file")
            if is_mcap(path):
                check_recording(path, topic)
                self._items.append(path)
            else:
                self._items.append(scene_frame(path))

    def frames(self) -> Iterator[Frame]:
        for item in self._items:
            if isinstance(item, Frame):
                yield item
            else:
                yield from recording_frames(item, self.topic)


def scene_frame(path: Path) -> Frame:
    """A spark_dsg file (JSON or binary) as one full snapshot, without its mesh (as Hydra publishes it)."""
    from heracles_ros.scene.io import load_scene

    try:
        graph = load_scene(path)
    except SceneError as exc:
        raise ReplayInputError(f"{path}: neither an MCAP recording nor a spark_dsg scene file ({exc})") from exc
    return Frame(payload=bytes(graph.to_binary(include_mesh=False)), source=path.name)


def check_recording(path: Path, topic: str) -> None:
    """An MCAP file whose summary (when it has one: a file cut short has none) lists ``topic`` with the
    DsgUpdate schema, and whose every message on ``topic`` reads and decodes."""
    from mcap.reader import make_reader

    try:
        with path.open("rb") as stream:
            summary = make_reader(stream).get_summary()
    except Exception as exc:  # whatever a damaged file makes the library raise (see recording_frames)
        raise ReplayInputError(f"{path}: not a readable MCAP recording ({_named(exc)})") from exc
    if summary is not None:
        _check_channel(path, topic, summary)
    for _ in recording_frames(path, topic):
        pass


def _check_channel(path: Path, topic: str, summary: Any) -> None:
    channels = {c.topic: summary.schemas.get(c.schema_id) for c in summary.channels.values()}
    if topic not in channels:
        found = ", ".join(f"{name} ({s.name if s else 'no schema'})" for name, s in sorted(channels.items()))
        raise ReplayInputError(f"{path}: no topic {topic} in the recording (it has: {found or 'no topics'}); "
                               "--topic names the one to replay")
    schema = channels[topic]
    if schema is None or schema.name != DSG_UPDATE_SCHEMA:
        raise ReplayInputError(f"{path}: topic {topic} carries {schema.name if schema else 'no schema'}, "
                               f"not {DSG_UPDATE_SCHEMA}")


def recording_frames(path: Path, topic: str) -> Iterator[Frame]:
    """The DsgUpdate messages on ``topic`` in ``path``, in log-time order, decoded as they are read."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    count = 0
    try:
        with path.open("rb") as stream:
            reader = make_reader(stream, validate_crcs=True, decoder_factories=[DecoderFactory()])
            for _schema, _channel, _message, msg in reader.iter_decoded_messages(topics=[topic]):
                count += 1
                stamp = msg.header.stamp
                yield Frame(payload=bytes(msg.layer_contents), source=f"{path.name} message {count}",
                            full_update=bool(msg.full_update), sequence=int(msg.sequence_number),
                            stamp_s=float(stamp.sec) + float(stamp.nanosec) * 1e-9)
    # A damaged file makes the mcap libraries raise whatever their parsing meets: McapError (a checksum),
    # zstandard's and lz4's errors (a compressed chunk), struct.error, KeyError, OverflowError, MemoryError (a
    # length field), the message-definition parser's own errors (a schema). All of them say the file is bad.
    except Exception as exc:
        where = f"after message {count}" if count else "before its first message"
        raise ReplayInputError(f"{path}: not a readable MCAP recording, damaged {where} ({_named(exc)})") from exc
    if count == 0:
        raise ReplayInputError(f"{path}: no messages on {topic}")


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
