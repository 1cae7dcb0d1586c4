"""Building drivers by name from flat settings."""
from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys

import pytest
import rclpy
from support.ros import ros_session

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution.driver import CancelToken, Pose
from heracles_ros.execution.driver_factory import (
    DRIVER_KINDS,
    SETTINGS,
    SIM_HYDRA_SETTINGS,
    checked_settings,
    make_driver,
    sim_hydra_settings,
)
from heracles_ros.execution.sim import SimConfig, SimSpotDriver
from heracles_ros.execution.spot_config import SpotConfig
from heracles_ros.plan_types import PlanAction


def test_sim_driver_from_settings_runs_a_step():
    driver = make_driver(
        "sim", speed_mps=2.0, time_scale=500.0, fail_steps=[1, 3], start_pose=[1.0, 2.0], holding="O3"
    )
    assert isinstance(driver, SimSpotDriver)
    assert driver.config.speed_mps == 2.0
    assert driver.config.fail_steps == frozenset({1, 3})
    assert driver.pose() == Pose(1.0, 2.0, 0.0, 0.0)
    assert driver.holding == "O3"
    driver.start()
    action = PlanAction("goto", ("P1", "P2"), "P2", (5.0, 2.0, 0.0), ((1.0, 2.0, 0.0), (5.0, 2.0, 0.0)), ("P1", "P2"))
    outcome = driver.execute(action, cancel=CancelToken(), timeout_s=60.0)
    assert outcome.ok
    assert outcome.pose.distance_to((5.0, 2.0, 0.0)) < 1e-6
    assert outcome.reached_symbol == "P2"


def test_sim_defaults_are_the_simulator_defaults():
    driver = make_driver("sim", node=object())  # a node is accepted and not needed
    assert isinstance(driver, SimSpotDriver)
    assert driver.config == SimConfig()
    assert driver.pose() == Pose(0.0, 0.0, 0.0, 0.0)


def test_unknown_kind_lists_the_choices():
    with pytest.raises(ConfigError, match="choose one of sim, spot_ros2"):
        make_driver("turtlebot")


def test_unknown_setting_is_named_with_the_accepted_ones():
    with pytest.raises(ConfigError) as raised:
        make_driver("sim", speed=2.0)
    assert "speed" in str(raised.value)
    assert "speed_mps" in str(raised.value)


@pytest.mark.parametrize(
    ("kind", "settings", "named"),
    [
        ("sim", {"speed_mps": -1.0}, "speed_mps must be >= 0.001"),
        ("sim", {"speed_mps": True}, "speed_mps must be a number"),
        ("sim", {"fail_probability": 1.5}, "fail_probability must be <= 1.0"),
        ("sim", {"seed": 1.5}, "seed must be a whole number"),
        ("sim", {"fail_steps": ["two"]}, "fail_steps"),
        ("sim", {"fail_steps": [-1]}, "fail_steps"),
        ("sim", {"start_pose": [1.0]}, "start_pose must be 2 to 4 numbers"),
        ("sim", {"holding": 3}, "holding must be a string"),
        ("spot_ros2", {"frame": "map"}, "frame must be one of odom, vision"),
        ("spot_ros2", {"map_to_frame": [0.0, 0.0]}, "map_to_frame must be 3 to 4 numbers"),
        ("spot_ros2", {"sit_on_shutdown": 1}, "sit_on_shutdown must be true or false"),
        ("spot_ros2", {"spot_name": "my spot"}, "spot_name"),
    ],
)
def test_bad_values_are_refused_naming_the_setting(kind, settings, named):
    with pytest.raises(ConfigError, match=named):
        make_driver(kind, **settings)


def test_spot_ros2_needs_the_node():
    with pytest.raises(ConfigError, match="node"):
        make_driver("spot_ros2", spot_name="spot")


def test_spot_ros2_without_its_packages_is_a_driver_error(ros_domain_id):
    with ros_session(ros_domain_id):
        node = rclpy.create_node("factory_probe")
        try:
            try:
                driver = make_driver("spot_ros2", node=node, spot_name="spot", frame="vision")
            except DriverError as exc:
                assert "spot_msgs" in str(exc)
            else:  # on a robot workstation with spot_ros2 built
                assert driver.name == "spot_ros2"
        finally:
            node.destroy_node()


def test_spot_settings_become_the_config():
    values = checked_settings("spot_ros2", {"arrival_tolerance_m": 0.2, "map_to_frame": [1, 2, 0.5, 0.1]})
    assert values["arrival_tolerance_m"] == 0.2
    assert values["map_to_frame"] == [1, 2, 0.5, 0.1]
    assert values["frame"] == "odom"


@pytest.mark.parametrize(
    ("kind", "config", "extra"),
    [
        ("sim", SimConfig(), {"start_pose", "holding", *SIM_HYDRA_SETTINGS}),
        ("spot_ros2", SpotConfig(), {"spot_name", "holding"}),
    ],
)
def test_every_config_field_is_a_setting_with_the_same_default(kind, config, extra):
    table = {setting.name: setting for setting in SETTINGS[kind]}
    fields = {field.name for field in dataclasses.fields(config)}
    assert set(table) == fields | extra
    for name in fields - {"fail_steps", "map_to_frame"}:
        assert table[name].default == getattr(config, name), name
        assert table[name].description


def test_kinds():
    assert DRIVER_KINDS == ("sim", "spot_ros2")


def _heavy_modules_after(code: str) -> list[str]:
    """bosdyn / grpc modules a fresh interpreter holds after running ``code``."""
    probe = code + "\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('bosdyn', 'grpc')))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


def test_the_sim_driver_and_the_dispatcher_node_import_neither_bosdyn_nor_grpc():
    assert _heavy_modules_after(
        "from heracles_ros.execution.driver_factory import make_driver\n"
        "import heracles_ros.nodes.dispatcher\n"
        "make_driver('sim').shutdown()\n"
    ) == []
    # The probe sees them when they are imported: the spot_ros2 adapter needs bosdyn.
    assert any(m.startswith("bosdyn") for m in _heavy_modules_after("import heracles_ros.execution.spot_ros2"))


def test_the_simulated_hydra_is_asked_for_by_a_world_only():
    assert sim_hydra_settings(checked_settings("sim", {})) is None
    settings = sim_hydra_settings(checked_settings("sim", {"world": "/w.json", "dsg_topic": "/a/hydra/backend/dsg"}))
    assert settings is not None and settings.world == "/w.json" and settings.dsg_topic == "/a/hydra/backend/dsg"
    assert settings.sensor_range_m == 3.0 and settings.hydra_period_s == 1.0
    with pytest.raises(ConfigError, match="sim_dsg_topic must not be empty"):
        sim_hydra_settings(checked_settings("sim", {"world": "/w.json", "dsg_topic": " "}))
    assert isinstance(make_driver("sim", world="/w.json"), SimSpotDriver)  # the driver ignores the world's settings
