"""The prompt's SLDP guidance: each example it shows is a valid value of the type it asks for."""
from __future__ import annotations

import pytest

from heracles_ros.formats.sldp import SLDP_TYPES, check_type, parse_sldp
from heracles_ros.formats.sldp_guidance import example_of, format_guidance


@pytest.mark.parametrize("spec", [*SLDP_TYPES, "set[point]", "dict[set[string]]"])
def test_examples_in_guidance_are_valid_values_of_their_type(spec: str) -> None:
    check_type(parse_sldp(example_of(spec)), spec)
    text = format_guidance(spec)
    assert example_of(spec) in text and "POINT(x y z)" in text


def test_guidance_without_a_type_describes_only_the_syntax() -> None:
    text = format_guidance(None)
    assert "<a, b, c>" in text and "must be" not in text
