"""Testing trizmq services: a virtual network with fault injection, and pytest fixtures.

Everything here runs on trio's clock, so with pytest-trio's ``autojump_clock``
fixture (a ``trio.testing.MockClock`` that jumps over idle time) heartbeat
timeouts, reconnect back-off and linger are tested in virtual time, without real
sleeps. The pytest plugin (registered as the ``trizmq`` entry point in the
``pytest11`` group, so it loads by itself once trizmq is installed) provides the
``virtual_network`` and ``zmq_sockets`` fixtures; see ``docs/testing.md``.
"""

from ._network import VirtualLink, VirtualNetwork, VirtualStream, open_virtual_network
from ._sockets import SocketFactory, open_socket_factory

__all__ = [
    "SocketFactory",
    "VirtualLink",
    "VirtualNetwork",
    "VirtualStream",
    "open_socket_factory",
    "open_virtual_network",
]
