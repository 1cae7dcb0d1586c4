"""Reading a YAML file an operator wrote: a syntax error names the file, line and column, never a traceback."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from heracles_ros.errors import ConfigError


def load_yaml(path: Path, what: str) -> Any:
    """Parse one YAML file; a syntax error or an unreadable file is a ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what} {path} cannot be read: {exc.strerror or exc}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start is not mark:
            context = f"{context} that starts at line {start.line + 1}, column {start.column + 1}"
        raise ConfigError(f"{what} {where}: YAML syntax error: {problem}"
                          + (f" ({context})" if context else "")) from exc
