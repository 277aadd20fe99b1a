"""The trizmq pytest plugin: fixtures for testing services built on trizmq.

Loaded by itself through the ``pytest11`` entry point once trizmq is installed.
Fixtures (async, for pytest-trio):

``virtual_network``
    a :class:`~trizmq.testing.VirtualNetwork` installed for the test's ``trio.run``:
    every tcp/ipc endpoint of every socket goes through it, with fault injection.
``zmq_sockets``
    a :class:`~trizmq.testing.SocketFactory`: ``pull = await zmq_sockets(trizmq.Pull,
    bind="tcp://127.0.0.1:0")`` returns an entered socket closed after the test.

Combine them with pytest-trio's ``autojump_clock`` to run timers in virtual time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ._network import VirtualNetwork, open_virtual_network
from ._sockets import SocketFactory, open_socket_factory

__all__ = ["virtual_network", "zmq_sockets"]


@pytest.fixture
async def virtual_network() -> AsyncIterator[VirtualNetwork]:
    """An in-memory network with fault injection for this test's trio run."""
    async with open_virtual_network() as network:
        yield network


@pytest.fixture
async def zmq_sockets() -> AsyncIterator[SocketFactory]:
    """A factory of trizmq sockets that close themselves after the test."""
    async with open_socket_factory() as factory:
        yield factory
