"""Hydra's scene graphs as they arrive: payloads, their checks and decoding, tables, synthetic scenes."""

#: Where Hydra-ROS publishes its snapshots (``hydra_msgs/DsgUpdate``): the mirror's default ``dsg_topic``,
#: absolute as Hydra's own launch files have it.
HYDRA_DSG_TOPIC = "/hydra/backend/dsg"
