"""Search for what the map lacks: rooms ranked by how likely they hold it, walked until it is seen."""
