"""The sending half of a connection, sans I/O: queue items in, wire buffers out.

Beside :meth:`Connection.receive_data <trizmq.zmtp.connection.Connection.receive_data>`
(bytes in, events out) sits this: an :class:`Outbound` takes the items of a peer's
outgoing queue (``trizmq.zmtp.queue_items``) and hands back a :class:`Transmit`:
the buffers to write, how many of the items they hold, the messages and payload
bytes among them, and, where a write may stop short, where each item ends in them,
so that a partial write splits cleanly (:meth:`Transmit.split`). It is the one
place where queued items become bytes and where ZMTP's framing arithmetic (a frame
under 256 bytes has a 2-byte header, so a message under 265 bytes on the wire has
only short frames) is worked out for what leaves. Its drivers do the I/O: the
connection's writer task (``trizmq.nursery.writer``) and the sending task's
write-through (``trizmq.nursery.fastpath.write_through``). The models are h11's
``_writers.py`` and omq.rs's ``Connection::poll_transmit``.

Strategy, per way in:

* :meth:`Outbound.encode`, the writer's: whatever a batch holds, up to
  :data:`WRITE_BATCH` bytes. Published batches queued whole (:class:`FanoutRun`)
  go out as their one shared encoding (:func:`leading_runs`); a publisher's queue
  of :class:`Fanout` messages that another writer encoded already is joined at C
  speed; on unencrypted ZMTP a batch of short one-frame messages is framed with
  two comprehensions and one join (:func:`frame_short_messages`, ~60 ns a message
  against ~145 for a loop); a mechanism that boxes a run of short one-frame messages
  in one loop (CURVE) does so (:func:`run_sealer`); a frame of :data:`BIG_FRAME`
  bytes or more is written from the sender's own object, not copied
  (:func:`encode_big`); commands go through the codec.
* :meth:`Outbound.encode_messages`, the write-through's: the messages at the head
  of a queue, each one's end recorded, stopping at anything the writer must take
  (a command, a big frame, the rest of a message begun, a hangup). It is the
  writer's loop (``Outbound._encode``) told so: one encode loop for both drivers.
* :meth:`Outbound.encode_message`: one message alone (a request, a reply).
* :meth:`Outbound.encode_runs`: the published batches at the head, as their shared
  encodings, one buffer each (several go with one ``sendmsg``).

Every encoding here is the codec's byte for byte
(``tests/zmtp/test_outbound.py``, on both paths).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, islice
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .encoding import Buffer, encode_plain_into
from .events import Cancel, Join, Leave, Ping, Pong, Subscribe
from .frames import LONG_HEADER, MORE, SHORT_HEADERS, frame_header
from .queue_items import Fanout, FanoutRun, Hangup, Unsent

if TYPE_CHECKING:
    from .mechanism import Mechanism

__all__ = [
    "BIG_FRAME",
    "RUN_BYTES",
    "SHORT_HEADER",
    "WRITE_BATCH",
    "WRITE_ITEMS",
    "Framer",
    "Outbound",
    "Transmit",
    "encode_run",
    "frame_short_messages",
    "leading_runs",
]

#: a writer stops gathering messages into one write past this many bytes
WRITE_BATCH = 64 * 1024
#: a writer takes at most this many queued items for one write
WRITE_ITEMS = 1024
#: frames at least this big are written from the caller's object, not copied
BIG_FRAME = 64 * 1024
#: a published batch is encoded into one shared buffer up to this many bytes
RUN_BYTES = 256 * 1024
#: the header of a short frame (its flags and its one-byte size)
SHORT_HEADER = len(SHORT_HEADERS[0][0])
#: under this many bytes on the wire every frame of a message is short (a frame of
#: 256 bytes or more has a 9-byte header: 265 at least)
SHORT_WIRE = 265

#: the header of a last (or only) frame of each short size
_LAST_SHORT = SHORT_HEADERS[0]
#: the header of a last (or only) frame of 256 bytes or more, packed
_pack_long = LONG_HEADER.pack
#: the flags of a last frame with a long header
_LAST_LONG = 0x02

MessageEncoder = Callable[[bytearray, Sequence[Buffer]], None]


class Framer(Protocol):
    """A connection's codec as its outbound half uses it (``trizmq.zmtp.Connection``,
    or another codec of the ``Codec`` protocol)."""

    @property
    def mechanism(self) -> Mechanism: ...

    @property
    def shares_encoding(self) -> bool: ...

    def message_encoder(self) -> MessageEncoder: ...

    def short_frame_overhead(self) -> int | None: ...

    def encode_subscribe(self, topic: bytes) -> bytes: ...

    def encode_cancel(self, topic: bytes) -> bytes: ...

    def encode_join(self, group: bytes) -> bytes: ...

    def encode_leave(self, group: bytes) -> bytes: ...

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes: ...

    def encode_pong(self, context: bytes) -> bytes: ...


_COMMAND_ENCODERS: dict[type, Callable[[Framer, Any], bytes]] = {
    Subscribe: lambda codec, cmd: codec.encode_subscribe(cmd.topic),
    Cancel: lambda codec, cmd: codec.encode_cancel(cmd.topic),
    Join: lambda codec, cmd: codec.encode_join(cmd.group),
    Leave: lambda codec, cmd: codec.encode_leave(cmd.group),
    Ping: lambda codec, cmd: codec.encode_ping(cmd.ttl, cmd.context),
    Pong: lambda codec, cmd: codec.encode_pong(cmd.context),
}


@attrs.define(eq=False, weakref_slot=False)
class Transmit:
    """What one step of an :class:`Outbound` made of the head of a queue.

    :attr:`parts` are the buffers to write, in order; they hold the first
    :attr:`used` items given (the others go back to the queue), among which
    :attr:`messages` messages of :attr:`payload` payload bytes. :attr:`pinged` says a
    PING is among them (the heartbeat times its answer from the write).

    A step whose write may stop short (the write-through's) records where each item
    ends in the buffers joined (:attr:`ends`) and what each message carries, so that
    :meth:`split` tells what a write of so many bytes took.
    """

    parts: list[Buffer]
    used: int
    messages: int
    payload: int
    pinged: bool = False
    #: where each item ends in the parts joined (a step that may be cut short)
    ends: list[int] | None = None
    #: per message, the payload bytes up to its end (encode_messages), or the runs
    #: it is made of (encode_runs)
    _payloads: list[int] | None = None
    _runs: list[FanoutRun] | None = None

    @property
    def size(self) -> int:
        """The bytes of :attr:`parts`."""
        return sum(map(len, self.parts))

    def split(self, sent: int) -> tuple[int, bytes | None]:
        """What a write of the first ``sent`` bytes took: how many of the items went
        out whole, and the bytes still owed for the one it cut (None when it stopped
        between two). Only for a step that recorded :attr:`ends`."""
        ends = self.ends
        if ends is None:
            ends = self.ends = self._run_ends()
        whole = bisect_right(ends, sent)
        if whole < len(ends) and sent > (ends[whole - 1] if whole else 0):
            return whole, self._rest(sent, ends[whole])
        return whole, None

    def _run_ends(self) -> list[int]:
        """Where each message of the runs ends in their wires joined: worked out only
        for a write cut short (a run of messages alike lists its ends lazily)."""
        runs = self._runs
        assert runs is not None, "only a step that records where its items end splits"
        ends: list[int] = []
        base = 0
        for run, wire in zip(runs, self.parts, strict=True):
            ends += [base + end for end in run.ends]
            base += len(wire)
        return ends

    def _rest(self, sent: int, end: int) -> bytes:
        """The bytes from ``sent`` to ``end`` of the parts joined, sliced from the part
        they lie in (a message lies in one), not from a copy of them all."""
        base = 0
        for part in self.parts:
            if sent < base + len(part):
                return bytes(part[sent - base : end - base])
            base += len(part)
        raise AssertionError("a cut lies within the parts")

    def payload_of(self, count: int) -> int:
        """The payload bytes of the first ``count`` messages."""
        if count >= self.messages:
            return self.payload
        payloads = self._payloads
        if payloads is not None:
            return payloads[count - 1] if count > 0 else 0
        runs = self._runs
        assert runs is not None
        total = 0
        for run in runs:
            if count < run.count:
                return total + run.payload_of(count)
            total += run.payload
            count -= run.count
        return total


class Outbound:
    """The sending half of one connection in traffic: see the module docstring.

    Made once the handshake is complete (the codec's encoder is its traffic one
    then). ``zero_copy``: big frames go out from the sender's own object (a writer
    whose output writes several buffers as they are: a stream's, with the header
    written apart from the frame, unencrypted only).
    """

    __slots__ = (
        "_big",
        "_codec",
        "_framing",
        "_seal_run",
        "_short",
        "_short_below",
        "encode_into",
        "share",
    )

    def __init__(self, codec: Framer, *, zero_copy: bool = False) -> None:
        self._codec = codec
        #: appends one message's wire form to a buffer (the codec's fastest form)
        self.encode_into: MessageEncoder = codec.message_encoder()
        #: True when a message's encoding serves every connection that shares
        #: encodings: a publisher's :class:`Fanout` keeps its bytes for the others
        self.share = codec.shares_encoding
        #: unencrypted ZMTP: a short one-frame message is framed here, from the table
        #: of headers by size, without the codec's call
        self._short = _LAST_SHORT if self.encode_into is encode_plain_into else None
        #: a mechanism that wraps a run of short one-frame messages in one loop (CURVE)
        self._seal_run = run_sealer(codec.mechanism, self.encode_into)
        self._big = BIG_FRAME if zero_copy and self.share else math.inf
        #: what a frame of a message under SHORT_WIRE bytes adds around its payload
        #: on the wire (ZMTP: its header, and CURVE's box), and the wire size under
        #: which a message's payload is worked out from it: SHORT_WIRE, or 0 (never)
        #: where the codec has no such constant
        framing = codec.short_frame_overhead()
        self._framing = framing or 0
        self._short_below = 0 if framing is None else SHORT_WIRE

    @property
    def zero_copy(self) -> bool:
        """Big frames go out from the sender's own object."""
        return self._big != math.inf

    # -- the writer's batch -------------------------------------------------------------
    def batch_limit(self, head: object) -> int:
        """How many items a writer takes for one :meth:`encode`, the queue beginning
        with ``head``: as many as a write of a publisher's messages like it takes
        (they are joined whole), else :data:`WRITE_ITEMS`."""
        if self.share and head.__class__ is Fanout and (head.run is None or head.index):
            wire = head.wire
            size = len(wire) if wire is not None else head.size
            return min(WRITE_ITEMS, WRITE_BATCH // (size + 1) + 1)
        return WRITE_ITEMS

    def encode(self, batch: list[Any]) -> Transmit:
        """The writer's step: ``batch`` (taken from the head of the queue, at least
        one item) as buffers of up to about :data:`WRITE_BATCH` bytes."""
        first = batch[0]
        if self.share and first.__class__ is Fanout:
            if first.run is not None and not first.index:
                # published batches queued whole: their shared encodings, as a
                # write-through's flush writes them
                runs, wires, _, count = leading_runs(batch, self.encode_into, WRITE_BATCH)
                if wires:
                    wire = wires[0] if len(wires) == 1 else b"".join(wires)
                    return Transmit([wire], count, count, sum([run.payload for run in runs]))
            # a publisher's queue: messages another writer has probably encoded
            # already, joined at C speed
            elif all(item.__class__ is Fanout for item in batch):
                joined = self._join_wires(batch)
                if joined is not None:
                    size = sum([item.size for item in batch])
                    return Transmit([joined], len(batch), len(batch), size)
        return self._encode(batch)

    def _join_wires(self, batch: list[Fanout]) -> bytes | None:
        """The wire bytes of a batch of :class:`Fanout` items, encoding those no other
        writer has; None when it holds more than two writes' worth (the general
        loop takes it then)."""
        wires = [item.wire for item in batch]
        if None in wires:
            encode_into = self.encode_into
            for i, wire in enumerate(wires):
                if wire is None:
                    buf = bytearray()
                    encode_into(buf, batch[i].frames)
                    wires[i] = batch[i].wire = bytes(buf)
        if sum(map(len, wires)) > 2 * WRITE_BATCH:  # type: ignore[arg-type]
            return None
        return b"".join(wires)  # type: ignore[arg-type]

    def _encode(
        self, batch: Sequence[Any], limit: int = WRITE_BATCH, ends: list[int] | None = None
    ) -> Transmit:
        """The one encode loop: the items of ``batch`` up to ``limit`` bytes, whatever
        they are (the writer's); with ``ends`` (the write-through's), messages only,
        each one's end and the payload so far recorded, stopping at anything the
        writer must take (a command, a big frame, the rest of a message begun...)."""
        codec, encode_into = self._codec, self.encode_into
        share, short = self.share, self._short
        # a step that may stop short leaves big frames to the writer
        big = self._big if ends is None else BIG_FRAME
        parts: list[Buffer] = []
        buf = bytearray()
        # the items taken, the payload bytes of the messages among them, and the items
        # that are not messages (the rest of a message begun, commands)
        used = octets = others = 0
        payloads: list[int] = []  # with ``ends``, the payload up to each message's end
        pinged = False
        items: Any = batch
        if short is not None and ends is None:
            # the commonest batch, short one-frame messages, at C speed
            framed = frame_short_messages(batch, short, limit)
            if framed is not None:
                wire, used = framed
                return Transmit([wire], used, used, len(wire) - SHORT_HEADER * used)
        if self._seal_run is not None:
            used, octets, payloads = self._sealed(buf, batch, limit, ends)
            items = () if len(buf) >= limit else islice(batch, used, None)
        for item in items:
            used += 1
            cls = item.__class__
            if cls is list:
                last = item[-1]
                size = len(last)
                if size >= big:  # written from the sender's own object, after this batch
                    if ends is None:
                        octets += sum(map(len, item))
                        encode_big(parts, buf, item)
                        buf = bytearray()
                    else:
                        used -= 1  # by the writer
                    break
                if len(item) == 1:
                    octets += size
                    if short is not None:
                        # the commonest: encode_plain_into's work, inline (a long
                        # header packed, as it packs it)
                        buf += short[size] if size < 256 else _pack_long(_LAST_LONG, size)
                        buf += last
                    else:
                        encode_into(buf, item)
                elif short is not None:
                    # several frames, unencrypted: under SHORT_WIRE bytes on the wire every
                    # header is 2 bytes (summing the frames' sizes costs ~120 ns more)
                    start = len(buf)
                    encode_into(buf, item)
                    grown = len(buf) - start
                    all_short = grown < SHORT_WIRE
                    octets += grown - SHORT_HEADER * len(item) if all_short else sum(map(len, item))
                else:
                    octets += sum(map(len, item))
                    encode_into(buf, item)
            elif cls is Fanout:
                if share and item.run is not None and not item.index and used > 1:
                    used -= 1  # a published batch begins: the next step writes it shared
                    break
                octets += item.size
                if not share:
                    encode_into(buf, item.frames)
                elif item.wire is not None:
                    buf += item.wire
                else:
                    start = len(buf)
                    encode_into(buf, item.frames)
                    item.wire = bytes(buf[start:])
            elif ends is not None:
                used -= 1  # not a message: the writer takes it
                break
            elif cls is Unsent:
                # the rest of a message this connection began to write
                others += 1
                buf += item
            elif cls is Hangup:
                used -= 1  # stays at the head: the writer closes once what is before it went
                break
            else:
                others += 1
                if cls is Ping:
                    pinged = True  # the heartbeat times its answer from the write
                buf += _COMMAND_ENCODERS[cls](codec, item)
            if ends is not None:
                ends.append(len(buf))
                payloads.append(octets)
            if len(buf) >= limit:
                break
        if buf:
            parts.append(buf)
        recorded = payloads if ends is not None else None
        return Transmit(parts, used, used - others, octets, pinged, ends, recorded)

    def _sealed(
        self, buf: bytearray, batch: Sequence[Any], limit: int, ends: list[int] | None
    ) -> tuple[int, int, list[int]]:
        """The stream of short one-frame messages at the head of ``batch``, wrapped in
        the mechanism's loop into ``buf``: how many, their payload bytes and, with
        ``ends``, the payload up to the end of each. Each box of a run is a 2-byte
        header and the mechanism's overhead around its payload."""
        assert self._seal_run is not None
        used = self._seal_run(buf, batch, 0, limit, ends)
        framing = self._framing
        if ends is None:
            return used, len(buf) - used * framing, []
        return used, len(buf) - used * framing, [e - framing * n for n, e in enumerate(ends, 1)]

    # -- the write-through's --------------------------------------------------------------
    def encode_messages(self, items: Sequence[Any], limit: int = WRITE_BATCH) -> Transmit:
        """The messages at the head of ``items`` (a queue the sending task just added
        to, read in place), up to ``limit`` bytes, each one's end recorded: a step a
        non-blocking write may take in part (:meth:`Transmit.split`). It stops at
        anything the writer must take: a command, a big frame, the rest of a
        message begun, a hangup."""
        return self._encode(items, limit, [])

    def encode_message(self, item: object) -> tuple[bytearray, int] | None:
        """One message alone (a queue's only item, written by the sending task): its
        wire bytes and its payload bytes, or None for anything else or a message
        with a big last frame (the writer's then). A publisher's :class:`Fanout`
        keeps its bytes for the other connections."""
        cls = item.__class__
        if cls is list:
            frames: list[bytes] = item  # type: ignore[assignment]
        elif cls is Fanout:
            frames = item.frames  # type: ignore[attr-defined]
        else:
            return None
        if len(frames[-1]) >= BIG_FRAME:
            return None
        buf = bytearray()
        self.encode_into(buf, frames)
        if cls is Fanout:
            if item.wire is None and self.share:  # type: ignore[attr-defined]
                item.wire = bytes(buf)  # type: ignore[attr-defined]
            return buf, item.size  # type: ignore[attr-defined]
        wire = len(buf)
        if wire < self._short_below:
            return buf, wire - self._framing * len(frames)  # every frame short
        return buf, sum(map(len, frames))

    def encode_runs(self, items: Sequence[Any], limit: int = RUN_BYTES) -> Transmit | None:
        """The published batches queued whole at the head of ``items`` (read in
        place), as their shared encodings, one buffer each, up to ``limit`` bytes;
        None when the head is not such a run (a run begun, or cut short by this
        connection's mark)."""
        runs, wires, _, count = leading_runs(items, self.encode_into, limit)
        if not wires:
            return None
        payload = sum([run.payload for run in runs])
        return Transmit(wires, count, count, payload, runs=runs)  # type: ignore[arg-type]


def leading_runs(
    items: Sequence[object], encode_into: MessageEncoder, limit: int
) -> tuple[list[FanoutRun], list[bytes], int, int]:
    """The published batches queued whole at the head of ``items``, with their shared
    encodings (made by the first connection that needs one), as far as ``limit``
    bytes: (runs, wires, bytes, messages). A run is whole where its first message
    is at its place and its last where the run must end: a run cut short for this
    connection by its mark, or begun by a write before, is not shared. A run's
    encoding may cover only its first messages (see :func:`encode_run`); the rest
    is left for the ordinary path."""
    runs: list[FanoutRun] = []
    wires: list[bytes] = []
    total = count = pos = 0
    queued = len(items)
    while pos < queued:
        first = items[pos]
        if first.__class__ is not Fanout:
            break
        run = first.run
        if run is None or first.index:
            break
        size = len(run.msgs)
        # indexing a deque costs a step per 64 items from its nearer end, not one
        # per item
        end = pos + size
        if end > queued:
            break
        last = items[end - 1]
        if last.__class__ is not Fanout or last.run is not run or last.index != size - 1:
            break
        pos = end
        wire = run.wire if run.wire is not None else encode_run(run, encode_into)
        if not wire:
            break
        runs.append(run)
        wires.append(wire)
        total += len(wire)
        count += run.count
        if run.count < size or total >= limit:
            break  # the rest of that run (big frames) or of the queue: later
    return runs, wires, total, count


def encode_run(run: FanoutRun, encode_into: MessageEncoder) -> bytes:
    """A published batch's shared encoding, made by the first connection that writes
    it whole (up to :data:`RUN_BYTES`, and not past a big frame), each message's end
    in ``run.ends``."""
    short = _LAST_SHORT if encode_into is encode_plain_into else None
    msgs = run.msgs
    if short is not None:
        framed = frame_short_messages(msgs, short, RUN_BYTES)
        if framed is not None:
            wire, count = framed
            run.encoded_alike(SHORT_HEADER, count)
            run.payload = len(wire) - SHORT_HEADER * count
            run.wire = wire
            return wire
    buf = bytearray()
    ends = run.ends
    octets = 0
    for frames in msgs:
        last = frames[-1]
        size = len(last)
        if size < 256 and short is not None and len(frames) == 1:
            # the commonest, framed inline; not held to RUN_BYTES one by one: a run
            # holds at most a chunk of ``send_many`` (256), so at most 64 KiB of these
            buf += short[size]
            buf += last
            octets += size
        elif size >= BIG_FRAME or len(buf) >= RUN_BYTES:
            break  # not copied for one write: the writers take the rest
        else:
            encode_into(buf, frames)
            octets += sum(map(len, frames))
        ends.append(len(buf))
    run.count = len(ends)
    run.payload = octets
    wire = run.wire = bytes(buf)
    return wire


def frame_short_messages(
    items: Sequence[object], short: Sequence[bytes], limit: int
) -> tuple[bytes, int] | None:
    """``items`` framed at C speed on unencrypted ZMTP, when every one is a
    one-frame message (a list) under 256 bytes: (the bytes, how many of the items
    they hold); None otherwise (the caller frames them one by one). As a loop that
    stops once its buffer holds ``limit`` bytes, the items are taken up to the
    first that brings the bytes to ``limit``.

    The commonest queue, framed without a Python step a message: the frames taken
    and their headers looked up (``short``, by size) in two comprehensions,
    interleaved by slice assignment, joined once: ~60 ns a message against ~145 for
    a loop that appends each to a buffer.
    """
    if not items:
        return None
    first = items[0]
    if first.__class__ is not list or len(first) != 1 or len(first[0]) >= 256:
        return None  # most likely a queue of other things: not looked through
    frames: list[bytes] = [item[0] for item in items if item.__class__ is list and len(item) == 1]
    if len(frames) != len(items):
        return None
    try:
        heads = [short[len(frame)] for frame in frames]
    except IndexError:  # a frame of 256 bytes or more
        return None
    count = len(frames)
    if sum(map(len, frames)) + SHORT_HEADER * count > limit:
        ends = list(accumulate([len(frame) + SHORT_HEADER for frame in frames]))
        count = bisect_left(ends, limit) + 1
        del frames[count:], heads[count:]
    parts = heads + frames
    parts[::2] = heads
    parts[1::2] = frames
    return b"".join(parts), count


def run_sealer(mechanism: Mechanism, encode_into: object) -> Callable[..., int] | None:
    """The mechanism's ``seal_run``, where it wraps a run of short one-frame messages in
    one loop (CURVE) and the codec's bytes are the mechanism's own (not inside
    WebSocket frames); None elsewhere."""
    if mechanism.runs and encode_into == mechanism.encode_message_into:
        return mechanism.seal_run
    return None


def encode_big(parts: list[Buffer], buf: bytearray, frames: Sequence[bytes]) -> None:
    """Queue ``buf`` and a message with a big last frame into ``parts``, copying no
    frame of :data:`BIG_FRAME` bytes or more."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        size = len(frame)
        buf += frame_header(MORE if i < last else 0, size)
        if size < BIG_FRAME:
            buf += frame
        else:
            parts.append(buf)
            parts.append(frame)
            buf = bytearray()
    if buf:
        parts.append(buf)
