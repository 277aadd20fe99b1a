"""Socket factories for tests: sockets that close themselves when the test ends.

Strategy: a socket's nursery belongs to the task that entered it, and pytest-trio
runs each fixture in a task of its own. So the factory does not enter sockets in
the caller's task; it starts one holder task per socket in its own nursery, which
enters the socket, hands it over with ``task_status.started`` and keeps it open
until the factory closes. A bind error on entry is raised to the caller as itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import trio

from .._socket import Socket

__all__ = ["SocketFactory", "open_socket_factory"]

S = TypeVar("S", bound=Socket)


class SocketFactory:
    """Makes entered sockets; all of them are closed when the factory closes.

    Call it as ``await factory(trizmq.Pull, bind="tcp://127.0.0.1:5555")``. Each
    socket is entered in a task of the factory's nursery, not in the caller's, so
    it stays open across tasks (pytest-trio runs each fixture in a task of its
    own) until :meth:`close`. Made by :func:`open_socket_factory` or the
    ``zmq_sockets`` fixture.

    Args:
        nursery: The nursery whose tasks hold the sockets open.
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._closing = trio.Event()
        #: every socket made, in order
        self.sockets: list[Socket] = []

    async def __call__(self, socket_type: type[S], **options: object) -> S:
        """Create and enter ``socket_type(**options)``; it closes with the factory.

        Args:
            socket_type: The socket class, such as ``trizmq.Pull``.
            **options: The socket's keyword arguments (``bind=``, ``connect=``,
                options).

        Returns:
            The entered socket.

        Raises:
            OSError: If a ``bind=`` fails (an address in use, for instance); any other
                error from entering the socket is raised as itself too.
        """
        sock = socket_type(**options)
        await self._nursery.start(self._hold, sock)
        self.sockets.append(sock)
        return sock

    async def _hold(self, sock: Socket, task_status: trio.TaskStatus[None]) -> None:
        async with sock:
            task_status.started()
            await self._closing.wait()

    def close(self) -> None:
        """Close every socket made (each flushing for its ``linger``)."""
        self._closing.set()


@asynccontextmanager
async def open_socket_factory() -> AsyncIterator[SocketFactory]:
    """A :class:`SocketFactory` whose sockets close when the block ends.

    Yields:
        The factory; at the end of the block every socket it made is closed (each
        flushing for its ``linger``).
    """
    async with trio.open_nursery() as nursery:
        factory = SocketFactory(nursery)
        try:
            yield factory
        finally:
            factory.close()
