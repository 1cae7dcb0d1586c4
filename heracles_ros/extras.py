"""The desk tools' libraries (the ``tools`` extra: plots, progress bars) are imported on use.

The robot's install (``pip install .``) leaves them out; a tool run there says
what to install instead of failing at import time in every command.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from heracles_ros.errors import MissingExtra

#: How to get them.
INSTALL_HINT = "pip install 'heracles_ros[tools]' (./run.sh setup installs it at the desk)"


def tool_library(module: str, purpose: str) -> ModuleType:
    """``import module`` for ``purpose``; MissingExtra naming the install when it is absent."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module.split(".")[0]:
            raise
        raise MissingExtra(f"{purpose} needs {module.split('.')[0]}, a library of the tools extra: "
                           f"{INSTALL_HINT}") from exc
