"""The console's protocol module and its specification (docs/console.md, "Wire protocol") say the same thing.

The page is written against the specification and the server against the module: a field added, renamed or
dropped in one and not the other, a message or an op only one of them knows, or a close code or bound stated
differently, fails here. The specification's message blocks are read as the pseudo-JSON they are (``bool``,
``"a"|"b"``, ``... | null`` stand for values): only their keys and the nesting of their objects count.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from pathlib import Path
from typing import Any

from heracles_ros.console import protocol

SPEC = Path(__file__).resolve().parents[2] / "docs" / "console.md"

#: A shape: an object's keys with the shapes of their values, a list of one shape, or None for a plain value
#: (a free-form object, like a history event, counts as a plain value).
Shape = dict[str, Any] | list[Any] | None


def wire_section() -> str:
    text = SPEC.read_text()
    start = text.index("\n## Wire protocol")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def code_block(section: str, heading: str) -> str:
    after = section[section.index(f"### {heading}"):]
    return after.split("```")[1]


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def shape_at(text: str) -> Shape:
    """The shape of the object ``text`` begins with."""
    return _value(_TOKEN.findall(text), 0)[0]


def _value(tokens: list[str], i: int) -> tuple[Shape, int]:
    """The first object or list before the value ends (a ',' or a closing bracket of the enclosing one)."""
    shape: Shape = None
    while i < len(tokens) and tokens[i] not in (",", "}", "]"):
        if tokens[i] == "{":
            found, i = _object(tokens, i)
        elif tokens[i] == "[":
            found, i = _list(tokens, i)
        else:
            found, i = None, i + 1
        shape = shape if shape is not None else found
    return shape, i


def _object(tokens: list[str], i: int) -> tuple[Shape, int]:
    keys: dict[str, Any] = {}
    i += 1
    while tokens[i] != "}":
        if tokens[i].startswith('"') and tokens[i + 1] == ":":
            keys[json.loads(tokens[i])], i = _value(tokens, i + 2)
        else:
            i += 1
    return keys or None, i + 1


def _list(tokens: list[str], i: int) -> tuple[Shape, int]:
    items = []
    i += 1
    while tokens[i] != "]":
        if tokens[i] == ",":
            i += 1
            continue
        item, i = _value(tokens, i)
        items.append(item)
    shapes = [item for item in items if item is not None]
    return (shapes[:1] or None), i + 1


def type_shape(kind: Any) -> Shape:
    """The shape of a TypedDict (its nested TypedDicts, lists of them and optional ones included)."""
    if typing.is_typeddict(kind):
        return {key: type_shape(hint) for key, hint in typing.get_type_hints(kind).items()}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is list and (item := type_shape(args[0])) is not None:
        return [item]
    if origin in (typing.Union, types.UnionType):
        return next((shape for arg in args if (shape := type_shape(arg)) is not None), None)
    return None


def spec_messages() -> dict[str, Shape]:
    """Each server message of the specification by its type, with ITEM put in its place."""
    block = code_block(wire_section(), "Server -> page")
    item = shape_at(block[block.index("ITEM = {"):])
    shapes: dict[str, Shape] = {}
    for found in re.finditer(r'\{"type": "(\w+)"', block):
        shape = shape_at(block[found.start():])
        assert isinstance(shape, dict) and found.group(1) not in shapes, found.group(1)
        if found.group(1) == "scene":
            shape["upsert"] = [item]
        shapes[found.group(1)] = shape
    return shapes


def spec_ops() -> dict[str, set[str]]:
    """Each op of the specification with its fields."""
    block = code_block(wire_section(), "Page -> server")
    ops: dict[str, set[str]] = {}
    for found in re.finditer(r'\{"op": "(\w+)"', block):
        shape = shape_at(block[found.start():])
        assert isinstance(shape, dict) and found.group(1) not in ops, found.group(1)
        ops[found.group(1)] = set(shape) - {"op"}
    return ops


def test_every_server_message_is_specified_with_the_same_fields_and_nothing_else_is():
    specified = spec_messages()
    defined = {name: type_shape(kind) for name, kind in protocol.SERVER_MESSAGES.items()}
    assert set(specified) == set(defined), (f"only in the spec: {sorted(set(specified) - set(defined))}; "
                                            f"only in protocol.py: {sorted(set(defined) - set(specified))}")
    for name, shape in defined.items():
        assert specified[name] == shape, f"{name}: spec {specified[name]} != protocol.py {shape}"


def test_every_op_is_specified_with_the_same_fields_and_nothing_else_is():
    specified = spec_ops()
    defined = {name: {field.name for field in dataclasses.fields(kind)} for name, kind in protocol.OPS.items()}
    assert specified == defined


def test_every_server_message_has_its_one_builder():
    """A message the server sends is built by one function of protocol.py, which says so in its return type."""
    built: dict[Any, list[str]] = {}
    for name, function in inspect.getmembers(protocol, inspect.isfunction):
        if function.__module__ == protocol.__name__ and not name.startswith("_"):
            built.setdefault(typing.get_type_hints(function).get("return"), []).append(name)
    for name, kind in protocol.SERVER_MESSAGES.items():
        assert len(built.get(kind, [])) == 1, f"{name}: built by {built.get(kind)}"


def test_the_close_codes_and_bounds_are_the_ones_specified():
    section = wire_section()
    table = {int(code) for code in re.findall(r"^\| (\d{4}) \|", section, re.M)}
    assert table == {int(code) for code in protocol.CloseCode}
    for stated in (f"{protocol.MAX_MESSAGE_BYTES // 1024} KiB", f"{protocol.RATE_PER_S} messages a second",
                   f"question {protocol.TEXT_MAX} characters", f"names, symbols and ids {protocol.NAME_MAX}",
                   f"(0, {protocol.SINCE_MAX_S:g}]"):
        assert stated in section, stated


def test_a_scene_encoded_a_chunk_at_a_time_is_the_message_encoded_whole():
    """The map's text is written a chunk at a time (the STOP's thread must not wait for a 2 MB dumps): it must be
    the very JSON one call would write of the scene message, across chunk boundaries, empty lists and escapes
    included."""
    count = 2 * protocol.ENCODE_CHUNK + 7

    def item(i: int) -> protocol.MapItem:
        return {"symbol": f"O{i}", "layer": "object", "cls": "caf\u00e9 \ud800" if i % 999 == 0 else "", "name": "",
                "x": i / 3, "y": -i, "operator": i % 2 == 0}

    places = [(f"P{i}", i / 7, -i / 3) for i in range(count)]
    edges = [(f"P{i}", f"P{i + 1}") for i in range(count - 1)]
    for full, more, upsert, remove, moved, added, removed in (
            (True, True, range(count), [], [], [], []),
            (False, False, range(0), [], places, edges, []),
            (False, False, range(1), [f"O{i}" for i in range(count)], places[:3], [], edges[:5]),
            (False, False, range(0), [], [], [], [])):
        text = protocol.scene_text(full, more, upsert, remove, moved, added, removed, item=item)
        whole = protocol.scene(full, more, [item(i) for i in upsert], remove, moved, added, removed)
        assert text == protocol.encode(whole) and text.isascii()
        assert json.loads(text) == json.loads(json.dumps(whole))
    message = protocol.scene(False, False, [], [], places[:2], [], [])
    assert message["places"] == {"symbols": ["P0", "P1"], "xy": [0.0, -0.0, 1 / 7, -1 / 3]}
