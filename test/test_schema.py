"""Scene symbols are validated whole: what is not one letter and a number never reaches a query."""
from __future__ import annotations

import pytest

from heracles_ros.schema import is_scene_symbol


@pytest.mark.parametrize("symbol", ["O14", "p0", "Q6", "f2"])
def test_scene_symbols(symbol: str) -> None:
    assert is_scene_symbol(symbol)


@pytest.mark.parametrize("symbol", ["O14\n", "O14\r\n", "\nO14", "O14 ", "O", "14", "OO14", "O1.4", None, 14])
def test_anything_else_is_not_a_scene_symbol(symbol: object) -> None:
    assert not is_scene_symbol(symbol)  # "$" would let "O14\n" through: the whole text must match
