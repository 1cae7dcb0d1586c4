"""The ROS plumbing every process of the package shares: node base, servers, clients, executor, parameters, QoS."""
