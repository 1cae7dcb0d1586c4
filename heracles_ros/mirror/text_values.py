"""The rules an operator's text value passes before it is written (a corrected class or name, an added class)."""
from __future__ import annotations

import unicodedata
from typing import Any

#: Longest text an operator may set.
MAX_TEXT = 80


def has_control(text: str) -> bool:
    """Control, format or unassigned characters (NUL cuts a string short on FalkorDB)."""
    return any(unicodedata.category(ch).startswith("C") for ch in text)


def text_problem(value: Any, *, what: str) -> str:
    """'' when ``value`` is a non-empty text of at most MAX_TEXT characters without control characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        return f"{what}: expected a non-empty text of at most {MAX_TEXT} characters, got {value!r}"
    if has_control(value):
        return f"{what}: the text {value!r} contains a control character"
    return ""
