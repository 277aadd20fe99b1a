"""Short-message framing: queued messages encoded with as few Python steps as can be.

The rule it bends: a message is encoded by its connection's codec
(``trizmq.zmtp``), one call a message. Here a run of short one-frame messages on
unencrypted ZMTP is framed at C speed (:func:`frame_short_messages`), a
publisher's batch is encoded once for all its subscribers (:func:`encode_run`,
:func:`leading_runs`), a mechanism that seals a run in one loop does so
(:func:`run_sealer`), and a big frame is written from the sender's own object
(:func:`encode_big`). The connection writer uses these on both paths; the
write-through (``write_through``) too.

Every encoding here must be the codec's byte for byte:
``tests/nursery/test_writer_batches.py`` compares them with the codec's
(``test_plain_batches_are_the_codecs_encoding``, ``test_encrypted_batches_open_as_queued``
and the rest), with no ``fastpath`` marker, so also under ``TRIZMQ_FASTPATH=0``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

from ...patterns.sockets.base import Fanout, FanoutRun
from ...zmtp.encoding import Buffer, encode_plain_into
from ...zmtp.frames import MORE, SHORT_HEADERS, frame_header

if TYPE_CHECKING:
    from ...zmtp.mechanism import Mechanism

__all__ = [
    "BIG_FRAME",
    "RUN_BYTES",
    "SHORT_HEADER",
    "encode_big",
    "encode_run",
    "frame_short_messages",
    "leading_runs",
    "run_sealer",
]

#: frames at least this big are written from the caller's object, not copied
BIG_FRAME = 64 * 1024
#: the header of a short frame (its flags and its one-byte size)
SHORT_HEADER = len(SHORT_HEADERS[0][0])
#: a published batch is encoded into one shared buffer up to this many bytes
RUN_BYTES = 256 * 1024


def leading_runs(
    items: deque[object], encode_into: Callable[[bytearray, Sequence[Buffer]], None], limit: int
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


def encode_run(run: FanoutRun, encode_into: Callable[[bytearray, Sequence[Buffer]], None]) -> bytes:
    """A published batch's shared encoding, made by the first connection that writes
    it whole (up to :data:`RUN_BYTES`, and not past a big frame), each message's end
    in ``run.ends``."""
    short = _short_headers(encode_into)
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


def _short_headers(encode_into: object) -> tuple[bytes, ...] | None:
    """On unencrypted ZMTP, the headers of a short last frame by size: a short one-frame
    message is framed with one of them, as the writer does, without the codec's call."""
    return SHORT_HEADERS[0] if encode_into is encode_plain_into else None


def run_sealer(mechanism: Mechanism, encode_into: object) -> Callable[..., int] | None:
    """The mechanism's ``seal_run``, where it wraps a run of short one-frame messages in
    one loop (CURVE) and the codec's bytes are the mechanism's own (not inside
    WebSocket frames); None elsewhere. The writer and the write-through use it alike."""
    if mechanism.runs and encode_into == mechanism.encode_message_into:
        return mechanism.seal_run
    return None


def _split_sent(
    items: deque[object], ends: list[int], buf: Buffer, sent: int, buf_at: int = 0
) -> int:
    """Remove from ``items`` the first ``len(ends)`` items, encoded into bytes of which
    ``buf`` holds those from ``buf_at`` on (item ``i`` ending at ``ends[i]``), as far
    as ``sent`` bytes of them went out: a message only partly written stays at the
    head as the bytes still owed for it, which ``buf`` must hold. Returns how many
    messages left the queue as messages (written whole, or begun)."""
    whole = bisect_right(ends, sent)
    for _ in range(whole):
        items.popleft()
    if whole < len(ends) and sent > (ends[whole - 1] if whole else 0):
        items[0] = bytes(buf[sent - buf_at : ends[whole] - buf_at])
        return whole + 1
    return whole


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
