"""The one way a process that talks to the running system starts rclpy: :class:`ClientContext`.

The ``heracles`` command's ROS verbs, the client API, the console, the demo, ``heracles replay``,
``heracles up``'s look for a running system and the bench tools each hold one: a private rclpy
context (so it lives beside any other rclpy code of the process), rclpy's signal handler off (it would
shut the context down on Ctrl-C before a command could be cancelled), the short-lease Fast DDS profile
(a killed client leaves the graph in about a second, and its server then gives its goals up), one
node, and an executor spinning it in a background thread. :meth:`ClientContext.close` is bounded and
leaves the graph: rclpy's ``destroy_node`` leaves a node's action clients alone, and they keep the node
(and its DDS participant) alive, so the action clients made here are destroyed first.
"""
from __future__ import annotations

import contextlib
from typing import Any

from heracles_ros.ros.interfaces import Action

#: Seconds :meth:`ClientContext.close` gives the spinner to stop.
CLOSE_S = 2.0


class ClientContext:
    """A private rclpy context with one node, ``node_name`` (give it the process id where two processes must
    not share it: a server watches a client's node by name), spun in the background until :meth:`close`.

    ``namespace`` is the node's; ``domain_id`` and ``args`` (``--ros-args ...``) go to ``rclpy.init``;
    ``threads``: the executor's threads (1: rclpy's single-threaded executor), more for a process that hosts
    nodes of its own beside the client's (:meth:`host`); ``short_lease`` False keeps Fast DDS's own lease.
    """

    def __init__(self, node_name: str, *, namespace: str | None = None, domain_id: int | None = None,
                 args: list[str] | None = None, threads: int = 1, short_lease: bool = True):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        from heracles_ros.ros.spinner import BackgroundSpinner

        if short_lease:
            from heracles_ros.ros.fastdds_profile import use_fastdds_profile

            use_fastdds_profile()
        #: The private rclpy context (nodes hosted here are created in it).
        self.context: Any = rclpy.Context()
        options: dict[str, Any] = {} if domain_id is None else {"domain_id": domain_id}
        rclpy.init(args=args or [], context=self.context, signal_handler_options=SignalHandlerOptions.NO, **options)
        try:
            self.node: Any = rclpy.create_node(node_name, context=self.context, namespace=namespace or "",
                                               start_parameter_services=False, enable_rosout=False,
                                               use_global_arguments=False)
            if threads <= 1:
                self.executor: Any = SingleThreadedExecutor(context=self.context)
            else:
                from heracles_ros.ros.executor import NodeExecutor

                self.executor = NodeExecutor(num_threads=threads, context=self.context)
            self.executor.add_node(self.node)
        except BaseException:
            rclpy.try_shutdown(context=self.context)
            raise
        self._hosted: list[Any] = []
        self._action_clients: list[Any] = []
        self._closed = False
        self._spinner = BackgroundSpinner(self.executor, name=f"{node_name}-executor").start()

    def __enter__(self) -> ClientContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def action_client(self, action: Action, namespace: str | None = None, **options: Any) -> Any:
        """A client of ``action`` (in ``namespace``, else the node's own), destroyed before the node on close."""
        with self._spinner.between_spins():  # rclpy's ActionClient is seen by the executor before it is whole
            client = action.client(self.node, namespace=namespace, **options)
        self._action_clients.append(client)
        return client

    def host(self, node: Any) -> Any:
        """Spin another node of this context (the demo's own nodes); destroyed first on close, while the executor
        still serves what its closing needs (a running plan is cancelled)."""
        self._hosted.append(node)
        self.executor.add_node(node)
        return node

    def close(self, timeout_s: float = CLOSE_S) -> None:
        """Destroy the hosted nodes, stop spinning (within ``timeout_s``), destroy the action clients and the node,
        and shut the context down: the process has left the graph. A second call does nothing."""
        import rclpy

        if self._closed:
            return
        self._closed = True
        for node in reversed(self._hosted):
            self.executor.remove_node(node)
            with contextlib.suppress(Exception):  # a node that failed half-way still goes
                node.destroy_node()
        self._spinner.stop(timeout_s)
        for client in self._action_clients:
            client.destroy()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
