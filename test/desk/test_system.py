"""What ``heracles up`` runs: with --world, the mirror and the simulated Hydra share one topic of the namespace."""
from __future__ import annotations

from pathlib import Path

from heracles_ros.desk.system import SystemOptions, processes


def options(world: Path | None, namespace: str = "/spot") -> SystemOptions:
    return SystemOptions(db_uri="falkordb://127.0.0.1:1", embedded_dir=None, namespace=namespace, graph_name="g",
                         scene_file=Path("/map.json"), start_place="P0", language=None, scripted_port=1,
                         time_scale=1.0, shutdown_timeout_s=5.0, world_file=world)


def node_parameters(found, node: str) -> dict[str, str]:
    argv = next(p.argv for p in found if p.name == node)
    return dict(argv[i + 1].split(":=", 1) for i, a in enumerate(argv) if a == "-p")


def test_a_world_gives_the_mirror_and_the_simulated_hydra_one_topic_of_the_namespace():
    found = processes(options(Path("/w.json"), "/spot2"))
    assert node_parameters(found, "dispatcher")["sim_world"] == "/w.json"
    assert node_parameters(found, "dispatcher")["sim_dsg_topic"] == "/spot2/hydra/backend/dsg"
    assert node_parameters(found, "dsg_mirror")["dsg_topic"] == "/spot2/hydra/backend/dsg"


def test_without_a_world_nothing_changes():
    found = processes(options(None))
    assert "sim_world" not in node_parameters(found, "dispatcher")
    assert "dsg_topic" not in node_parameters(found, "dsg_mirror")
