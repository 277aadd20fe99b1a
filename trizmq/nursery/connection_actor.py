"""The connection actor: one byte-stream connection of a socket, handshake to end.

A :class:`ConnectionActor` drives one stream with its codec: the handshake (and
ZAP), then attaching its peer to the socket (or refusing it), then a reader, a
writer and, with ``heartbeat_ivl``, a heartbeat task (see ``heartbeat``), all inside
the connection's own cancel scope, so that losing or dropping this connection
cancels nothing else. Its state is its attributes: how it ended (:attr:`outcome`),
its heartbeat, its outbound half.

Rules:

* A remote error (a protocol violation, a refused handshake) ends this connection
  only, logged on the ``trizmq`` logger with its reason; it counts as REFUSED, which
  makes a connecter back off.
* A peer the socket refuses after the handshake (a PAIR that is taken) is told why
  with an ERROR, so that it backs off instead of reconnecting at once.

Inbound: the reader task and a read-through both drive one step,
:meth:`ConnectionActor.received` (the peer was heard; the codec parses the bytes;
what they completed goes to the peer's incoming pipe), and meet its end the same way.
PINGs and PONGs are the connection's :class:`~trizmq.nursery.heartbeat.Heartbeat`'s.

Counting: what a read hands to the peer's incoming pipe is counted there, once per
read (``Pipe.extend_counted``): the messages; their payload bytes are the codec's
count (``Codec.received_bytes``), which the peer reads while the connection lives
(``Peer.reading``) and its pipe keeps afterwards. The actor notes why the connection
ended (:attr:`cause`) and reports that, or why its handshake failed, to the
socket's counts.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from ..patterns.backoff import Outcome
from ..zmtp import ProtocolError
from ..zmtp.events import PeerError, Ping, Pong
from ..zmtp.outbound import Outbound
from ..zmtp.queue_items import INCOMING_COMMANDS, INCOMING_MESSAGES, payload
from .fastpath.direct_io import RawInput, RawSocket
from .fastpath.read_through import ReadThrough
from .fastpath.tls_input import TlsInput
from .fastpath.write_through import RawOutput
from .handshake_io import _ConnectionLost, handshake
from .heartbeat import Heartbeat
from .pipe import Pipe
from .reader import STREAM_ERRORS, StreamInput, run_reader
from .slots import _HandshakeCut
from .writer import StreamOutput, run_writer

if TYPE_CHECKING:
    from ..transport.base import Codec
    from ..zmtp.connection import Received
    from .fastpath.socket_state import FastPath
    from .parents import ConnectionParent, Input, Output
    from .peers import Peer
    from .slots import HandshakeSlot

__all__ = ["ConnectionActor"]

log = logging.getLogger("trizmq")

class ConnectionActor:
    """One stream connection: handshake, attach or refuse, then read, write, beat."""

    def __init__(
        self,
        runtime: ConnectionParent[FastPath],
        stream: trio.abc.Stream,
        peer: Peer,
        codec: Codec,
    ) -> None:
        self.runtime = runtime
        self.stream = stream
        self.peer = peer
        self.codec = codec
        # one-frame messages queued as bytes: not tracked by the cyclic garbage
        # collector while they wait (a conflating queue tells messages from the
        # rest of a half-written one by their class, so it keeps lists)
        codec.bare_messages = runtime.takes_bare_messages and type(peer.in_pipe) is Pipe
        #: the fast path of the socket, or None (portable path)
        self.fast: FastPath | None = runtime.fast
        #: how the connection ended (REFUSED after a protocol violation)
        self.outcome = Outcome.DONE
        #: the PING/PONG state: the peer's silence, our PINGs, the peer's TTL
        self.heartbeat = Heartbeat(peer, runtime.options)
        #: the codec's count of commands parsed, when :meth:`deliver_parsed` last looked
        self._commands_seen = 0
        #: why the connection ended, once something ended it (see _stats.DISCONNECT_CAUSES)
        self.cause: str | None = None
        self.input: Input = StreamInput(stream)
        self.output: Output = StreamOutput(stream, peer.out_pipe)
        #: the sending half in traffic (made once the handshake is done: _choose_io)
        self.outbound: Outbound
        self._scope: trio.CancelScope | None = None

    @property
    def where(self) -> str:
        """The connection, for log lines: endpoint and remote address."""
        peer = self.peer
        return f"{peer.endpoint} {peer.remote_address}".rstrip()

    # -- what the reader, the writer and read-through share -----------------------------
    def ended(self, cause: str) -> None:
        """Note why the connection ends (the first reason given is the one counted)."""
        if self.cause is None:
            self.cause = cause

    def received(self, data: bytes | bytearray) -> None:
        """One read's bytes, from the reader or a read-through: the peer was heard,
        and what they completed goes to the peer's incoming pipe. ``ProtocolError``
        for a violation (the caller ends the connection: :meth:`refuse`)."""
        self.heartbeat.heard()
        self.deliver_parsed(self.codec.receive_data(data))

    def deliver_parsed(self, events: list[Received]) -> None:
        """:meth:`deliver` what one ``receive_data`` call returned: when the codec
        parsed no command meanwhile, the batch is all messages and goes to the pipe
        as it is, without a look at each."""
        seen = self.codec.commands_parsed
        if seen == self._commands_seen:
            if events:
                self.peer.in_pipe.extend_counted(events)
            return
        self._commands_seen = seen
        self.deliver(events)

    def deliver(self, events: list[Received]) -> None:
        """Hand a batch of parsed events to the peer's incoming pipe in one go."""
        if not events:
            return
        peer = self.peer
        pipe = peer.in_pipe
        if len(events) == 1 and events[0].__class__ in INCOMING_MESSAGES:
            # one message, the usual case of a request or a reply
            pipe.put_counted(events[0])
            return
        wants_commands = self.runtime.strategy.wants_commands
        heartbeat = self.heartbeat
        batch: list[object] = []
        messages = 0
        for event in events:
            cls = event.__class__
            if cls in INCOMING_MESSAGES:
                batch.append(event)
                messages += 1
            elif cls in INCOMING_COMMANDS:
                if wants_commands:
                    batch.append(event)
            elif cls is Ping:
                peer.out_pipe.put(heartbeat.ping_received(event))  # type: ignore[arg-type]
            elif cls is Pong:
                heartbeat.pong_received()
            elif cls is PeerError:
                self._lost(batch)
                raise ProtocolError(f"peer sent ERROR: {event.reason}", cause="peer_error")  # type: ignore[union-attr]
            # unknown commands carry nothing for the socket
        if heartbeat.peer_ttl and events[-1].__class__ is not Ping:
            heartbeat.traffic()  # traffic after the PING: its TTL no longer applies
        pipe.extend_counted(batch, messages)

    def _lost(self, batch: list[object]) -> None:
        """The messages of ``batch``, parsed (their bytes counted by the codec), are not
        delivered: the connection ends (dropped at a ``"disconnect"``)."""
        messages = [item for item in batch if item.__class__ in INCOMING_MESSAGES]
        if messages:
            pipe = self.peer.in_pipe
            pipe.octets -= sum(map(payload, messages))
            pipe.note("disconnect", len(messages))

    def refuse(self, exc: ProtocolError) -> None:
        """The peer broke the protocol: drop it (a connecter backs off)."""
        log.warning("%s: dropping connection: %s", self.where, exc)
        self.outcome = Outcome.REFUSED
        self.ended(exc.cause)

    def log_closed(self) -> None:
        """The peer closed the connection."""
        self.ended("peer_closed")
        if self.codec.in_message:
            log.warning(
                "%s: peer closed the connection mid-message; its unfinished message is dropped",
                self.where,
            )
        else:
            log.debug("%s: peer closed the connection", self.where)

    def log_lost(self, exc: BaseException) -> None:
        """The connection broke."""
        self.ended("peer_closed")
        if self.codec.in_message:
            log.warning(
                "%s: connection lost mid-message (%s); its unfinished message is dropped",
                self.where,
                exc,
            )
        else:
            log.debug("%s: connection lost: %s", self.where, exc)

    def close(self) -> None:
        """End the connection (its reader, writer and heartbeat stop)."""
        if self._scope is not None:
            self._scope.cancel()

    # -- the life of the connection ----------------------------------------------------------
    @enable_ki_protection
    async def run(
        self,
        *,
        kept: bool,
        handshake_done: Callable[[], None] | None = None,
        slot: HandshakeSlot | None = None,
    ) -> Outcome:
        """Handshake, attach (unless ``kept``: the peer is routed already), then run
        until the connection ends; how it ended. ``handshake_done`` is called once the
        handshake is over, whatever its outcome; an accepted connection's handshake
        runs in its ``slot``."""
        try:
            leftovers = await self._handshake(slot)
        finally:
            if handshake_done is not None:
                handshake_done()
        # nothing of the handshake stays with a connection that may live for hours
        slot = handshake_done = None
        # trio < 0.28 keeps a copy of a KI-protected coroutine's arguments in its
        # frame's locals dict (where it marks the protection); reading the locals
        # refreshes the copy, which then no longer holds the slot
        locals()
        if leftovers is None:
            return self.outcome
        runtime, peer, codec = self.runtime, self.peer, self.codec
        peer.peer_type = codec.peer_socket_type
        peer.identity = codec.peer_identity
        peer.version = codec.peer_version
        if not kept and not runtime.peers.attach(peer):
            await self._refuse_peer(f"a {runtime.socket_type} socket takes one peer only")
            return Outcome.REFUSED
        runtime.emit(monitor.HandshakeSucceeded(peer.endpoint, peer.remote_address, peer.peer_type))
        runtime.peers.live(peer)
        self._choose_io()
        try:
            with trio.CancelScope() as scope:
                self._scope = scope
                peer.closer = self.close
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(run_writer, self)
                    if self.heartbeat.runs_for(peer.version):
                        nursery.start_soon(
                            self.heartbeat.run, self, runtime.options, peer.out_pipe
                        )
                    await run_reader(self, leftovers)
                    nursery.cancel_scope.cancel()
        finally:
            self._scope = None
            self.input.stop()
            if peer.reading is codec:
                # the pipe keeps the connection's count of payload bytes
                peer.in_pipe.octets += codec.received_bytes
                counts = codec.part_counts
                if counts is not None:
                    # and what its parts weighed beside their payload (read by counting)
                    peer.out_pipe.note("wire_extra", counts.wire_sent - counts.payload_sent)
                    peer.in_pipe.note("wire_in", counts.wire_received)
                    peer.in_pipe.note("payload_in", counts.payload_received)
                peer.reading = None
            if codec.in_message:
                peer.in_pipe.note("disconnect")  # the unfinished message is lost
            if not runtime.closing:
                runtime.counts.disconnected(self.cause or "local")
            runtime.emit(monitor.Disconnected(peer.endpoint, peer.remote_address))
            if kept:
                runtime.peers.lost(peer)
            else:
                peer.closer = None
                peer.writing = False
            runtime.peers.flush_lot.unpark_all()
        return self.outcome

    async def _handshake(self, slot: HandshakeSlot | None) -> list[Received] | None:
        """The handshake's leftover traffic, or None when it failed (outcome set)."""
        runtime, peer = self.runtime, self.peer
        try:
            return await handshake(
                self.stream,
                self.codec,
                peer,
                runtime.zap,
                runtime.options.handshake_ivl,
                runtime.handshake_slots,
                slot,
            )
        except _HandshakeCut as exc:
            log.log(exc.level, "%s: %s", self.where, exc)
            reason = str(exc)
            cause = exc.cause
            self.outcome = Outcome.LOST
        except ProtocolError as exc:
            log.warning("%s: handshake refused: %s", self.where, exc)
            reason = str(exc)
            cause = exc.cause
            self.outcome = Outcome.REFUSED
        except trio.TooSlowError:
            log.warning(
                "%s: handshake timed out after %ss", self.where, runtime.options.handshake_ivl
            )
            reason = "handshake timed out"
            cause = "timeout"
            self.outcome = Outcome.LOST
        except (_ConnectionLost, *STREAM_ERRORS) as exc:
            log.debug("%s: lost during handshake: %s", self.where, exc)
            reason = str(exc)
            cause = "peer_closed"
            self.outcome = Outcome.LOST
        if not runtime.closing:
            runtime.counts.handshake_failed(cause)
        runtime.emit(monitor.HandshakeFailed(peer.endpoint, peer.remote_address, reason))
        return None

    async def _refuse_peer(self, reason: str) -> None:
        """Refuse the handshaken peer, telling it why."""
        peer = self.peer
        log.warning("%s: refused: %s", self.where, reason)
        self.runtime.counts.handshake_failed("refused")
        self.runtime.emit(monitor.HandshakeFailed(peer.endpoint, peer.remote_address, reason))
        with contextlib.suppress(*STREAM_ERRORS):
            await self.stream.send_all(self.codec.encode_error(reason))

    def _choose_io(self) -> None:
        """The connection's outbound half, and direct socket I/O on the fast path
        where the stream allows it."""
        fast = self.fast
        raw = RawSocket.of(self.stream) if fast is not None else None
        self.outbound = Outbound(self.codec, zero_copy=raw is not None)
        if fast is None:
            return
        if raw is None:
            self.input = TlsInput.of(self.stream) or self.input
            return
        self.input = RawInput(raw, ReadThrough(self, raw), fast)
        self.output = RawOutput(raw, self, fast, self.outbound)
