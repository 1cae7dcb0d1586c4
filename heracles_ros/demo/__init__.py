"""``heracles demo``: the whole system on the bundled example scene, in one process.

The library parts (goal choice, plotting, LLM detection) import without
rclpy; :mod:`heracles_ros.demo.session` brings the nodes up and needs it.
"""
