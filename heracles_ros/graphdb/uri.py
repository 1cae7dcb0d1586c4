"""Parse the ``--db`` / ``db_uri`` value into a typed target.

One grammar for every entry point (CLI, nodes, tests) so a typo fails the same
way everywhere, naming what was wrong.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from heracles_ros.errors import ConfigError

FALKORDB_DEFAULT_PORT = 6379
NEO4J_DEFAULT_PORT = 7687


def default_data_dir() -> Path:
    """Where the embedded server keeps its files: the user's data directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "heracles_ros" / "falkordb"


@dataclass(frozen=True)
class DbTarget:
    """Where to connect: ``kind`` is embedded | falkordb | neo4j."""

    kind: str
    host: str = ""
    port: int = 0
    data_dir: Path | None = None
    #: Full URI for the neo4j driver (scheme decides routing / TLS).
    uri: str = ""
    #: Neo4j database name from the URI path, e.g. neo4j://h:7687/scenes.
    database: str | None = None

    @property
    def description(self) -> str:
        if self.kind == "embedded":
            return f"embedded FalkorDB ({self.data_dir})"
        if self.kind == "falkordb":
            return f"falkordb://{self.host}:{self.port}"
        return self.uri


def parse_db_uri(text: str) -> DbTarget:
    """``embedded[:DIR]`` | ``falkordb://host:port`` | ``neo4j[+s|+ssc]://…`` | ``bolt[+s|+ssc]://…``."""
    text = text.strip()
    if text == "embedded" or text.startswith("embedded:"):
        raw = text[len("embedded:"):] if ":" in text else ""
        data_dir = Path(raw).expanduser() if raw else default_data_dir()
        return DbTarget("embedded", data_dir=data_dir.resolve())
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if parts.username or parts.password:
        raise ConfigError(
            "database URI must not contain credentials; set NEO4J_USERNAME / NEO4J_PASSWORD "
            "(or FALKORDB_PASSWORD) in the environment instead"
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"database URI {text!r}: invalid port") from exc
    if scheme == "falkordb":
        if not parts.hostname:
            raise ConfigError(f"database URI {text!r}: missing host (falkordb://host:port)")
        return DbTarget("falkordb", host=parts.hostname, port=port or FALKORDB_DEFAULT_PORT)
    if scheme in {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}:
        if not parts.hostname:
            raise ConfigError(f"database URI {text!r}: missing host ({scheme}://host:port)")
        database = parts.path.strip("/") or None
        base = f"{scheme}://{parts.hostname}:{port or NEO4J_DEFAULT_PORT}"
        return DbTarget("neo4j", host=parts.hostname, port=port or NEO4J_DEFAULT_PORT, uri=base, database=database)
    raise ConfigError(
        f"unknown database URI {text!r}: use embedded[:DATA_DIR], falkordb://host:port, "
        "neo4j://host:port or bolt://host:port"
    )
