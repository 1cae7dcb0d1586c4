"""``python -m heracles_ros.cli``: the same as the ``heracles`` command."""
import sys

from heracles_ros.cli import main

sys.exit(main())
