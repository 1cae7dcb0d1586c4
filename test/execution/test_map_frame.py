"""map->odom sources: the fixed one, message conversion and the staleness rule (TF itself: see test_spot_ros2)."""
from __future__ import annotations

import math
import time

import pytest
import rclpy
from bosdyn.client.math_helpers import Quat, SE3Pose
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Transform
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.parameter import Parameter
from support.ros import ros_session

from heracles_ros.errors import ExecutionError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.map_frame import (
    FixedMapFrame,
    check_age,
    check_fresh,
    stamp_seconds,
    transform_from_msg,
)


def test_a_fixed_map_frame_is_the_configured_transform():
    transform = sc.SE2Transform(x=1.0, y=2.0, yaw=0.5)
    source = FixedMapFrame(transform)
    assert source.current() is transform
    assert "fixed" in source.description


def test_a_transform_message_becomes_the_pose_of_odom_in_the_map():
    msg = Transform()
    msg.translation.x, msg.translation.y, msg.translation.z = 10.0, 5.0, 0.3
    msg.rotation.z, msg.rotation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)
    transform = transform_from_msg(msg)
    assert (transform.x, transform.y, transform.yaw, transform.z) == pytest.approx((10.0, 5.0, math.pi / 2, 0.3))
    # A point 4 m ahead of odom's origin along odom's x lies 4 m north of (10, 5) in the map.
    assert transform.to_map((4.0, 0.0, 0.0)) == pytest.approx((10.0, 9.0, 0.3))


@settings(deadline=None)
@given(
    translation=st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-10.0, 10.0)),
    yaw=st.floats(-math.pi, math.pi),
    point=st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-10.0, 10.0)),
)
def test_any_map_to_odom_message_takes_odom_points_where_bosdyn_puts_them(translation, yaw, point):
    # bosdyn's SE3Pose (its own quaternion arithmetic) is the reference for the TF convention:
    # map->odom is the pose of odom in the map, and takes a point given in odom into the map.
    quat = Quat.from_yaw(yaw)
    msg = Transform()
    msg.translation.x, msg.translation.y, msg.translation.z = translation
    msg.rotation.x, msg.rotation.y, msg.rotation.z, msg.rotation.w = quat.x, quat.y, quat.z, quat.w
    transform = transform_from_msg(msg)
    expected = SE3Pose(*translation, quat).transform_point(*point)
    assert transform.to_map(point) == pytest.approx(expected, abs=1e-6)
    assert transform.to_frame(expected) == pytest.approx(point, abs=1e-6)


def test_a_transform_older_than_the_limit_is_stale():
    check_age(100.0, 104.9, 5.0, "map->odom")
    with pytest.raises(ExecutionError, match=r"map->odom transform is stale: last one is 6.0 s old \(limit 5 s\)"):
        check_age(100.0, 106.0, 5.0, "map->odom")
    check_age(0.0, 1e6, 0.0, "map->odom")  # 0: any age


def test_stamp_seconds():
    class Stamp:
        sec, nanosec = 12, 500_000_000

    assert stamp_seconds(Stamp()) == pytest.approx(12.5)


def test_a_stamp_is_judged_on_the_wall_clock_whatever_the_nodes_clock_says(ros_domain_id):
    """use_sim_time can be switched on from outside; a simulated clock that stands still must not make an old
    transform look fresh (nor a fresh one stale)."""
    with ros_session(ros_domain_id):
        node = rclpy.create_node("freshness_probe", parameter_overrides=[Parameter("use_sim_time", value=True)])
        try:
            assert node.get_clock().now().nanoseconds == 0  # no /clock: simulated time stands at zero
            sec, nanosec = divmod(time.time_ns(), 1_000_000_000)
            check_fresh(Time(sec=sec, nanosec=nanosec), 1.0, "map->odom")
            with pytest.raises(ExecutionError, match=r"map->odom transform is stale: last one is (2\.\d|3\.0) s old"):
                check_fresh(Time(sec=sec - 2, nanosec=nanosec), 1.0, "map->odom")
        finally:
            node.destroy_node()
