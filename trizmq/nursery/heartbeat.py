"""Heartbeats (ZMTP 3.1 PING/PONG) of one connection, by libzmq's rule.

Rules (libzmq's ``stream_engine_base``):

* Every ``heartbeat_ivl`` a PING goes out, announcing ``heartbeat_ttl``.
* The timeout clock starts when a PING is *sent*, if it is not running already,
  and anything received from the peer stops it; when it reaches
  ``heartbeat_timeout`` (default: the interval) the connection is dropped. So an
  idle peer that answers PINGs is never dropped, and a silent one is dropped
  ``heartbeat_timeout`` after the first PING it did not answer.
* While the reader has stopped reading because the socket's incoming queue is
  full, the peer is not silent: the clock does not run.
* The TTL a peer announces in its PING bounds only the wait for the next read
  (the reader's business, see ``trizmq.nursery.reader``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from ..zmtp.events import Ping

if TYPE_CHECKING:
    from .connection import ConnectionActor

__all__ = ["run_heartbeat"]

log = logging.getLogger("trizmq")


@enable_ki_protection
async def run_heartbeat(actor: ConnectionActor) -> None:
    """PING every interval; end the connection when a PING goes unanswered too long."""
    options = actor.runtime.options
    ivl = options.heartbeat_ivl
    assert ivl is not None
    timeout = options.heartbeat_timeout or ivl
    ttl = options.heartbeat_ttl or 0.0
    pipe = actor.peer.out_pipe
    next_ping = trio.current_time() + ivl
    while True:
        deadline = actor.answer_deadline
        await trio.sleep_until(next_ping if deadline is None else min(next_ping, deadline))
        now = trio.current_time()
        deadline = actor.answer_deadline
        if deadline is not None and now >= deadline:
            if actor.paused:
                actor.answer_deadline = None  # we stopped reading: not the peer's silence
            else:
                log.warning(
                    "%s: heartbeat timeout: no answer %.3fs after a PING", actor.where, timeout
                )
                actor.close()
                return
        if now >= next_ping:
            pipe.put(Ping(ttl, b""))
            if actor.answer_deadline is None:
                actor.answer_deadline = now + timeout
            next_ping = now + ivl
