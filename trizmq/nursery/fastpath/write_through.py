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
out in the order they were taken. A publisher's batches are corked instead (see
``instrument``) and written several at a time with one ``sendmsg``
(:meth:`RawOutput.flush`).

The portable path (``TRIZMQ_FASTPATH=0``) leaves every write to the writer on
trio's stream: the tests of ``tests/nursery/test_direct_io.py`` not marked
``fastpath`` (big frames written whole, a half-written message dropped with its
connection) and ``tests/test_batch.py`` run on both paths.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import islice
from operator import itemgetter
from typing import TYPE_CHECKING, Protocol

import trio
from trio.lowlevel import enable_ki_protection

from ...patterns.sockets.base import Fanout
from ...zmtp.encoding import Buffer
from ..waiters import Waiters
from .framing import BIG_FRAME, RUN_BYTES, _short_headers, _split_sent, leading_runs, run_sealer

if TYPE_CHECKING:
    from ..parents import ConnectionCodec
    from .direct_io import RawSocket

__all__ = ["WRITE_BATCH", "RawOutput", "WritingSocket"]

#: a write-through of a batch stops gathering messages past this many bytes
WRITE_BATCH = 64 * 1024

#: a message's first frame (its only one, for the runs a mechanism seals)
_first = itemgetter(0)


class WritingSocket(Protocol):
    """A socket's fast-path state (``FastPath``, in ``routing``), as a connection's
    write-through sees it: whether the sending task may write for an idle writer
    (``allowed``, ``armed``), how many writers are idle, whether the task is routing
    now, the outputs it owes a write-through after routing, and the pass in which it
    last published a batch (read by the corks: ``instrument.PublishingSocket``)."""

    allowed: bool
    armed: bool
    idle: int

    @property
    def routing(self) -> bool: ...

    @property
    def fed_at(self) -> int: ...

    @property
    def pending(self) -> list[RawOutput]: ...


class RawOutput:
    """A connection writer's writes on a :class:`RawSocket`, and its write-through."""

    __slots__ = (
        "_encode_into",
        "_fast",
        "_framing",
        "_idle",
        "_parked",
        "_pipe",
        "_share",
        "_short_below",
        "actor",
        "raw",
    )

    def __init__(self, raw: RawSocket, actor: ConnectionCodec, fast: WritingSocket) -> None:
        self.raw = raw
        self.actor = actor
        self._fast = fast
        self._pipe = actor.peer.out_pipe
        self._idle = Waiters()
        #: True while the writer is parked idle, counted in ``FastPath.idle``
        self._parked = False
        codec = actor.codec
        #: do a publisher's shared encodings (Fanout wires) fit this connection?
        self._share = codec.shares_encoding
        self._encode_into = codec.message_encoder()
        #: what a frame of a message under 265 bytes adds around its payload on the
        #: wire (ZMTP: its header, and CURVE's box), and the wire size under which a
        #: message's payload is worked out from it: 265, or 0 (never) where the codec
        #: has no such constant
        framing = codec.short_frame_overhead()
        self._framing = framing or 0
        self._short_below = 0 if framing is None else 265

    @property
    def zero_copy(self) -> bool:
        """Big frames go out from the sender's own object (plain ZMTP only: the
        header is written apart from the frame)."""
        return self._share

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
        fast.idle += 1
        fast.allowed = fast.armed = True
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
        if fast.routing and fast.allowed:
            fast.pending.append(self)
        else:
            self.wake()

    def _unpark(self) -> None:
        self._parked = False
        fast = self._fast
        fast.idle -= 1
        fast.armed = fast.allowed and fast.idle > 0

    def wake(self) -> None:
        """Wake the idle writer: the work is its (it is idle no more)."""
        if self._parked:
            self._unpark()
            self._idle.unpark_all()

    @enable_ki_protection
    def write_queue_now(self) -> bool:
        """Write what the sending task just queued to the idle writer's pipe, with one
        non-blocking call from that task; True when all of it went out.

        As :meth:`write_now`, for a batch: up to :data:`WRITE_BATCH` bytes of
        messages, stopping at a big frame or a command, which the writer takes (a
        publisher's batches are corked instead and written by :meth:`flush`). Whatever the
        kernel did not take stays queued, a message begun as the bytes still owed.
        """
        items = self._pipe._items
        if self.actor.codec.closed:
            return False
        self._fast.allowed = self._fast.armed = False
        share = self._share
        encode_into = self._encode_into
        short = _short_headers(encode_into)
        buf = bytearray()
        ends: list[int] = []
        # each message's payload bytes, for the counts of what goes out
        sizes: list[int] = []
        batch: Iterable[object] = items
        seal_run = run_sealer(self.actor.codec.mechanism, encode_into)
        if seal_run is not None:
            # a run of short one-frame messages boxed in the mechanism's loop (CURVE),
            # as the writer does
            used = seal_run(buf, items, 0, WRITE_BATCH, ends)
            if used:
                sizes = list(map(len, map(_first, islice(items, used))))  # type: ignore[arg-type]
            if len(buf) >= WRITE_BATCH:
                batch = ()
            elif used:
                batch = islice(items, used, None)
        for item in batch:
            cls = item.__class__
            if cls is list:
                last = item[-1]  # type: ignore[index]
                size = len(last)
                if size < 256 and short is not None and len(item) == 1:  # type: ignore[arg-type]
                    # the commonest: encode_plain_into's work, inline (as the writer)
                    buf += short[size]
                    buf += last
                    sizes.append(size)
                elif size < BIG_FRAME:
                    encode_into(buf, item)  # type: ignore[arg-type]
                    sizes.append(sum(map(len, item)))  # type: ignore[call-overload]
                else:
                    break
            elif cls is Fanout:
                wire = item.wire  # type: ignore[attr-defined]
                if not share:
                    encode_into(buf, item.frames)  # type: ignore[attr-defined]
                elif wire is None:
                    start = len(buf)
                    encode_into(buf, item.frames)  # type: ignore[attr-defined]
                    item.wire = bytes(buf[start:])  # type: ignore[attr-defined]
                else:
                    buf += wire
                sizes.append(item.size)  # type: ignore[attr-defined]
            else:
                break
            ends.append(len(buf))
            if len(buf) >= WRITE_BATCH:
                break
        return bool(ends) and self._send_owed(items, ends, buf, sizes)

    def corkable(self) -> bool:
        """Does the queue begin with a published batch whose encoding this connection
        shares (what a cork may hold back and :meth:`flush` write with others)?"""
        head = self._pipe._items[0]
        return self._share and head.__class__ is Fanout and head.run is not None

    @enable_ki_protection
    def flush(self) -> None:
        """Write what a cork held back, the published batches queued whole with one
        call (their shared encodings, one buffer each); the writer takes what the
        kernel does not, and whatever else is queued."""
        if not self._parked:
            return  # the writer is at work (or gone): the queue is its
        if not self._write_runs():
            self.wake()

    def _write_runs(self) -> bool:
        """The queue's leading whole runs written with one ``sendmsg``; True when the
        queue is empty afterwards."""
        items = self._pipe._items
        if not items or self.actor.codec.closed:
            return False
        runs, wires, total, count = leading_runs(items, self._encode_into, RUN_BYTES)
        if not wires:
            return self.write_queue_now()
        try:
            sent = self.raw.sendmsg(wires)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        pipe = self._pipe
        if len(items) > pipe.peak:
            pipe.peak = len(items)
        if sent == total and count == len(items):
            items.clear()
            pipe.passed += count
            pipe.octets += sum([run.payload for run in runs])
            return True
        ends: list[int] = []
        base = 0
        cut, cut_at = b"", 0  # the wire the write stopped in, and where it begins
        for run, wire in zip(runs, wires, strict=True):
            ends += [base + end for end in run.ends]
            if base <= sent < base + len(wire):
                cut, cut_at = wire, base
            base += len(wire)
        # a message cut short lies in one run's wire: its rest is sliced from there,
        # not from a copy of every wire (with many subscribers left behind at once,
        # those copies were most of what a publisher allocated)
        left = _split_sent(items, ends, cut, sent, cut_at)
        pipe.passed += left
        for run in runs:
            if left < run.count:
                pipe.octets += run.payload_of(left)
                break
            pipe.octets += run.payload
            left -= run.count
        return not items

    def _send_owed(
        self, items: deque[object], ends: list[int], buf: Buffer, sizes: list[int]
    ) -> bool:
        """Write ``buf``, the first ``len(ends)`` queued items encoded (their payload
        bytes in ``sizes``), with one call; what went out leaves the queue (see
        :func:`_split_sent`) and is counted. True when the queue is empty then."""
        try:
            sent = self.raw.send(buf)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        pipe = self._pipe
        if len(items) > pipe.peak:
            pipe.peak = len(items)
        if sent == len(buf) and len(ends) == len(items):
            items.clear()
            pipe.passed += len(ends)
            pipe.octets += sum(sizes)
            return True
        left = _split_sent(items, ends, buf, sent)
        pipe.passed += left
        pipe.octets += sum(sizes[:left])
        return not items

    @enable_ki_protection
    def write_now(self) -> bool:
        """Write the message just queued to the idle writer's empty pipe, from the
        sending task; True when it went out whole and nothing else waits.

        It works on the pipe's deque directly: the item came and goes within one
        routing step, so no wake-up is owed to anyone for it.
        """
        items = self._pipe._items
        item = items[0]
        fanout: Fanout | None = None
        if item.__class__ is list:
            frames: list[bytes] = item
        elif item.__class__ is Fanout:
            fanout = item
            frames = item.frames
        else:
            return False
        if self.actor.codec.closed or len(frames[-1]) >= BIG_FRAME:
            return False
        fast = self._fast
        fast.allowed = fast.armed = False
        buf = bytearray()
        self._encode_into(buf, frames)
        try:
            sent = self.raw.send(buf)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        if fanout is not None and fanout.wire is None and self._share:
            fanout.wire = bytes(buf)
        # it left the queue (whole, or begun): counted as the writer counts
        pipe = self._pipe
        pipe.passed += 1
        wire = len(buf)
        if fanout is not None:
            pipe.octets += fanout.size
        elif wire < self._short_below:
            pipe.octets += wire - self._framing * len(frames)  # every frame short
        else:
            pipe.octets += sum(map(len, frames))
        if not pipe.peak:
            pipe.peak = 1  # the message was queued alone, to an empty pipe
        if sent < wire:
            # the rest belongs to this connection only: never resent on another
            items[0] = bytes(buf[sent:])
            return False
        items.popleft()
        return not items
