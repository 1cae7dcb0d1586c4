"""Benchmarks behind ``heracles bench``: each module measures one subsystem.

A benchmark module exposes ``add_arguments(parser)`` and ``run(args) -> dict``
(the figures, JSON-able); the CLI prints them as JSON or as a table.
"""
