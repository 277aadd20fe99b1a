"""Write-through: a connection's writes without trio's stream calls, and the socket's
sending task writing for an idle writer.

The rules it bends: one writer owns a stream's output, and writes through trio's
stream calls. :class:`RawOutput` is the writer's output on a
:class:`~.direct_io.RawSocket` (direct ``send``/``sendmsg``, waiting in trio only
when the kernel's buffer is full). While the writer is idle, the first message the
socket's sending task routes to it (once between two waits or yields of the
socket) is encoded and written by that task itself, after routing, with one
non-blocking call (:meth:`RawOutput.write_now`, :meth:`RawOutput.write_queue_now`);
what the kernel does not take goes back to the writer, a message begun as the bytes
still owed. Encrypted connections too: the task writes only while the writer is
parked with nothing queued and sends what it encodes at once, so CURVE's nonces go
out in the order they were taken. A publisher's batches are held back instead (see
``instrument``) and written several at a time with one ``sendmsg``
(:meth:`RawOutput.flush`).

The portable path (``TRIZMQ_FASTPATH=0``) leaves every write to the writer on
trio's stream: the tests of ``tests/nursery/test_direct_io.py`` not marked
``fastpath`` (big frames written whole, a half-written message dropped with its
connection) and ``tests/test_batch.py`` run on both paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import trio
from trio.lowlevel import enable_ki_protection

from ...zmtp.queue_items import Fanout
from ..waiters import Waiters

if TYPE_CHECKING:
    from ...zmtp.encoding import Buffer
    from ...zmtp.outbound import Outbound, Transmit
    from ..parents import ConnectionCodec
    from .direct_io import RawSocket

__all__ = ["RawOutput", "WritingSocket"]


class WritingSocket(Protocol):
    """A socket's fast-path state (``FastPath``, in ``socket_state``), as a
    connection's write-through sees it: whether the sending task may write for an
    idle writer (``write_through_allowed``, ``write_through_ready``), how many writers
    are idle, whether the task is routing now, the outputs it owes a write-through
    after routing, and the pass in which it last published a batch (read where
    batches are held back: ``instrument.PublishingSocket``)."""

    write_through_allowed: bool
    write_through_ready: bool
    idle_writers: int

    @property
    def routing(self) -> bool: ...

    @property
    def published_in_pass(self) -> int: ...

    @property
    def writes_due(self) -> list[RawOutput]: ...


class RawOutput:
    """A connection writer's writes on a :class:`RawSocket`, and its write-through.

    The encoding is the connection's outbound half's (:class:`Outbound`); this only
    decides when the sending task may write and makes the non-blocking calls.
    """

    __slots__ = ("_fast", "_idle", "_parked", "_pipe", "actor", "outbound", "raw")

    #: big frames may go out from the sender's own object (the outbound half writes
    #: them so where the encoding is shared: plain ZMTP, the header apart)
    zero_copy = True

    def __init__(
        self, raw: RawSocket, actor: ConnectionCodec, fast: WritingSocket, outbound: Outbound
    ) -> None:
        self.raw = raw
        self.actor = actor
        self._fast = fast
        self._pipe = actor.peer.out_pipe
        self._idle = Waiters()
        #: True while the writer is parked idle, counted in ``FastPath.idle_writers``
        self._parked = False
        #: the connection's outbound half, which its writer shares
        self.outbound = outbound

    async def write(self, data: Buffer) -> None:
        """Write all of ``data``."""
        await self.raw.send_all(data)

    async def pause(self) -> None:
        """Between two batches written at once: let other tasks run."""
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def idle(self) -> None:
        """Wait for work; meanwhile the sending task may write through."""
        pipe = self._pipe
        if pipe:
            await trio.lowlevel.checkpoint()
            return
        fast = self._fast
        fast.idle_writers += 1
        fast.write_through_allowed = fast.write_through_ready = True
        self._parked = True
        pipe.on_readable = self._on_work
        try:
            await self._idle.park()
        finally:
            pipe.on_readable = None
            if self._parked:  # cancelled: nobody woke us
                self._unpark()

    def _on_work(self) -> None:
        fast = self._fast
        if fast.routing and fast.write_through_allowed:
            fast.writes_due.append(self)
        else:
            self.wake()

    def _unpark(self) -> None:
        self._parked = False
        fast = self._fast
        fast.idle_writers -= 1
        fast.write_through_ready = fast.write_through_allowed and fast.idle_writers > 0

    def wake(self) -> None:
        """Wake the idle writer: the work is its (it is idle no more)."""
        if self._parked:
            self._unpark()
            self._idle.unpark_all()

    @enable_ki_protection
    def write_queue_now(self) -> bool:
        """Write what the sending task just queued to the idle writer's pipe, with one
        non-blocking call from that task; True when all of it went out.

        As :meth:`write_now`, for a batch: up to ``WRITE_BATCH`` bytes of
        messages, stopping at a big frame or a command, which the writer takes (a
        publisher's batches are held back instead and written by :meth:`flush`). Whatever the
        kernel did not take stays queued, a message begun as the bytes still owed.
        """
        if self.actor.codec.closed:
            return False
        self._fast.write_through_allowed = self._fast.write_through_ready = False
        pipe = self._pipe
        transmit = pipe.encode_head(self.outbound.encode_messages)
        if not transmit.used:
            return False
        return self._send(transmit)

    def _send(self, transmit: Transmit) -> bool:
        """Write ``transmit``, encoded from the head of the queue, with one call; the
        queue keeps what the kernel did not take. True when it is empty then."""
        parts = transmit.parts
        try:
            sent = self.raw.send(parts[0]) if len(parts) == 1 else self.raw.sendmsg(parts)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        return self._pipe.sent(transmit, sent)

    def holdable(self) -> bool:
        """Does the queue begin with a published batch whose encoding this connection
        shares (what may be held back, for :meth:`flush` to write with others)?"""
        head = self._pipe.peek()
        return self.outbound.share and head.__class__ is Fanout and head.run is not None

    @enable_ki_protection
    def flush(self) -> None:
        """Write what was held back, the published batches queued whole with one
        call (their shared encodings, one buffer each); the writer takes what the
        kernel does not, and whatever else is queued."""
        if not self._parked:
            return  # the writer is at work (or gone): the queue is its
        if not self._write_runs():
            self.wake()

    def _write_runs(self) -> bool:
        """The queue's leading whole runs written with one ``sendmsg``; True when the
        queue is empty afterwards."""
        pipe = self._pipe
        if not pipe or self.actor.codec.closed:
            return False
        transmit = pipe.encode_head(self.outbound.encode_runs)
        if transmit is None:
            return self.write_queue_now()
        return self._send(transmit)

    @enable_ki_protection
    def write_now(self) -> bool:
        """Write the message just queued to the idle writer's empty pipe, from the
        sending task; True when it went out whole and nothing else waits.

        The message stays at the head until the kernel took it: the item came and
        goes within one routing step, so no wake-up is owed to anyone for it.
        """
        pipe = self._pipe
        item = pipe.peek()
        if self.actor.codec.closed:
            return False
        encoded = self.outbound.encode_message(item)
        if encoded is None:
            return False
        wire, payload = encoded
        fast = self._fast
        fast.write_through_allowed = fast.write_through_ready = False
        try:
            sent = self.raw.send(wire)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        return pipe.sent_alone(wire, sent, payload)
