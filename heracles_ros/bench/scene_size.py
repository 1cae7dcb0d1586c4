"""The ``--scale`` every stage benchmark takes: the kilometre-scale scene times F, one meaning everywhere.

At 1 the large synthetic scene has 15,945 mesh places (16,384 mirrored nodes); 6.272 gives 10^5 places,
62.72 about 10^6. Objects and rooms grow in proportion (``scene/synthetic.py``).
"""
from __future__ import annotations

import argparse

#: The scale at which the large scene has 10^5 mesh places.
SCALE_100K_PLACES = 6.272


def add_scale_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", type=float, default=1.0, metavar="F",
                        help="size factor of the large scene (default 1: 15,945 places; "
                        f"{SCALE_100K_PLACES:g}: 10^5 places)")


def scene_name(kind: str, seed: int, scale: float) -> str:
    """How a benchmark names the scene it measured in its figures."""
    return f"{kind} seed {seed}" + (f" scale {scale:g}" if kind == "large" else "")
