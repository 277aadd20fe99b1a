"""Waiting on several sockets at once, the trio way: :class:`merge`.

libzmq's ``zmq_poll`` (pyzmq's ``Poller``) asks which sockets are ready, then the
program reads them. In trio the usual answer is one task per socket in a nursery;
:class:`merge` is the other one, for a single loop over the messages of several
sockets, each tagged with its socket.

Rules:

* Nothing is buffered beyond what the sockets themselves hold: a message is taken
  from a socket only when the loop asks for the next one, so the sockets' HWMs keep
  pushing back on their peers while the loop is busy.
* Fair: the sockets are tried in turn from where the last message came from, so a
  busy socket does not starve a quiet one.
* Cancellation loses nothing: receives are trio checkpoints that either happen or
  not. When all the sockets are empty, one receive per socket waits in a nursery of
  its own for as long as the ``__anext__`` call; the first message ends the wait,
  and a message another socket delivered meanwhile is kept for the next call
  (also when the wait itself was cancelled).
* A socket that is closed drops out; the loop ends when none is left.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import trio

from ._errors import NotSupportedError

if TYPE_CHECKING:
    from ._socket import Socket

__all__ = ["merge"]


class merge:  # lower case: used like a function, ``async for sock, frames in merge(a, b)``
    """An async iterator of ``(socket, frames)``: the messages of several sockets.

    The messages of ``sockets`` as they arrive, fairly, with nothing buffered and
    nothing lost to cancellation: a message is taken from a socket only when the
    loop asks for the next one, and the sockets are tried in turn from the one after
    the last that gave. A socket that closes drops out; the iteration ends when none
    is left.

    Args:
        *sockets: the sockets to receive from, at least one, each once; every one
            must be able to receive.

    Yields:
        ``(socket, frames)``: the socket a message came from, and its frames.

    Raises:
        TypeError: for no socket, a socket given twice, or something that is not a
            trizmq socket.
        trizmq.NotSupportedError: for a socket that cannot receive (a PUSH, a PUB).

    Example::

        async with trizmq.Pull(bind=...) as jobs, trizmq.Sub(connect=..., subscribe=b"") as control:
            async for sock, frames in trizmq.merge(jobs, control):
                if sock is control:
                    ...
    """

    def __init__(self, *sockets: Socket) -> None:
        from ._socket import Socket

        if not sockets:
            raise TypeError("merge() needs at least one socket")
        for sock in sockets:
            if not isinstance(sock, Socket):
                raise TypeError(f"merge() takes trizmq sockets, not {type(sock).__name__}")
            if not sock._strategy.can_recv:
                raise NotSupportedError(f"a {sock.socket_type} socket cannot receive")
        if len(set(map(id, sockets))) != len(sockets):
            raise TypeError("merge() takes each socket once")
        self._sockets: list[Socket] = list(sockets)
        #: where the next look starts (the socket after the last one that gave)
        self._cursor = 0
        #: messages a wait delivered beyond the first, for the next calls
        self._pending: deque[tuple[Socket, list[bytes]]] = deque()

    def __aiter__(self) -> merge:
        return self

    async def __anext__(self) -> tuple[Socket, list[bytes]]:
        if self._pending:
            await trio.lowlevel.checkpoint()
            return self._pending.popleft()
        await trio.lowlevel.checkpoint_if_cancelled()
        found = self._take_ready()
        if found is not None:
            # not a cancel point: the message is taken, it must be returned
            await trio.lowlevel.cancel_shielded_checkpoint()
            return found
        got: list[tuple[Socket, list[bytes]]] = []
        try:
            async with trio.open_nursery() as nursery:
                for sock in list(self._sockets):
                    nursery.start_soon(self._wait_on, sock, got, nursery.cancel_scope)
        finally:
            self._pending.extend(got)
        if not self._pending:
            raise StopAsyncIteration
        return self._pending.popleft()

    def _take_ready(self) -> tuple[Socket, list[bytes]] | None:
        """The next message already queued, trying the sockets in turn."""
        sockets = self._sockets
        count = len(sockets)
        for step in range(count):
            index = (self._cursor + step) % count
            sock = sockets[index]
            try:
                frames = sock.recv_multipart_nowait()
            except trio.WouldBlock:
                continue
            except trio.ClosedResourceError:
                continue  # the wait below drops it
            self._cursor = index + 1
            return sock, frames
        return None

    async def _wait_on(
        self, sock: Socket, got: list[tuple[Socket, list[bytes]]], scope: trio.CancelScope
    ) -> None:
        try:
            frames = await sock.recv_multipart()
        except trio.ClosedResourceError:
            self._sockets.remove(sock)
            self._cursor = 0
            return
        got.append((sock, frames))
        scope.cancel()
        index = self._sockets.index(sock)
        if len(got) == 1:
            self._cursor = index + 1
