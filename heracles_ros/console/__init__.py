"""The operator console: a web page (map, conversation, approval, STOP) served by a ROS client of the system.

``heracles console`` (or the ``console`` executable of the launch files) runs
:mod:`.app`; the page's assets ship in ``heracles_ros/data/console/``. The wire
protocol between page and server is :mod:`.protocol`.
"""
