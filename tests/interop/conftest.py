"""Fixtures of the interoperability suite: a libzmq context per test, endpoints per transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from .libzmq import Endpoints, LibzmqSocket


@pytest.fixture
def zmq_ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    """A pyzmq context of the test's own; every socket still open is closed at the end."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        yield ctx
    finally:
        ctx.destroy(linger=0)


@pytest.fixture
def libzmq(zmq_ctx: zmq.Context[zmq.Socket[bytes]]) -> Iterator[Callable[[int], LibzmqSocket]]:
    """Factory: ``libzmq(zmq.PULL)`` opens a libzmq socket with timeouts and linger set.

    The fixture keeps every socket it made and closes them at the end of the test.
    """
    made: list[LibzmqSocket] = []

    def factory(socket_type: int) -> LibzmqSocket:
        made.append(LibzmqSocket(zmq_ctx, socket_type))
        return made[-1]

    yield factory
    for sock in made:
        sock.close()


@pytest.fixture(params=["tcp", "ipc"])
def endpoints(request: pytest.FixtureRequest, tmp_path: Path) -> Endpoints:
    """Endpoints of one transport (tcp on loopback, ipc in the test's short tmp dir)."""
    return Endpoints(request.param, tmp_path)
