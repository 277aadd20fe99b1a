"""Heartbeats (ZMTP 3.1 PING/PONG) of one connection: the whole of them, by libzmq's rule.

A :class:`Heartbeat` is one connection's PING/PONG state: when the peer was last
heard from, when our PING was written, the TTL the peer announced and the round
trip of our PINGs. The connection's parts tell it what happens (the reader and a
read-through that the peer was heard, the writer that a PING went out, the
connection actor that a PING or a PONG arrived) and it decides everything else: its
task (:meth:`Heartbeat.run`) sends the PINGs and ends a silent connection, and
:meth:`Heartbeat.within_ttl` is the one wait bounded by the peer's TTL.

Rules (libzmq's ``stream_engine_base``):

* Every ``heartbeat_ivl`` a PING goes out, announcing ``heartbeat_ttl``, from the
  handshake on.
* The timeout clock starts with the first PING since the peer was last heard from,
  and anything received stops it; when it reaches ``heartbeat_timeout`` (default:
  the interval) the connection is dropped. So an idle peer that answers PINGs (or
  sends its own) is never dropped, whatever the two settings are, and a silent one
  is dropped ``heartbeat_timeout`` after the first PING it left unanswered.
* "Sent" is when the writer wrote the PING (:meth:`Heartbeat.pinged`), so that a
  delay of our own between queueing and writing never counts against the peer; a
  PING that cannot be written at all (the peer reads nothing, our writes block)
  counts from when it was queued, so a frozen peer is dropped even then. The PING
  goes ahead of queued messages (``Pipe.put_next``), and while one still waits to
  be written no other is queued.
* While the reader has stopped reading because the socket's incoming queue is
  full, the peer is not silent: the clock does not run
  (:meth:`Heartbeat.reading_paused`).
* A PING is answered with a PONG echoing its context. The TTL a peer announces in
  its PING bounds only the wait for the next read, as in libzmq: any data read
  after the PING clears it (:meth:`Heartbeat.heard`, :meth:`Heartbeat.traffic`).
* A PING's round trip is timed from the write of the oldest PING not answered yet
  to the next PONG, and smoothed as TCP smooths its round-trip time.
* A ZMTP 2.0 peer has no PING or PONG: no heartbeat runs for it, whatever the
  options say (TCP's keepalive is all it gets: ``tcp_keepalive``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio
from trio.lowlevel import enable_ki_protection

from ..zmtp.events import Ping, Pong
from ..zmtp.zmtp2 import ZMTP2_VERSION

if TYPE_CHECKING:
    from .._options import Options
    from .peers import Peer

__all__ = ["Heartbeat", "HeartbeatParent"]

log = logging.getLogger("trizmq")

_now = trio.current_time


class HeartbeatParent(Protocol):
    """A connection, as its heartbeat task sees it: what to log it as, and the way to
    end it."""

    @property
    def where(self) -> str: ...

    def ended(self, cause: str) -> None:
        """Note why the connection ends."""
        ...

    def close(self) -> None:
        """End the connection."""
        ...


class Heartbeat:
    """One connection's PING/PONG state (see the module docstring)."""

    __slots__ = ("_ping_at", "_pings_heard", "last_heard", "on", "peer", "peer_ttl", "ping_written")

    def __init__(self, peer: Peer, options: Options) -> None:
        self.peer = peer
        #: True with ``heartbeat_ivl``: the clock below runs
        self.on = bool(options.heartbeat_ivl)
        #: when the peer was last heard from (infinity while the reader stops for
        #: back-pressure: the peer is not silent then)
        self.last_heard = _now()
        #: when the writer wrote the first PING since :meth:`run` last asked
        #: (infinity: not yet); the heartbeat timeout counts from it
        self.ping_written = math.inf
        #: the TTL of a PING that ended the last read: the wait for the next read may
        #: last no longer (0: none); any data read clears it
        self.peer_ttl = 0.0
        #: PINGs heard so far (a wait within a TTL tells a new PING by it)
        self._pings_heard = 0
        #: when the oldest PING not answered yet was written (infinity: none is)
        self._ping_at = math.inf

    def runs_for(self, peer_version: tuple[int, int]) -> bool:
        """Whether the heartbeat task runs for a peer of this ZMTP version: with
        ``heartbeat_ivl``, and not for a ZMTP 2.0 peer (no PING there)."""
        return self.on and peer_version != ZMTP2_VERSION

    # -- what the connection's parts report ------------------------------------------------
    def heard(self) -> None:
        """The peer sent something (a read): it answered, and a PING's TTL no longer
        applies."""
        if self.on:
            self.last_heard = _now()
        self.peer_ttl = 0.0

    def traffic(self) -> None:
        """A read held more than a PING, after it: its TTL no longer applies."""
        self.peer_ttl = 0.0

    def reading_paused(self) -> None:
        """The reader stops: the socket's incoming queue is full."""
        if self.on:
            self.last_heard = math.inf

    def reading_resumed(self) -> None:
        """The reader reads again."""
        if self.on:
            self.last_heard = _now()

    def pinged(self) -> None:
        """The writer wrote a PING: the timeout and the round trip start."""
        now = _now()
        if self.ping_written == math.inf:
            self.ping_written = now  # for the task
        if self._ping_at == math.inf:
            self._ping_at = now
        self.peer.pings += 1

    def ping_received(self, ping: Ping) -> Pong:
        """The peer sent a PING: the PONG that answers it (and its TTL, if any, bounds
        the next read)."""
        self._pings_heard += 1
        if ping.ttl:
            self.peer_ttl = ping.ttl
        return Pong(ping.context)

    def pong_received(self) -> None:
        """A PONG arrived: the round trip of the oldest unanswered PING."""
        if self._ping_at == math.inf:
            return  # an answer to a PING whose round trip is measured already
        rtt = _now() - self._ping_at
        self._ping_at = math.inf
        peer = self.peer
        peer.rtt = rtt
        mean = peer.rtt_mean
        # weight 1/8 per new sample, as TCP's smoothed round-trip time
        peer.rtt_mean = rtt if mean is None else mean + (rtt - mean) / 8

    # -- the waits --------------------------------------------------------------------------
    async def within_ttl(
        self, receive: Callable[[], Awaitable[bytes | bytearray]]
    ) -> bytes | bytearray | None:
        """``await receive()``, the next read, within the TTL of the peer's last PING
        (:attr:`peer_ttl`, which must be set); None when it passed with nothing heard
        from the peer (a read-through that heard it meanwhile counts)."""
        while True:
            ttl, pings = self.peer_ttl, self._pings_heard
            if not ttl:
                return await receive()
            with trio.move_on_after(ttl):
                return await receive()
            if self.peer_ttl == ttl and self._pings_heard == pings:
                return None

    @enable_ki_protection
    async def run(self, actor: HeartbeatParent, options: Options, pipe: _PingQueue) -> None:
        """PING every interval; end the connection when a PING goes unanswered too long."""
        ivl = options.heartbeat_ivl
        assert ivl is not None
        timeout = options.heartbeat_timeout or ivl
        ttl = options.heartbeat_ttl or 0.0
        next_ping = _now() + ivl
        # when the timeout clock started (the first PING queued since we last heard)
        pinged = math.inf
        while True:
            deadline = math.inf
            if pinged != math.inf:
                # from the write of that PING, or from its queueing while it waits
                written = self.ping_written
                deadline = (pinged if written == math.inf else written) + timeout
            await trio.sleep_until(min(next_ping, deadline))
            if self.last_heard < pinged and _now() >= deadline:
                # after a stall of this process the reply may be waiting unread: the
                # tasks woken with us (the reader) run once before we judge
                await trio.lowlevel.checkpoint()
                if self.last_heard < pinged:
                    log.warning(
                        "%s: heartbeat timeout, silent for %.3fs (no reply within %ss of a PING)",
                        actor.where,
                        _now() - self.last_heard,
                        timeout,
                    )
                    actor.ended("heartbeat_timeout")
                    actor.close()
                    return
            if self.last_heard >= pinged:
                pinged = math.inf  # the peer spoke since: the clock stops
            now = _now()
            if now >= next_ping:
                if pinged == math.inf:
                    pinged = now
                    self.ping_written = math.inf  # the writer notes the next PING's write
                pipe.put_next(Ping(ttl, b""))
                next_ping += ivl
                if next_ping <= now:
                    next_ping = now + ivl  # we were late: no burst of PINGs


class _PingQueue(Protocol):
    """The peer's outgoing queue, as the heartbeat puts a PING in it."""

    def put_next(self, item: object) -> bool: ...
