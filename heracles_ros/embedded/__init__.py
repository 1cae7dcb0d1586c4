"""The embedded FalkorDB server behind ``--db embedded``: the server process (start, find, stop), the
maintenance of its files (compaction, rebuild) and its read replica. Its stores live in :mod:`heracles_ros.graphdb`."""
