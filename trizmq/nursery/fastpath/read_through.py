"""Read-through: a receiving task reads its only peer's connection itself.

The rule it bends: one reader task owns a connection's input. A task that would
park in a receive, on a socket whose only peer is a live connection with nothing
queued, waits on the connection's descriptor (a duplicate, see
:meth:`~.direct_io.RawSocket.wait_readable_too`) and parses what arrives itself
while the reader stands by: one scheduler pass instead of two per message. The
reader is woken to watch the connection again only when the task has not come back
to wait by the time trio's run loop next waits for I/O (see ``instrument``): a task
that receives in a loop never wakes it.

The portable path (``TRIZMQ_FASTPATH=0``) always parks the task with the socket's
receivers and leaves the reading to the reader: ``tests/test_sockets.py`` and the
tests of ``tests/nursery/test_hostile_peers.py`` not marked ``fastpath`` (a peer's
close, its protocol violations, a cancelled receive) run on both paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import trio
from trio.lowlevel import enable_ki_protection

from ...zmtp import ProtocolError
from ..handshake_io import RECEIVE_SIZE
from ..waiters import Waiters
from .instrument import io_wait_hook

if TYPE_CHECKING:
    from ..parents import ReadThroughParent
    from .instrument import IoWaitHook

__all__ = ["ReadThrough", "SharedSocket"]

_current_task = trio.lowlevel.current_task


class SharedSocket(Protocol):
    """A connection's socket (``RawSocket``, in ``direct_io``), as a read-through
    uses it while the reader waits on it too: a second wait, its interruption, and
    the non-blocking read."""

    @property
    def recv(self) -> Callable[[int], bytes]:
        """``recv(max_bytes)``; raises ``BlockingIOError`` when nothing is there."""
        ...

    async def wait_readable_too(self) -> None:
        """Park until the socket has data; ``trio.ClosedResourceError`` when
        interrupted or closed."""
        ...

    def interrupt(self) -> None:
        """End a wait in :meth:`wait_readable_too`."""
        ...


class ReadThrough:
    """A receiving task's way to read its only peer's connection itself.

    The task waits on the connection's socket (:meth:`wait`) and reads and parses
    what arrives (:meth:`read` does one turn of the reader's loop). The reader
    stands by meanwhile (:meth:`stand_by`): were both parked on the socket, the
    reader would wake for every message too and read it first half of the time.
    Whenever the task stops waiting, for any reason, the reader looks at the socket
    again unless the task waits once more, so one of them always watches. The end of
    the stream, an error or a protocol violation met here ends the connection
    exactly as the reader would.
    """

    __slots__ = ("_hook", "_raw", "_reader", "actor", "ended", "peer", "reader_wake_due", "waiting")

    def __init__(self, actor: ReadThroughParent, raw: SharedSocket) -> None:
        self.actor = actor
        self.peer = actor.peer
        self._raw = raw
        #: set once :meth:`read` met the end of the connection: read it no more
        self.ended = False
        #: the receiving task parked in :meth:`wait`, if one is (one at a time)
        self.waiting: trio.lowlevel.Task | None = None
        self._reader = Waiters()
        #: the task left a wait with data and the reader still stands by: it is woken
        #: before trio next waits for I/O unless the task waits again first
        self.reader_wake_due = False
        self._hook: IoWaitHook | None = None

    async def wait(self) -> None:
        """Park until the connection has data; ``trio.ClosedResourceError`` when
        :meth:`interrupt` is called or the connection ends meanwhile.

        Whenever the wait ends, the reader looks at the socket again unless the task
        waits once more first: at once when the wait failed, else before trio's run
        loop next waits for I/O (:class:`IoWaitHook`).
        """
        task = _current_task()
        self.waiting = task
        self.reader_wake_due = False
        try:
            await self._raw.wait_readable_too()
        except BaseException:
            if self.waiting is task:
                self.waiting = None
            self._reader.unpark_all()
            raise
        if self.waiting is task:
            self.waiting = None
        if self._reader._tasks:
            self.reader_wake_due = True
            owing = self._hook
            if owing is None:
                owing = self._hook = io_wait_hook()
            owing.readers_due.append(self)

    def interrupt(self) -> None:
        """Wake the task parked in :meth:`wait`; a no-op when none is."""
        if self.waiting is not None:
            self.waiting = None
            self._raw.interrupt()

    async def stand_by(self) -> None:
        """The reader's wait while a receiving task waits on the socket for it."""
        await self._reader.park()

    @enable_ki_protection
    def read(self) -> None:
        """Read what the socket holds now and hand its messages on, as the reader
        would (protected from ``KeyboardInterrupt``, like the reader: a Ctrl-C between
        the read and the parse would lose bytes from the middle of the stream)."""
        if self.ended:
            return
        actor = self.actor
        try:
            data = self._raw.recv(RECEIVE_SIZE)
        except BlockingIOError:
            return  # the reader was first
        except OSError as exc:
            actor.log_lost(exc)
            self._end()
            return
        if not data:
            actor.log_closed()
            self._end()
            return
        try:
            actor.received(data)
        except ProtocolError as exc:
            actor.refuse(exc)
            self._end()

    def _end(self) -> None:
        self.ended = True
        self.actor.close()
