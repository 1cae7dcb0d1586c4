"""Trying the whole system at a desk: ``heracles up`` (the local system in one command) and ``heracles replay``
(scene files or a recording of Hydra's topic, published to the running mirror)."""
