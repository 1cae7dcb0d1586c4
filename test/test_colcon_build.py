"""The package builds with colcon in a ROS 2 workspace, as on the robot.

The ROS prefix here is the set-up environment (ROS 2 Kilted from PyPI wheels);
on the robot it is /opt/ros/<distro>. The build generates the msg/srv, installs
the library next to them, the node executables where ``ros2 run`` and launch
files look, and launch/config under share/. The test-only ``hydra_msgs``
package under test/ must never be built (COLCON_IGNORE).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_colcon_builds_the_package_and_not_the_test_interfaces(tmp_path: Path) -> None:
    colcon = shutil.which("colcon")
    assert colcon, "colcon is installed by ./run.sh (requirements-dev.txt)"
    prefix = Path(sys.prefix)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "heracles_ros").symlink_to(REPO)
    env = {**os.environ, "AMENT_PREFIX_PATH": str(prefix), "CMAKE_PREFIX_PATH": str(prefix)}
    listed = subprocess.run([colcon, "list", "--names-only"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert listed.stdout.split() == ["heracles_ros"], listed.stdout + listed.stderr

    build = subprocess.run(
        [colcon, "build", "--event-handlers", "console_cohesion-", "--cmake-args",
         f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]

    install = tmp_path / "install" / "heracles_ros"
    for executable in ("dsg_mirror", "language_server", "dispatcher", "console", "heracles"):
        assert os.access(install / "lib" / "heracles_ros" / executable, os.X_OK), executable
    share = install / "share" / "heracles_ros"
    assert (share / "launch" / "heracles.launch.py").is_file()
    assert {p.name for p in (share / "config").glob("*.yaml")} >= {
        "dsg_mirror.yaml", "language_server.yaml", "dispatcher.yaml"
    }
    assert not list(tmp_path.glob("install/hydra_msgs*")) and not list(install.rglob("hydra_msgs"))

    # The installed library and its generated messages import together, from the install tree only.
    site = next(install.glob("lib/python3*/site-packages"))
    probe = subprocess.run(
        [sys.executable, "-c",
         "import heracles_ros, heracles_ros.msg, heracles_ros.srv, heracles_ros.planning.planner as p;"
         "print(heracles_ros.msg.Plan.__name__, heracles_ros.srv.Ask.__name__, p.__file__)"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
    )
    assert probe.returncode == 0, probe.stderr
    name_plan, name_ask, planner_file = probe.stdout.split()
    assert (name_plan, name_ask) == ("Plan", "Ask")
    assert planner_file.startswith(str(site))
    assert (Path(planner_file).parents[1] / "data" / "domain.pddl").is_file()
