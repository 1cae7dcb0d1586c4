"""How the prompt teaches SLDP (:mod:`.sldp`): its syntax in a few lines, and the type an answer must have with an
example value of it."""
from __future__ import annotations

from heracles_ros.formats.sldp import describe_type, parse_type

_EXAMPLES = {
    "string": "O12",
    "number": "3",
    "point": "POINT(1.5 -2.25 0.4)",
}
_CONTAINER_EXAMPLES = {
    "list": ("[{0}, {1}]", "[O12, O7]"),
    "set": ("<{0}, {1}>", "<O3, O17>"),
    "dict": ("{{bag: {0}, box: {1}}}", "{bag: 2, box: 3}"),
}
_SECOND_EXAMPLES = {"string": "R2", "number": "4.25", "point": "POINT(0 3.1 0.2)"}


def example_of(spec: str) -> str:
    """A short example value of a type, as SLDP text."""
    return _example(parse_type(spec))


def _example(parts: tuple[str, ...]) -> str:
    base = parts[0]
    if base in _EXAMPLES:
        return _EXAMPLES[base]
    template, default = _CONTAINER_EXAMPLES[base]
    if len(parts) == 1:
        return default
    inner = parts[1:]
    first = _example(inner)
    second = _SECOND_EXAMPLES.get(inner[0], first) if len(inner) == 1 else first
    return template.format(first, second)


def format_guidance(answer_type: str | None) -> str:
    """SLDP syntax for the prompt, and the required type with an example when one is given.

    How to delimit the answer (e.g. ``<answer>`` tags) is the caller's part of the prompt.
    """
    lines = [
        "Write the answer as one SLDP expression:",
        "- a string is written without quotes when it is letters, digits and underscores starting with a letter "
        '(bag, O12, living_room); otherwise in double quotes ("dining table")',
        "- a number is written plainly (3, -2.5)",
        "- a point is written POINT(x y z), coordinates separated by spaces, not commas",
        "- a list (ordered) is written [a, b, c]",
        "- a set (unordered) is written <a, b, c>",
        "- a dict is written {key1: value1, key2: value2}; keys are strings",
        "Containers nest, e.g. {hallway: <O1, O2>}. Numbers and point coordinates are compared within 0.01.",
    ]
    if answer_type:
        lines.append(f"Your answer must be {describe_type(answer_type)}, for example: {example_of(answer_type)}")
    return "\n".join(lines)
