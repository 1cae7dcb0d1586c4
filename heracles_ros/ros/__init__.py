"""The ROS plumbing every process of the package shares: the table of interfaces, node base, single-goal server,
robot claims, client context, client presence, runner, executor, parameters, QoS."""
