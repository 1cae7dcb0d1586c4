"""A misspelt graph name or an empty graph is named as such, on every backend, and checking creates nothing."""
from __future__ import annotations

import time
from typing import Any

import pytest

from heracles_ros.errors import NoScene
from heracles_ros.graphdb.scene_presence import (
    graph_exists,
    misspelt_graph_suspected,
    require_graph,
    require_scene,
    wait_for_graph,
)
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror


def test_an_empty_graph_is_named_and_a_scene_passes(store: GraphStore, small_scene: Any) -> None:
    with pytest.raises(NoScene) as error:
        require_scene(store, reader="cannot ask")
    assert error.value.missing is (store.graph_names() is not None)  # FalkorDB: never written, so missing
    assert str(error.value).startswith("cannot ask: ") and "heracles load" in str(error.value)
    Mirror(store).reconcile(small_scene)
    require_scene(store, reader="cannot ask")
    assert not misspelt_graph_suspected(store)


@pytest.mark.backends("falkordb")
def test_a_missing_graph_is_named_with_what_the_server_holds_and_is_not_created(
    small_store: GraphStore, falkordb_uri: str, graph_name: str
) -> None:
    from heracles_ros.graphdb import open_store

    with open_store(falkordb_uri, graph=f"{graph_name}_typo") as typo:
        assert not graph_exists(typo)
        with pytest.raises(NoScene) as error:
            require_scene(typo, reader="heracles summary")
        assert error.value.missing
        message = str(error.value)
        assert f"graph '{graph_name}_typo'" in message and "does not exist" in message
        assert f"'{graph_name}'" in message.split("the server holds", 1)[1]  # where the scene is instead
        assert misspelt_graph_suspected(typo) and not misspelt_graph_suspected(small_store)
        assert f"{graph_name}_typo" not in (typo.graph_names() or [])  # reading created nothing


@pytest.mark.backends("falkordb")
def test_a_graph_holding_only_robot_state_is_no_scene(store: GraphStore) -> None:
    store.write("CREATE (:Robot {nodeSymbol: 'robot'})")  # what a dispatcher writes at start
    require_graph(store, reader="dispatcher")
    with pytest.raises(NoScene) as error:
        require_scene(store, reader="cannot ask")
    assert not error.value.missing and "holds no scene" in str(error.value)


@pytest.mark.backends("falkordb")
def test_waiting_for_a_graph_ends_when_it_appears_or_when_stopping(store: GraphStore, small_scene: Any) -> None:
    checks: list[float] = []

    def stopping_after_creating() -> bool:  # the hook: the mirror's first write lands during the wait
        checks.append(time.monotonic())
        if len(checks) == 2:
            Mirror(store).reconcile(small_scene)
        return False

    started = time.monotonic()
    wait_for_graph(store, 60.0, reader="dispatcher", stopping=stopping_after_creating, period_s=0.01)
    assert len(checks) == 2 and time.monotonic() - started < 30.0


@pytest.mark.backends("falkordb")
def test_waiting_gives_up_at_once_when_the_node_stops_and_names_the_graph(store: GraphStore) -> None:
    started = time.monotonic()
    with pytest.raises(NoScene, match=r"dispatcher cannot start: .* does not exist"):
        wait_for_graph(store, 600.0, reader="dispatcher cannot start", stopping=lambda: True)
    assert time.monotonic() - started < 5.0
    assert not graph_exists(store)
