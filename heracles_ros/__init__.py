"""heracles_ros: plain-language questions and commands over a live Hydra scene graph.

The generated ROS interfaces (``heracles_ros.msg``, ``heracles_ros.srv``, ``heracles_ros.action``) are
installed by rosidl into a *different* directory with the same package name
(site-packages of the ROS prefix); extending ``__path__`` lets one import name
serve both the library and its messages, whichever copy is found first.
"""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
__version__ = "0.1.0"
