"""Direct socket I/O: a connection's reads without trio's stream calls.

The rule it bends: a stream is read through trio's ``SocketStream``, whose calls
reschedule the calling task after every system call that succeeded at once (~10 µs
here on top of the call). :class:`RawSocket` calls ``recv``/``send`` on the stream's
own socket (or a duplicate of its descriptor) and waits in trio's
``wait_readable``/``wait_writable`` only when a call would block; :class:`RawInput`
is the reader's loop on it. Only POSIX socket streams get it; anything else (the
virtual network's streams) keeps trio's stream calls.

The portable path (``TRIZMQ_FASTPATH=0``, :meth:`RawSocket.of` gives None) reads
through trio's stream: the tests of ``tests/nursery/test_direct_io.py`` not marked
``fastpath`` (a libzmq peer's request-reply alternation, a flooded reader that
still lets other tasks run, a half-written message dropped with its connection)
run on both paths.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Protocol

import trio

from .. import fastpath
from ..handshake_io import RECEIVE_SIZE
from .trio_probe import stdlib_socket

if TYPE_CHECKING:
    from ...zmtp.encoding import Buffer
    from ..pipe import Pipe
    from .read_through import ReadThrough

__all__ = ["LOOK_AGAIN_AFTER", "RawInput", "RawSocket", "ReceivingSocket"]

#: scheduler passes a reader lets go by before it reads again after handing on a message
LOOK_AGAIN_AFTER = 2


class RawSocket:
    """Non-blocking ``recv``/``send`` straight on a socket stream's own socket.

    The trio stream keeps owning the connection: waits are on the stream's
    descriptor (closing the stream wakes them with ``trio.ClosedResourceError``),
    and calls on a closed stream fail with ``OSError``. A second task may wait for
    input (:meth:`wait_readable_too`) while the reader waits on the stream: that
    wait is on a duplicate descriptor, made the first time it is needed (only a
    socket with a single peer reads through), so a crowd of connections costs one
    descriptor each; where the calls go through a socket object of its own (a trio
    that keeps no stdlib socket), that one is on a duplicate already and serves.
    :meth:`interrupt` ends that wait early; :meth:`close` releases the duplicate.
    """

    __slots__ = ("_dup", "_fd", "_own", "_sock", "closed", "recv", "send", "sendmsg")

    def __init__(self, stream: trio.SocketStream) -> None:
        tsock = stream.socket
        self._fd = tsock.fileno()
        # the stdlib socket under trio's (non-blocking already); where a trio keeps
        # it elsewhere, a socket object of our own on a duplicate does the same
        inner = stdlib_socket(tsock)
        self._own = inner is None
        if inner is not None:
            sock = inner
        else:
            sock = socket.socket(tsock.family, tsock.type, tsock.proto, fileno=os.dup(self._fd))
        sock.setblocking(False)
        self._sock: socket.socket = sock
        # a socket of our own is on a duplicate already: a second reader waits there
        self._dup: int | None = sock.fileno() if self._own else None
        #: True once :meth:`close` released the duplicate
        self.closed = False
        #: ``recv(max_bytes) -> bytes``; raises ``BlockingIOError`` when nothing is there
        self.recv = sock.recv
        #: ``send(data) -> int``; raises ``BlockingIOError`` when the kernel buffer is full
        self.send = sock.send
        #: ``sendmsg(buffers) -> int``: several buffers with one call, likewise
        self.sendmsg = sock.sendmsg

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> RawSocket | None:
        """A :class:`RawSocket` for a POSIX socket stream, else None (use the stream)."""
        if not fastpath.ENABLED or os.name != "posix" or type(stream) is not trio.SocketStream:
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
        """Park until the socket has data, on the duplicate descriptor, so that one
        task may wait here while another waits in :meth:`wait_readable`.

        Raises ``trio.ClosedResourceError`` when :meth:`interrupt` or :meth:`close`
        ends the wait.
        """
        dup = self._dup
        if dup is None and not self.closed and self._sock.fileno() == self._fd:
            dup = self._dup = os.dup(self._fd)
        if self.closed or dup is None:
            await trio.lowlevel.checkpoint()  # a caller that loops still yields
            raise trio.ClosedResourceError("the connection has ended")
        await trio.lowlevel.wait_readable(dup)

    def interrupt(self) -> None:
        """Wake a task parked in :meth:`wait_readable_too` (a no-op if none is)."""
        if not self.closed and self._dup is not None:
            trio.lowlevel.notify_closing(self._dup)

    def close(self) -> None:
        """Release the duplicate descriptor, if one was made (the stream still owns
        the connection, and the socket under it)."""
        if not self.closed:
            self.closed = True
            dup, self._dup = self._dup, None
            if dup is not None:
                trio.lowlevel.notify_closing(dup)
                if not self._own:
                    os.close(dup)
            if self._own:
                self._sock.close()

    async def send_all(self, data: Buffer) -> None:
        """Write all of ``data`` with direct calls, waiting only when blocked."""
        view = memoryview(data)
        send = self.send
        while view:
            try:
                sent = send(view)
            except BlockingIOError:
                await self.wait_writable()
                continue
            view = view[sent:]


class ReceivingSocket(Protocol):
    """A socket's fast-path state (``FastPath``, in ``socket_state``), as a connection's
    reader sees it: the table of the read-throughs its receiving tasks may take, by
    peer."""

    @property
    def readers(self) -> dict[object, ReadThrough]: ...


class RawInput:
    """A connection reader's reads on a :class:`RawSocket`.

    A short read means the socket was drained, so the next read waits first; a full
    read yields (a checkpoint) and reads again, so a flood never starves other tasks.
    After handing on a message, it lets the woken task run and looks once more
    before sleeping in epoll, as trio's own streams do after every call: a reply
    written meanwhile is read without a wake-up from the kernel.
    """

    __slots__ = ("_fast", "_ready", "raw", "read_through")

    def __init__(self, raw: RawSocket, read_through: ReadThrough, fast: ReceivingSocket) -> None:
        self.raw = raw
        self.read_through = read_through
        self._fast = fast
        self._ready = True

    def start(self) -> None:
        """Offer read-through to the socket's receiving tasks from now on."""
        self._fast.readers[self.read_through.peer] = self.read_through

    def stop(self) -> None:
        """Withdraw read-through and release the duplicate descriptor."""
        readers, peer = self._fast.readers, self.read_through.peer
        if readers.get(peer) is self.read_through:
            del readers[peer]
        self.raw.close()

    async def receive(self) -> bytes | bytearray:
        """The next bytes (b"" at the end).

        Raises :class:`_InputEnded` when a receiving task already ended the connection.
        """
        read_through = self.read_through
        raw = self.raw
        while True:
            if not self._ready:
                if read_through.waiting is not None:
                    await read_through.stand_by()
                    continue
                await raw.wait_readable()
            if read_through.ended:
                raise _InputEnded
            try:
                return raw.recv(RECEIVE_SIZE)
            except BlockingIOError:
                self._ready = False

    async def after(self, size: int, pipe: Pipe) -> None:
        """What follows a read of ``size`` bytes whose messages went to ``pipe``."""
        self._ready = size == RECEIVE_SIZE
        if self._ready:
            await trio.lowlevel.checkpoint()
        elif pipe:
            for _ in range(LOOK_AGAIN_AFTER):
                await trio.lowlevel.checkpoint()
            self._ready = True


class _InputEnded(Exception):
    """A receiving task reading the connection itself met its end first.

    Private: the reader catches it (``reader.py``); it never reaches the application.
    """
