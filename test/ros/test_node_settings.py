"""A parameter several nodes share is written once, and each node's typed settings are its table by name.

The nodes' own tests (test/nodes/test_every_parameter.py) see every value reach its consumer; these check the
shape that makes that hold without a line per parameter: the shared Settings are the very objects each node's
table holds, and a settings dataclass that drifts from its table (a parameter added to one but not the other)
is refused, naming it, instead of dropping the value or failing on a missing attribute later.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from heracles_ros.nodes import dispatcher_settings, language_settings, mirror_settings
from heracles_ros.ros import node_settings
from heracles_ros.ros.node_settings import NodeSettings, settings_from
from heracles_ros.settings import Setting

#: Each node's settings module and its dataclass.
NODES = (
    (mirror_settings, mirror_settings.MirrorSettings),
    (language_settings, language_settings.LanguageSettings),
    (dispatcher_settings, dispatcher_settings.DispatcherSettings),
)
#: The shared Settings of node_settings, by parameter name.
SHARED = {value.name: value for value in vars(node_settings).values() if isinstance(value, Setting)}


@dataclass(frozen=True)
class _Settings(NodeSettings):
    speed: float


def _values(**extra: object) -> dict[str, object]:
    return {"db_uri": "embedded", "graph_name": "heracles", "shutdown_timeout_s": 5.0, **extra}


def test_each_field_is_filled_from_the_parameter_of_its_name() -> None:
    settings = settings_from(_Settings, _values(speed=1.5))
    assert settings == _Settings(db_uri="embedded", graph_name="heracles", shutdown_timeout_s=5.0, speed=1.5)


def test_a_parameter_without_a_field_or_a_field_without_a_parameter_is_named() -> None:
    with pytest.raises(TypeError, match=r"parameters without a field \['sped'\], fields without a parameter "
                                        r"\['speed'\]"):
        settings_from(_Settings, _values(sped=1.5))
    # One the node reads elsewhere (the dispatcher's driver settings) is no field and no error.
    assert settings_from(_Settings, _values(speed=1.0, sim_tick_s=0.1), read_elsewhere={"sim_tick_s"}).speed == 1.0


@pytest.mark.parametrize(("module", "settings"), NODES, ids=lambda item: getattr(item, "__name__", ""))
def test_every_node_table_is_its_settings_fields(module: object, settings: type[NodeSettings]) -> None:
    """The table and the dataclass name the same parameters (the dispatcher's driver ones aside), so
    ``settings_from`` takes every declared value."""
    table = {spec.name for spec in module.PARAMETERS}  # type: ignore[attr-defined]
    elsewhere = getattr(module, "DRIVER_PARAMETER_NAMES", frozenset())
    assert table - elsewhere == {field.name for field in fields(settings)}


def test_a_parameter_two_nodes_declare_is_the_shared_setting_itself() -> None:
    """db_uri, graph_name, client_lost_s, ...: one description, default and range in every node that has it."""
    declared: dict[str, list[Setting]] = {}
    for module, _ in NODES:
        for spec in module.PARAMETERS:  # type: ignore[attr-defined]
            declared.setdefault(spec.name, []).append(spec)
    shared_by_name = {name: specs for name, specs in declared.items() if len(specs) > 1}
    assert set(SHARED) <= set(shared_by_name), set(SHARED) - set(shared_by_name)
    separate = {name for name in shared_by_name if name not in SHARED}
    # query_timeout_s bounds different reads: the mirror's every statement, the language server's model's queries.
    assert separate == {"query_timeout_s"}, separate
    for name, specs in shared_by_name.items():
        if name in SHARED:
            assert all(spec is SHARED[name] for spec in specs), name
