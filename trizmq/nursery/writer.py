"""The writer of one connection: the single owner of writes to its stream.

Strategy: drain the peer's outgoing pipe into as few writes as possible. Each step
is the pipe's next batch encoded by the connection's outbound half
(``Pipe.transmit`` with an :class:`~trizmq.zmtp.outbound.Outbound`, sans I/O:
buffers of up to ``WRITE_BATCH`` bytes, the messages and payload bytes among them,
counted as they leave), and its buffers are written. Writes go to an
:class:`~trizmq.nursery.parents.Output`: trio's ``send_all``
(:class:`StreamOutput`) or, on the fast path, direct system calls
(:class:`~trizmq.nursery.fastpath.write_through.RawOutput`), which also writes big
frames from the sender's own object and lets the sending task write while the
writer is idle. The writer sees its connection as a
:class:`~trizmq.nursery.parents.WriterParent`.

Rule: the part of a message that one connection began to write belongs to that
connection only: if it ends, the part is dropped, never resent on the next one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from .reader import STREAM_ERRORS

if TYPE_CHECKING:
    from ..zmtp.encoding import Buffer
    from .parents import WriterParent
    from .pipe import Pipe

__all__ = ["StreamOutput", "run_writer"]

log = logging.getLogger("trizmq")


class StreamOutput:
    """Writes with trio's ``send_all``: the portable path."""

    __slots__ = ("_pipe", "_stream")

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


@enable_ki_protection
async def run_writer(actor: WriterParent) -> None:
    """Write the peer's queue until the connection ends (then end it)."""
    peer = actor.peer
    pipe = peer.out_pipe
    output = actor.output
    outbound = actor.outbound
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
            transmit = pipe.transmit(outbound)
            if transmit.pinged:
                actor.heartbeat.pinged()  # its timeout and round trip start at the write
            for part in transmit.parts:
                await output.write(part)
            del transmit  # what it held is not kept while the writer idles
            if pipe.take_hangup():
                return  # a STREAM's [id, b""]: everything before it is written
            if pipe:
                # more to write at once: let other tasks run first
                await output.pause()
    except STREAM_ERRORS as exc:
        log.debug("%s: write failed: %s", actor.where, exc)
        actor.ended("peer_closed")
    finally:
        peer.writing = False
        pipe.drop_unsent()  # half a message belongs to this connection only
        actor.close()
