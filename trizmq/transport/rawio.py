"""Direct non-blocking system calls on a connected socket stream: the runtime's hot path.

trio's :class:`trio.SocketStream` reschedules the calling task after every system
call that succeeded at once (``receive_some`` and ``send_all`` end with a
``cancel_shielded_checkpoint``), so each read or write costs a full scheduler pass,
~10 µs here, on top of the system call. A request-reply round trip makes four of
them on each side. :class:`RawSocket` lets the connection's reader and writer call
``recv``/``send`` on the socket themselves and wait with
:func:`trio.lowlevel.wait_readable`/:func:`~trio.lowlevel.wait_writable` only when
the call would block, so that they reschedule only when there is nothing to do (and
where they choose to, for fairness: see the reader and writer in
``trizmq.nursery.engine``).

It works on a duplicate of the stream's file descriptor, a standard-library socket
in non-blocking mode, so the trio stream keeps owning the connection: waits are on
the stream's own descriptor (closing the stream wakes them with
``trio.ClosedResourceError``), and :meth:`RawSocket.close` releases the duplicate.
Only POSIX sockets get one; anything else (the ``trizmq.testing`` virtual network's
streams, Windows) keeps trio's stream calls.

A second task may wait on the duplicate (:meth:`RawSocket.wait_readable_too`)
while the reader waits on the original: both wake when data arrives, and whichever
runs first reads it. A receiving task uses this to read the connection itself
instead of waiting for the reader to hand it a message (see ``ReadThrough`` in
``trizmq.nursery.engine``); :meth:`RawSocket.interrupt` ends that wait early.
"""

from __future__ import annotations

import os
import socket

import trio

__all__ = ["RawSocket"]


class RawSocket:
    """Non-blocking ``recv``/``send`` on a duplicate of a socket stream's descriptor."""

    __slots__ = ("_dup", "_fd", "_sock", "closed", "recv", "send")

    def __init__(self, stream: trio.SocketStream) -> None:
        tsock = stream.socket
        self._fd = tsock.fileno()
        dup = os.dup(self._fd)
        try:
            self._sock = socket.socket(tsock.family, tsock.type, tsock.proto, fileno=dup)
        except BaseException:
            os.close(dup)
            raise
        self._sock.setblocking(False)
        self._dup = dup
        #: True once :meth:`close` released the duplicate
        self.closed = False
        #: ``recv(max_bytes) -> bytes``; raises ``BlockingIOError`` when nothing is there
        self.recv = self._sock.recv
        #: ``send(data) -> int``; raises ``BlockingIOError`` when the kernel buffer is full
        self.send = self._sock.send

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> RawSocket | None:
        """A :class:`RawSocket` for a POSIX socket stream, else None (use the stream)."""
        if os.name != "posix" or type(stream) is not trio.SocketStream:
            return None
        try:
            return cls(stream)
        except OSError:
            return None

    async def wait_readable(self) -> None:
        """Park until the socket has data (or an EOF/error) to read."""
        await trio.lowlevel.wait_readable(self._fd)

    async def wait_writable(self) -> None:
        """Park until the socket can take more data."""
        await trio.lowlevel.wait_writable(self._fd)

    async def wait_readable_too(self) -> None:
        """Park until the socket has data, waiting on the duplicate descriptor, so that
        one task may wait here while another waits in :meth:`wait_readable`.

        Raises ``trio.ClosedResourceError`` when :meth:`interrupt` or :meth:`close`
        ends the wait.
        """
        if self.closed:
            await trio.lowlevel.checkpoint()  # a caller that loops still yields
            raise trio.ClosedResourceError("the connection has ended")
        await trio.lowlevel.wait_readable(self._dup)

    def interrupt(self) -> None:
        """Wake a task parked in :meth:`wait_readable_too` (a no-op if none is)."""
        if not self.closed:
            trio.lowlevel.notify_closing(self._dup)

    def close(self) -> None:
        """Release the duplicate descriptor (the stream still owns the connection).

        A task parked in :meth:`wait_readable_too` wakes with
        ``trio.ClosedResourceError``.
        """
        if not self.closed:
            self.closed = True
            trio.lowlevel.notify_closing(self._dup)
            self._sock.close()
