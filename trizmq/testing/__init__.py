"""Testing trizmq services: a virtual network with fault injection, and pytest fixtures.

Everything here runs on trio's clock, so with pytest-trio's ``autojump_clock``
fixture (a ``trio.testing.MockClock`` that jumps over idle time) heartbeat
timeouts, reconnect back-off and linger are tested in virtual time, without real
sleeps. The virtual network behaves like one machine (a bind on ``tcp://*:p`` is
reached at ``127.0.0.1`` and ``localhost``), and its faults (``cut``, ``stall``,
``delay``, ``drop``, ``refuse``) name a listener by any endpoint that reaches it and
check their arguments at the call.

The pytest plugin (registered as the ``trizmq`` entry point in the ``pytest11``
group, so it loads by itself once trizmq is installed) provides the
``virtual_network`` and ``zmq_sockets`` fixtures. They need pytest-trio, a test it
runs (``trio_mode = true``, or ``@pytest.mark.trio``), and for ``virtual_network``
the ``autojump_clock`` fixture among the test's arguments; a test that lacks one
fails at set-up saying which. See ``docs/testing.md``.
"""

from ._network import VirtualLink, VirtualNetwork, VirtualStream, open_virtual_network
from ._socket_factories import SocketFactory, open_socket_factory

__all__ = [
    "SocketFactory",
    "VirtualLink",
    "VirtualNetwork",
    "VirtualStream",
    "open_socket_factory",
    "open_virtual_network",
]
