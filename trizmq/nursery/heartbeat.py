"""Heartbeats (ZMTP 3.1 PING/PONG) of one connection, by libzmq's rule.

Rules (libzmq's ``stream_engine_base``):

* Every ``heartbeat_ivl`` a PING goes out, announcing ``heartbeat_ttl``, from the
  handshake on.
* The timeout clock starts with the first PING since the peer was last heard from,
  and anything received stops it; when it reaches ``heartbeat_timeout`` (default:
  the interval) the connection is dropped. So an idle peer that answers PINGs (or
  sends its own) is never dropped, whatever the two settings are, and a silent one
  is dropped ``heartbeat_timeout`` after the first PING it left unanswered.
* "Sent" is when the writer wrote the PING (``ConnectionActor.ping_written``), so
  that a delay of our own between queueing and writing never counts against the
  peer; a PING that cannot be written at all (the peer reads nothing, our writes
  block) counts from when it was queued, so a frozen peer is dropped even then. The
  PING goes ahead of queued messages (``Pipe.put_next``), and while one still waits
  to be written no other is queued.
* While the reader has stopped reading because the socket's incoming queue is
  full, the peer is not silent: the clock does not run (the reader sets
  ``last_heard`` to infinity meanwhile).
* The TTL a peer announces in its PING bounds only the wait for the next read (the
  reader's business, see ``trizmq.nursery.reader``).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from ..zmtp.events import Ping

if TYPE_CHECKING:
    from .parents import HeartbeatParent

__all__ = ["run_heartbeat"]

log = logging.getLogger("trizmq")


@enable_ki_protection
async def run_heartbeat(actor: HeartbeatParent) -> None:
    """PING every interval; end the connection when a PING goes unanswered too long."""
    options = actor.runtime.options
    ivl = options.heartbeat_ivl
    assert ivl is not None
    timeout = options.heartbeat_timeout or ivl
    ttl = options.heartbeat_ttl or 0.0
    pipe = actor.peer.out_pipe
    next_ping = trio.current_time() + ivl
    # when the timeout clock started (the first PING queued since we last heard)
    pinged = math.inf
    while True:
        deadline = math.inf
        if pinged != math.inf:
            # from the write of that PING, or from its queueing while it waits
            written = actor.ping_written
            deadline = (pinged if written == math.inf else written) + timeout
        await trio.sleep_until(min(next_ping, deadline))
        if actor.last_heard < pinged and trio.current_time() >= deadline:
            # after a stall of this process the reply may be waiting unread: the
            # tasks woken with us (the reader) run once before we judge
            await trio.lowlevel.checkpoint()
            if actor.last_heard < pinged:
                log.warning(
                    "%s: heartbeat timeout, silent for %.3fs (no reply within %ss of a PING)",
                    actor.where,
                    trio.current_time() - actor.last_heard,
                    timeout,
                )
                actor.ended("heartbeat_timeout")
                actor.close()
                return
        if actor.last_heard >= pinged:
            pinged = math.inf  # the peer spoke since: the clock stops
        now = trio.current_time()
        if now >= next_ping:
            if pinged == math.inf:
                pinged = now
                actor.ping_written = math.inf  # the writer notes the next PING's write
            pipe.put_next(Ping(ttl, b""))
            next_ping += ivl
            if next_ping <= now:
                next_ping = now + ivl  # we were late: no burst of PINGs
