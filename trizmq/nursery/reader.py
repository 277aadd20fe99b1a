"""The reader of one connection: bytes in, messages into the peer's incoming pipe.

Strategy: every read is parsed whole and what it completed is handed on with one
wake-up (the connection's ``received``, the step a read-through takes too). A full
incoming pipe stops the reader, which pushes back on the sender through the
transport (TCP's window). A PING's TTL bounds only the wait for the next read, as
in libzmq (any data clears it): the heartbeat's ``within_ttl`` is that wait.
Reads come from an :class:`~trizmq.nursery.parents.Input`: a :class:`StreamInput`
(trio's stream calls) or, on the fast path, a
:class:`~trizmq.nursery.fastpath.direct_io.RawInput`. The reader sees its connection as a
:class:`~trizmq.nursery.parents.ReaderParent`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from ..zmtp import ProtocolError
from .fastpath.direct_io import _InputEnded
from .handshake_io import RECEIVE_SIZE

if TYPE_CHECKING:
    from ..zmtp.connection import Received
    from .parents import ReaderParent
    from .pipe import Pipe

__all__ = ["StreamInput", "run_reader", "settle_allocator"]

log = logging.getLogger("trizmq")

STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)

#: the size of the one allocation :func:`settle_allocator` makes and frees
SETTLE_SIZE = 4 * 1024 * 1024
_settled = False


def settle_allocator() -> None:
    """Once per process, before the first read: allocate and free one 4 MiB block.

    glibc's malloc serves blocks over its mmap threshold (128 KiB at first) with
    ``mmap`` and gives the top of its heap back to the system whenever more than its
    trim threshold (256 KiB at first) is free there. A stream of large messages
    (reads of up to 256 KiB, bodies queued by the thousand and drained) then shrinks
    and regrows the heap with ``brk`` on every swing and faults every page back in:
    measured, 6 500 ``brk`` calls and ~200 000 page faults in 3 s of a 64 KiB ipc
    stream, at two thirds of the speed. Freeing one mmapped block raises both
    thresholds to fit it (glibc's dynamic threshold, made for programs that use
    large buffers), so the heap keeps up to 8 MiB of free memory instead. The block
    is zero-filled by the kernel and never touched: no page of it is faulted in.
    Other allocators ignore it.
    """
    global _settled
    if not _settled:
        _settled = True
        block = bytes(SETTLE_SIZE)
        del block


class StreamInput:
    """Reads with trio's stream calls: the portable path."""

    __slots__ = ("_stream",)

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream = stream

    def start(self) -> None:
        """Nothing to offer."""

    def stop(self) -> None:
        """Nothing to release."""

    async def receive(self) -> bytes | bytearray:
        """``receive_some``."""
        return await self._stream.receive_some(RECEIVE_SIZE)

    async def after(self, size: int, pipe: Pipe) -> None:
        """trio's stream calls already yield after every read."""


async def run_reader(actor: ReaderParent, leftovers: list[Received]) -> None:
    """Read until the connection ends; leaves ``actor.outcome`` REFUSED for a protocol
    violation."""
    pipe = actor.peer.in_pipe
    source = actor.input
    heartbeat = actor.heartbeat
    settle_allocator()
    try:
        actor.deliver(leftovers)
        # from here the peer's figures read the codec's count of payload bytes
        actor.peer.reading = actor.codec
        source.start()
        while True:
            if pipe.full:
                # we stopped reading: the peer is not silent meanwhile
                heartbeat.reading_paused()
                await pipe.wait_writable()
                heartbeat.reading_resumed()
            # the TTL of a PING that ended the last read bounds the wait for the next
            # read, as in libzmq (any data clears it)
            ttl = heartbeat.peer_ttl
            data: bytes | bytearray | None
            if ttl:
                data = await heartbeat.within_ttl(source.receive)
            else:
                data = await source.receive()
            if data is None:
                log.warning("%s: heartbeat TTL of %ss expired, dropping", actor.where, ttl)
                actor.ended("heartbeat_timeout")
                return
            if not data:
                actor.log_closed()
                return
            actor.received(data)
            await source.after(len(data), pipe)
    except _InputEnded:
        return  # a receiving task met the end, logged it and ends the connection
    except ProtocolError as exc:
        actor.refuse(exc)
    except STREAM_ERRORS as exc:
        actor.log_lost(exc)
