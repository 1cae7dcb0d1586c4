from pathlib import Path

import pytest

from heracles_ros.errors import ConfigError
from heracles_ros.graphdb.uri import default_data_dir, parse_db_uri


def test_embedded_default_dir_is_under_user_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    target = parse_db_uri("embedded")
    assert target.kind == "embedded"
    assert target.data_dir == default_data_dir().resolve() == (tmp_path / "heracles_ros" / "falkordb").resolve()


def test_embedded_with_dir(tmp_path: Path) -> None:
    assert parse_db_uri(f"embedded:{tmp_path}/db").data_dir == (tmp_path / "db").resolve()


def test_falkordb_and_neo4j() -> None:
    falkor = parse_db_uri("falkordb://db.local:6380")
    assert (falkor.kind, falkor.host, falkor.port) == ("falkordb", "db.local", 6380)
    neo = parse_db_uri("neo4j://graph:7688/scenes")
    assert (neo.kind, neo.uri, neo.database) == ("neo4j", "neo4j://graph:7688", "scenes")
    assert parse_db_uri("bolt://localhost").port == 7687


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("neo4j://user:secret@host:7687", "credentials"),
        ("redis://host", "unknown database URI"),
        ("falkordb://:6379", "missing host"),
        ("falkordb://host:notaport", "invalid port"),
    ],
)
def test_bad_uris_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as caught:
        parse_db_uri(text)
    assert "secret" not in str(caught.value)
