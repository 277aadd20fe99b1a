"""The writer of one connection: the single owner of writes to its stream.

Strategy: drain the peer's outgoing pipe into as few writes as possible. Messages
are encoded into batches of up to :data:`WRITE_BATCH` bytes; a publisher's
message queued to several connections (a :class:`Fanout`) is encoded once, by the
first writer to meet it, and a run of them is joined at C speed; a published batch
queued whole (a :class:`~trizmq.patterns.sockets.base.FanoutRun`) is written from
its one shared encoding. Commands
(subscriptions, PING/PONG) are encoded by the codec. Writes go to an
:class:`~trizmq.nursery.parents.Output`: trio's ``send_all``
(:class:`StreamOutput`) or, on the fast path, direct system calls
(:class:`~trizmq.nursery.fastpath.write_through.RawOutput`), which also writes big frames from
the sender's own object and lets the sending task write while the writer is idle.
The writer sees its connection as a :class:`~trizmq.nursery.parents.WriterParent`.

Rule: the part of a message that one connection began to write belongs to that
connection only: if it ends, the part is dropped, never resent on the next one.

Counting: the writer counts the messages it takes out of the pipe, and their
payload bytes, once per batch (``Pipe.passed``/``Pipe.octets`` of an outgoing
pipe count what left it), from what each way of encoding knows already: a run's
payload, a framed batch's length less its headers, the sizes the loop reads.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, cast

import trio
from trio.lowlevel import enable_ki_protection

from ..patterns.sockets.base import Fanout, Hangup
from ..zmtp.encoding import Buffer, encode_plain_into
from ..zmtp.events import Cancel, Join, Leave, Ping, Pong, Subscribe
from ..zmtp.frames import LONG_HEADER, SHORT_HEADERS
from .fastpath.framing import (
    BIG_FRAME,
    SHORT_HEADER,
    encode_big,
    frame_short_messages,
    leading_runs,
    run_sealer,
)
from .reader import STREAM_ERRORS

if TYPE_CHECKING:
    from ..transport.base import Codec
    from .parents import WriterParent
    from .pipe import Pipe

__all__ = ["WRITE_BATCH", "WRITE_ITEMS", "StreamOutput", "run_writer"]

log = logging.getLogger("trizmq")

#: the writer stops gathering messages into one write past this many bytes
WRITE_BATCH = 64 * 1024
#: the writer takes at most this many queued items for one write
WRITE_ITEMS = 1024

_COMMAND_ENCODERS: dict[type, Callable[[Codec, Any], bytes]] = {
    Subscribe: lambda codec, cmd: codec.encode_subscribe(cmd.topic),
    Cancel: lambda codec, cmd: codec.encode_cancel(cmd.topic),
    Join: lambda codec, cmd: codec.encode_join(cmd.group),
    Leave: lambda codec, cmd: codec.encode_leave(cmd.group),
    Ping: lambda codec, cmd: codec.encode_ping(cmd.ttl, cmd.context),
    Pong: lambda codec, cmd: codec.encode_pong(cmd.context),
}


class StreamOutput:
    """Writes with trio's ``send_all``: the portable path."""

    __slots__ = ("_pipe", "_stream")

    zero_copy = False

    def __init__(self, stream: trio.abc.Stream, pipe: Pipe) -> None:
        self._stream = stream
        self._pipe = pipe

    async def write(self, data: Buffer) -> None:
        """``send_all``."""
        await self._stream.send_all(data)

    async def pause(self) -> None:
        """``send_all`` already yields."""

    async def idle(self) -> None:
        """Park on the pipe."""
        await self._pipe.wait_readable()


def join_wires(
    batch: list[Fanout], encode_into: Callable[[bytearray, Sequence[Buffer]], None]
) -> bytes | None:
    """The wire bytes of a batch of :class:`Fanout` items, encoding those no other
    writer has; None when it holds more than two writes' worth (the general loop
    takes it then)."""
    wires = [item.wire for item in batch]
    if None in wires:
        for i, wire in enumerate(wires):
            if wire is None:
                buf = bytearray()
                encode_into(buf, batch[i].frames)
                wires[i] = batch[i].wire = bytes(buf)
    if sum(map(len, wires)) > 2 * WRITE_BATCH:  # type: ignore[arg-type]
        return None
    return b"".join(wires)  # type: ignore[arg-type]


#: the header of a last (or only) frame of each short size
_LAST_SHORT = SHORT_HEADERS[0]
#: the header of a last (or only) frame of 256 bytes or more, packed
_pack_long = LONG_HEADER.pack
#: the flags of a last frame with a long header
_LAST_LONG = 0x02


class _Batcher:
    """Turns queued items into buffers to write, for one connection."""

    __slots__ = (
        "_actor",
        "_big",
        "_codec",
        "_encode_into",
        "_pipe",
        "_plain",
        "_seal_run",
        "_share",
    )

    def __init__(self, actor: WriterParent, codec: Codec, pipe: Pipe, zero_copy: bool) -> None:
        #: whose PINGs the heartbeat task times from their write
        self._actor = actor
        self._codec = codec
        self._pipe = pipe
        self._encode_into = codec.message_encoder()
        #: unencrypted ZMTP: a short one-frame message is framed here, without a call
        self._plain = self._encode_into is encode_plain_into
        #: a mechanism that wraps a run of short one-frame messages in one loop (CURVE)
        self._seal_run = run_sealer(codec.mechanism, self._encode_into)
        # a PUB's message for several subscribers is encoded once, unless encrypted
        self._share = codec.shares_encoding
        self._big = BIG_FRAME if zero_copy else math.inf

    def next_parts(self) -> list[Buffer]:
        """Take the next batch from the pipe; the buffers to write, in order."""
        pipe = self._pipe
        first = pipe.peek()
        if self._share and first.__class__ is Fanout:
            if first.run is not None and not first.index:
                # published batches queued whole: their shared encodings, as the
                # write-through's flush writes them
                runs, wires, _, count = leading_runs(
                    pipe._items, self._encode_into, WRITE_BATCH
                )
                if wires:
                    pipe.take(count)
                    pipe.passed += count
                    pipe.octets += sum([run.payload for run in runs])
                    return [wires[0] if len(wires) == 1 else b"".join(wires)]
            # a publisher's queue: a run of messages another writer has probably
            # encoded already, joined at C speed; as many as a write of such takes
            wire = first.wire
            size = len(wire) if wire is not None else sum(map(len, first.frames))
            batch = pipe.take(min(WRITE_ITEMS, WRITE_BATCH // (size + 1) + 1))
            if all(item.__class__ is Fanout for item in batch):
                joined = join_wires(cast("list[Fanout]", batch), self._encode_into)
                if joined is not None:
                    pipe.passed += len(batch)
                    pipe.octets += sum([item.size for item in batch])  # type: ignore[attr-defined]
                    return [joined]
        else:
            batch = pipe.take(WRITE_ITEMS)
        return self._encode(batch)

    def _encode(self, batch: list[Any]) -> list[Buffer]:
        pipe, codec, encode_into = self._pipe, self._codec, self._encode_into
        share, big = self._share, self._big
        short = _LAST_SHORT if self._plain else None
        parts: list[Buffer] = []
        buf = bytearray()
        used = 0
        # the payload bytes of the messages taken, and the items taken that are not
        # messages (the rest of a message begun, commands): counted once, after
        others = octets = 0
        items: Iterable[Any] = batch
        if short is not None:
            # the commonest batch, short one-frame messages, at C speed
            framed = frame_short_messages(batch, short, WRITE_BATCH)
            if framed is not None:
                wire, used = framed
                if used < len(batch):
                    pipe.unshift(batch[used:])
                pipe.passed += used
                pipe.octets += len(wire) - SHORT_HEADER * used
                return [wire]
        if self._seal_run is not None:
            # a stream of short one-frame messages, wrapped in the mechanism's loop
            used = self._seal_run(buf, batch, 0, WRITE_BATCH)
            # each box of a run: a 2-byte header and the mechanism's overhead around
            # the payload
            octets = len(buf) - used * (codec.mechanism.overhead + 2)
            items = () if len(buf) >= WRITE_BATCH else islice(batch, used, None)
        for item in items:
            used += 1
            cls = item.__class__
            if cls is list:
                last = item[-1]
                size = len(last)
                if len(item) == 1:
                    octets += size
                    if short is not None and size < big:
                        # the commonest: encode_plain_into's work, inline (a long
                        # header packed, as it packs it)
                        buf += short[size] if size < 256 else _pack_long(_LAST_LONG, size)
                        buf += last
                        if len(buf) >= WRITE_BATCH:
                            break
                        continue
                elif short is not None and size < big:
                    # several frames, unencrypted: under 265 bytes on the wire (a long
                    # frame takes more) every header is 2 bytes, and the payload is
                    # the rest; summing the frames' sizes costs ~120 ns more
                    start = len(buf)
                    encode_into(buf, item)
                    grown = len(buf) - start
                    octets += grown - 2 * len(item) if grown < 265 else sum(map(len, item))
                    if len(buf) >= WRITE_BATCH:
                        break
                    continue
                else:
                    octets += sum(map(len, item))
                if size >= big:
                    # written from the sender's own object, after this batch
                    encode_big(parts, buf, item)
                    buf = bytearray()
                    break
                encode_into(buf, item)
            elif cls is Fanout:
                if share and item.run is not None and not item.index and used > 1:
                    used -= 1  # a published batch begins: the next call writes it shared
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
            elif cls is bytes:
                # the rest of a message the sending task began to write itself
                others += 1
                buf += item
            elif cls is Hangup:
                used -= 1  # stays at the head: the writer closes once what is before it went
                break
            else:
                others += 1
                if cls is Ping:
                    self._actor.pinged()  # for the heartbeat task and the round trip
                buf += _COMMAND_ENCODERS[cls](codec, item)
            if len(buf) >= WRITE_BATCH:
                break
        if used < len(batch):
            pipe.unshift(batch[used:])
        if used > others:
            pipe.passed += used - others
            pipe.octets += octets
        if buf:
            parts.append(buf)
        return parts


@enable_ki_protection
async def run_writer(actor: WriterParent) -> None:
    """Write the peer's queue until the connection ends (then end it)."""
    peer = actor.peer
    pipe = peer.out_pipe
    output = actor.output
    batcher = _Batcher(actor, actor.codec, pipe, output.zero_copy)
    try:
        while True:
            if not pipe:
                peer.writing = False
                if actor.runtime.closing:
                    actor.runtime.peers.flush_lot.unpark_all()
                await output.idle()
                continue
            if actor.codec.closed:
                # the reader ended the connection (peer ERROR, protocol error) before
                # our cancellation arrived: leave the queue for the next connection
                return
            peer.writing = True
            for part in batcher.next_parts():
                await output.write(part)
            if pipe and pipe.peek().__class__ is Hangup:
                pipe.popleft()  # a STREAM's [id, b""]: everything before it is written
                return
            if pipe:
                # more to write at once: let other tasks run first
                await output.pause()
    except STREAM_ERRORS as exc:
        log.debug("%s: write failed: %s", actor.where, exc)
        actor.ended("peer_closed")
    finally:
        peer.writing = False
        if pipe and pipe.peek().__class__ is bytes:
            # half a message belongs to this connection only: never resend it (it was
            # counted as it began; it is lost with the connection)
            pipe.popleft()
            pipe.note("disconnect")
        actor.close()
