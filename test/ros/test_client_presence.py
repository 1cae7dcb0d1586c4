"""Whether a goal's sender is gone: the bookkeeping on its own, and ClientPresence over a real ROS graph."""
from __future__ import annotations

import time

import rclpy
from support.ros import ros_session, wait_until

from heracles_ros.ros.client_presence import (
    Absences,
    ClientPresence,
    fully_qualified,
)


def test_a_name_is_lost_only_after_being_missing_for_the_whole_bound():
    absences = Absences(3.0)
    absences.observe({"/cli"}, ["/cli"], now=0.0)
    assert not absences.lost("/cli", now=10.0)  # present at the last look
    absences.observe(set(), ["/cli"], now=10.0)
    assert not absences.lost("/cli", now=12.9)
    absences.observe(set(), ["/cli"], now=12.0)  # still missing: the clock keeps running from 10
    assert absences.lost("/cli", now=13.0)


def test_a_name_seen_again_starts_over():
    absences = Absences(3.0)
    absences.observe(set(), ["/cli"], now=0.0)
    absences.observe({"/cli"}, ["/cli"], now=2.0)  # a discovery blip, not a departure
    absences.observe(set(), ["/cli"], now=2.5)
    assert not absences.lost("/cli", now=5.0)
    assert absences.lost("/cli", now=5.5)


def test_forgetting_a_name_and_the_plain_ros_settings():
    absences = Absences(1.0)
    absences.observe(set(), ["/cli"], now=0.0)
    absences.forget("/cli")
    absences.observe(set(), ["/cli"], now=5.0)
    assert not absences.lost("/cli", now=5.5)  # forgotten: missing since 5.0 only
    absences.observe(set(), [""], now=0.0)
    assert not absences.lost("", now=100.0)  # a goal that names no client is never lost
    off = Absences(0.0)
    off.observe(set(), ["/cli"], now=0.0)
    assert not off.lost("/cli", now=1e9)  # client_lost_s 0: plain ROS behaviour


def test_fully_qualified_names_match_rclpy():
    assert fully_qualified("cli", "/") == "/cli"
    assert fully_qualified("cli", "/spot") == "/spot/cli"


def test_a_client_node_destroyed_is_lost_after_the_bound(ros_domain_id):
    with ros_session(ros_domain_id):
        server = rclpy.create_node("server")
        client = rclpy.create_node("client", namespace="/spot")
        name = client.get_fully_qualified_name()
        presence = ClientPresence(server, 1.0)
        try:
            wait_until(lambda: name in {fully_qualified(n, ns) for n, ns in server.get_node_names_and_namespaces()},
                       10.0, "the client in the graph")  # fmt: skip
            assert not presence.lost(name)
            client.destroy_node()
            gone = time.monotonic()
            wait_until(lambda: presence.lost(name), 10.0, "the client to count as lost")
            assert time.monotonic() - gone >= 1.0 - 0.05  # not before the bound
            assert not presence.lost("")  # nobody named: never lost
            presence.lost_after_s = 0.0
            assert not presence.lost(name)
        finally:
            server.destroy_node()
