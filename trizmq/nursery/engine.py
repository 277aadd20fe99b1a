"""The actor runtime of one socket: the only place where trizmq starts tasks.

A socket is an actor whose nursery owns every task it needs:

* one **acceptor** per bound tcp/ipc endpoint, starting a connection actor per
  accepted stream;
* one **connecter** per connected endpoint, which (re)connects with back-off for as
  long as the endpoint stays connected;
* per live connection, a **reader** and a **writer** (and a heartbeat task when
  heartbeats are on), inside that connection's own cancel scope: a lost or
  disconnected peer cancels that scope only.

Rules:

* Queue lifetimes follow the specs: a connecting side keeps its :class:`Peer` and
  its pipes across reconnects; a binding side creates a peer per accepted
  connection and discards its outgoing queue when the connection ends (unread
  incoming messages stay readable until drained).
* A remote error (:class:`~trizmq.zmtp.ProtocolError`, a refused handshake) closes
  that connection only and is logged on the ``trizmq`` logger with its reason. A
  connecter whose handshake was refused backs off (at least 1 s, doubling up to
  30 s) rather than retrying in a tight loop.
* Hot path: the writer drains its pipe into writes of up to ~64 KiB (frames of
  64 KiB or more go out from the sender's own object, uncopied); the reader parses
  every frame of each read and hands the messages on with one wake-up; a full
  incoming pipe stops the reader, which pushes back through TCP. On OS sockets
  both call ``recv``/``send`` directly (``trizmq.transport.rawio``) and wait only
  when the call would block, and an idle writer lets the sending task write the
  first message itself (write-through), so a request-reply round trip takes no
  task hop on the sending side; a task waiting in a receive on a socket with one
  such peer reads the connection itself while the reader stands by
  (:class:`ReadThrough`), so none on the receiving side either.
* Close: unbind, flush for ``linger`` seconds, then cancel everything.
* The runtime's tasks are protected from ``KeyboardInterrupt``: trio delivers a
  Ctrl-C to the program's main task instead, so it never tears through a socket's
  nursery half-way through a write.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import math
import random
from collections.abc import Callable
from typing import Any

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from .. import transport
from .._endpoint import Endpoint
from .._errors import EndpointError
from .._zap import ZAP_VERSION, current_authenticator
from ..patterns.sockets.base import Fanout
from ..transport import udp
from ..transport.inproc import registry
from ..transport.rawio import RawSocket
from ..zmtp import Connection, ProtocolError, ZapReply, ZapRequest, decode_metadata
from ..zmtp.events import Cancel, Join, Leave, PeerError, Ping, Pong, Subscribe
from ..zmtp.frames import MORE, frame_header
from ..zmtp.socket_types import is_compatible
from ..zmtp.udp import decode_datagram, encode_datagram
from .peer import Peer
from .pipe import Pipe
from .waiters import Waiters

#: our own generator: the jitter never disturbs (nor depends on) the application's random state
_JITTER = random.Random()

__all__ = ["SocketEngine"]

log = logging.getLogger("trizmq")

#: bytes asked of each receive_some
RECEIVE_SIZE = 256 * 1024
#: the writer stops gathering messages into one send_all past this many bytes
WRITE_BATCH = 64 * 1024
#: the writer takes at most this many queued items for one write
WRITE_ITEMS = 1024
#: scheduler passes a reader lets go by before it reads again after handing on a message
LOOK_AGAIN_AFTER = 2
#: frames at least this big are written from the caller's object, not copied into a batch
BIG_FRAME = 64 * 1024
#: a refused handshake is retried no sooner than this, doubling up to REFUSED_MAX
REFUSED_MIN = 1.0
REFUSED_MAX = 30.0


class Outcome(enum.Enum):
    """How one connection attempt ended."""

    LOST = "lost"  # never handshaken: refused connect, timeout, closed during handshake
    DONE = "done"  # handshaken, then lost or closed
    REFUSED = "refused"  # the peer broke the protocol or was incompatible


class _ConnectionLost(Exception):
    pass


_COMMAND_ENCODERS: dict[type, Callable[[Any, Any], bytes]] = {
    Subscribe: lambda conn, cmd: conn.encode_subscribe(cmd.topic),
    Cancel: lambda conn, cmd: conn.encode_cancel(cmd.topic),
    Join: lambda conn, cmd: conn.encode_join(cmd.group),
    Leave: lambda conn, cmd: conn.encode_leave(cmd.group),
    Ping: lambda conn, cmd: conn.encode_ping(cmd.ttl, cmd.context),
    Pong: lambda conn, cmd: conn.encode_pong(cmd.context),
}
_PEER_COMMANDS = (Subscribe, Cancel, Join, Leave)


def _join_wires(batch: list[Any], encode_into: Callable[[bytearray, list[bytes]], None]) -> Any:
    """The wire bytes of a batch of :class:`Fanout` items, encoding those no other
    writer has; None when the batch holds anything else or more than two writes'
    worth (the writer's general loop takes the batch then)."""
    try:
        wires = [item.wire for item in batch]
    except AttributeError:
        return None
    if None in wires:
        for i, wire in enumerate(wires):
            if wire is None:
                buf = bytearray()
                encode_into(buf, batch[i].frames)
                wires[i] = batch[i].wire = bytes(buf)
    if sum(map(len, wires)) > 2 * WRITE_BATCH:
        return None
    return b"".join(wires)


def _log_closed(where: str, conn: Connection) -> None:
    if conn.in_message:
        log.warning(
            "%s: peer closed the connection mid-message; its unfinished message is dropped",
            where,
        )
    else:
        log.debug("%s: peer closed the connection", where)


def _log_lost(where: str, conn: Connection, exc: BaseException) -> None:
    if conn.in_message:
        log.warning(
            "%s: connection lost mid-message (%s); its unfinished message is dropped",
            where,
            exc,
        )
    else:
        log.debug("%s: connection lost: %s", where, exc)


class ReadThrough:
    """A receiving task's way to read its only peer's connection itself.

    A task about to park in a receive, with nothing queued, on a socket whose only
    peer is a live stream connection, waits on the connection's socket
    (:meth:`wait`) instead of waiting for the reader to hand it a message, and
    reads and parses what arrives itself (:meth:`read` does what one turn of the
    reader's loop does): it has its message one scheduler pass (~6 µs here)
    sooner, one pass on each side of a request-reply round trip. The reader stands
    by meanwhile (:meth:`stand_by`); if it was still on the socket when the task
    began to wait, both wake for the next data and whichever runs first reads it,
    after which the reader stands by. The end of the stream, an error or a protocol
    violation met here ends the connection exactly as the reader would. Offered on
    OS sockets (:class:`RawSocket`); with heartbeats on the task keeps the time of
    the last read for the heartbeat task, as the reader does.
    """

    __slots__ = (
        "_conn",
        "_engine",
        "_last_heard",
        "_peer",
        "_raw",
        "_reader",
        "_state",
        "_where",
        "ended",
        "waiting",
    )

    def __init__(
        self,
        engine: SocketEngine,
        conn: Connection,
        peer: Peer,
        raw: RawSocket,
        state: dict[str, Outcome],
        where: str,
        last_heard: list[float] | None = None,
    ) -> None:
        self._engine = engine
        #: the heartbeat task's time of the last read, when heartbeats are on
        self._last_heard = last_heard
        self._conn = conn
        self._peer = peer
        self._raw = raw
        self._state = state
        self._where = where
        #: set once :meth:`read` met the end of the connection: read it no more
        self.ended = False
        #: the receiving task parked in :meth:`wait`, if one is (one at a time)
        self.waiting: trio.lowlevel.Task | None = None
        # the reader, while it stands by (see stand_by)
        self._reader = Waiters()

    async def wait(self) -> None:
        """Park until the connection has data; ``trio.ClosedResourceError`` when
        :meth:`interrupt` is called or the connection ends meanwhile.

        Only while :attr:`waiting` is None: one task at a time waits here.
        """
        task = trio.lowlevel.current_task()
        self.waiting = task
        try:
            await self._raw.wait_readable_too()
        finally:
            if self.waiting is task:
                self.waiting = None
            self._reader.unpark_all()

    def interrupt(self) -> None:
        """Wake the task parked in :meth:`wait` (``trio.ClosedResourceError`` there);
        a no-op when none is."""
        if self.waiting is not None:
            self.waiting = None
            self._raw.interrupt()

    async def stand_by(self) -> None:
        """The reader's wait while a receiving task waits on the socket for it.

        Were both parked on the socket, the reader would wake for every message
        too, and read it first half of the time (trio runs a batch of woken tasks
        in either order), so the receiving task would gain nothing then and pay a
        failed read. Instead the reader parks here until the receiving task stops
        waiting, whatever the reason, and then looks at the socket again unless
        the task waits once more: between the two, one of them always watches.
        """
        await self._reader.park()

    @enable_ki_protection
    def read(self) -> None:
        """Read what the socket holds now and hand its messages to the peer's pipe.

        Protected from ``KeyboardInterrupt`` like the reader: a Ctrl-C between the
        read and the parse would lose bytes from the middle of the stream.
        """
        if self.ended:
            return
        conn = self._conn
        try:
            data = self._raw.recv(RECEIVE_SIZE)
        except BlockingIOError:
            return  # the reader was first
        except OSError as exc:
            _log_lost(self._where, conn, exc)
            self._end()
            return
        if not data:
            _log_closed(self._where, conn)
            self._end()
            return
        if self._last_heard is not None:
            self._last_heard[0] = trio.current_time()
        try:
            self._engine.deliver(self._peer, conn.receive_data(data))
        except ProtocolError as exc:
            log.warning("%s: dropping connection: %s", self._where, exc)
            self._state["outcome"] = Outcome.REFUSED
            self._end()

    def _end(self) -> None:
        self.ended = True
        peer = self._peer
        if peer.read_through is self:
            peer.read_through = None
        if peer.scope is not None:
            peer.scope.cancel()


class _DatagramListener:
    """A bound DISH udp endpoint, closable like a stream listener."""

    def __init__(self, receiver: udp.UdpReceiver, peer: Peer, engine: SocketEngine) -> None:
        self.receiver = receiver
        self.peer = peer
        self.engine = engine
        self.endpoint = receiver.endpoint

    async def aclose(self) -> None:
        self.engine.detach(self.peer)
        await self.receiver.aclose()


class SocketEngine:
    """Endpoints, peers and tasks of one socket, run in the socket's nursery."""

    def __init__(
        self,
        socket_type: str,
        options: dict[str, Any],
        strategy: Any,
        nursery: trio.Nursery,
        wake_receivers: Callable[[], None],
        wake_senders: Callable[[], None],
    ) -> None:
        self.socket_type = socket_type
        self.options = options
        self.strategy = strategy
        self.nursery = nursery
        self.wake_receivers = wake_receivers
        self.wake_senders = wake_senders
        self.identity: bytes = options.get("routing_id") or b""
        #: resolved endpoint -> (listener or None for inproc, acceptor's cancel scope)
        self.listeners: dict[str, tuple[Any, trio.CancelScope | None]] = {}
        #: connected endpoint text -> (peer, connecter's cancel scope or None for inproc)
        self.connecters: dict[str, tuple[Peer, trio.CancelScope | None]] = {}
        #: every peer with a live link, for linger and close
        self.peers: set[Peer] = set()
        self.flush_lot = trio.lowlevel.ParkingLot()
        self.closing = False
        self.zap_requests = 0
        #: connections still in their handshake, bounded by ``max_handshakes``
        self.handshake_slots = trio.Semaphore(options["max_handshakes"])
        #: udp datagrams that did not parse / that a full queue or a failed send lost
        self.datagrams_malformed = 0
        self.datagrams_dropped = 0
        #: where monitor events go (the socket fans them out to its monitors)
        self.emit: Callable[[monitor.MonitorEvent], None] = lambda event: None
        #: may the next message put into an idle connection's empty pipe be written by
        #: the sending task itself? Cleared by such a write; set again whenever the
        #: socket's tasks wait or yield, and when a writer goes idle (see ``writer``)
        self.write_through = True
        if hasattr(strategy, "kick"):
            strategy.kick = self.kick

    def kick(self, peer: Peer) -> None:
        """Close one peer's connection (ROUTER handover), keeping the others."""
        if peer.kind == "inproc":
            self.unlink_inproc(peer)
        elif peer.scope is not None:
            peer.scope.cancel()

    # -- wiring ----------------------------------------------------------------------
    def new_peer(self, endpoint: str, kind: str, out_pipe: Pipe, in_pipe: Pipe) -> Peer:
        """A peer whose pipes wake this socket's senders and receivers."""
        peer = Peer(endpoint, kind, out_pipe, in_pipe)
        out_pipe.on_writable = self.wake_senders
        if self.strategy.eager:
            strategy = self.strategy
            in_pipe.on_readable = lambda: strategy.incoming(peer)
        else:
            in_pipe.on_readable = self.wake_receivers
        return peer

    def attach(self, peer: Peer) -> bool:
        """Hand ``peer`` to the strategy; wakes senders that waited for a peer."""
        if not self.strategy.attach(peer):
            return False
        peer.attached = True
        self.wake_senders()
        if peer.in_pipe and peer.in_pipe.on_readable is not None:
            peer.in_pipe.on_readable()
        return True

    def detach(self, peer: Peer) -> None:
        """Take ``peer`` away from the strategy for good."""
        peer.gone = True
        if peer.attached:
            peer.attached = False
            self.strategy.detach(peer)
        self.peers.discard(peer)
        self.wake_senders()
        self.wake_receivers()
        self.flush_lot.unpark_all()

    # -- bind / connect ------------------------------------------------------------
    async def bind(self, endpoint: Endpoint) -> str:
        """Listen on ``endpoint``; return the endpoint actually bound."""
        if endpoint.transport == "inproc":
            return self.bind_inproc(endpoint)
        if endpoint.transport == "udp" and self.socket_type == "DISH":
            return await self.bind_udp(endpoint)
        if endpoint.transport not in ("tcp", "ipc"):
            raise EndpointError(
                f"endpoint {str(endpoint)!r}: udp:// is only for RADIO (connect) and DISH (bind)"
            )
        try:
            listener = await transport.listen(endpoint)
        except (OSError, ValueError) as exc:
            self.emit(monitor.BindFailed(str(endpoint), str(exc)))
            raise
        resolved = listener.endpoint
        self.emit(monitor.Listening(resolved))
        scope = await self.nursery.start(self.acceptor, listener, resolved)
        self.listeners[resolved] = (listener, scope)
        return resolved

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint`` (as returned by :meth:`bind`)."""
        entry = self.listeners.pop(endpoint, None)
        if entry is None:
            raise OSError(2, f"{endpoint} is not bound")
        listener, scope = entry
        if listener is None:
            registry().unbind(endpoint[len("inproc://") :], self)
        else:
            if scope is not None:
                scope.cancel()
            with trio.CancelScope(shield=True):
                await listener.aclose()
        self.emit(monitor.Closed(endpoint))

    async def connect(self, endpoint: Endpoint) -> None:
        """Start connecting to ``endpoint`` in the background."""
        key = str(endpoint)
        if key in self.connecters:
            raise OSError(106, f"{key} is already connected")
        if endpoint.transport == "inproc":
            self.connect_inproc(endpoint)
            return
        if endpoint.transport == "udp" and self.socket_type == "RADIO":
            await self.connect_udp(endpoint)
            return
        if endpoint.transport not in ("tcp", "ipc"):
            raise EndpointError(
                f"endpoint {str(endpoint)!r}: udp:// is only for RADIO (connect) and DISH (bind)"
            )
        peer = self.new_peer(
            key, "stream", Pipe(self.options["sndhwm"]), Pipe(self.options["rcvhwm"])
        )
        # a PAIR already paired refuses the peer: it then waits for its handshake like an
        # immediate one, and is refused there (with back-off) if the pair is still taken
        attached = not self.options["immediate"] and self.attach(peer)
        self.peers.add(peer)
        scope = await self.nursery.start(self.connecter, endpoint, peer, attached)
        self.connecters[key] = (peer, scope)

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint`` and drop its peer and queue."""
        entry = self.connecters.pop(endpoint, None)
        if entry is None:
            raise OSError(2, f"{endpoint} is not connected")
        peer, scope = entry
        if scope is not None:
            scope.cancel()
        if peer.kind == "inproc":
            registry().forget(self, peer)
            self.unlink_inproc(peer)
        else:
            peer.out_pipe.clear()
            self.detach(peer)
        await trio.lowlevel.checkpoint()

    # -- tcp / ipc actors --------------------------------------------------------------
    @enable_ki_protection
    async def acceptor(
        self,
        listener: Any,
        endpoint: str,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on one listener until unbound or closed."""
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                # at most max_handshakes accepted connections may be mid-handshake: past
                # that the kernel's backlog holds newcomers (a slow-loris flood waits
                # out handshake_ivl instead of growing memory)
                await self.handshake_slots.acquire()
                try:
                    stream, address = await listener.accept()
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    self.handshake_slots.release()
                    return
                except OSError as exc:
                    # EMFILE and friends: log, breathe, go on serving the others
                    log.warning("%s: accept failed: %s", endpoint, exc)
                    self.handshake_slots.release()
                    await trio.sleep(0.1)
                    continue
                self.emit(monitor.Accepted(endpoint, address))
                self.nursery.start_soon(self.accepted, stream, endpoint, address)

    @enable_ki_protection
    async def accepted(self, stream: trio.abc.Stream, endpoint: str, address: str) -> None:
        """One accepted connection: a fresh peer that lives as long as the stream."""
        peer = self.new_peer(
            endpoint, "stream", Pipe(self.options["sndhwm"]), Pipe(self.options["rcvhwm"])
        )
        peer.remote_address = address
        slot = [True]

        def release() -> None:
            if slot[0]:
                slot[0] = False
                self.handshake_slots.release()

        try:
            await self.run_connection(stream, peer, attached=False, handshake_done=release)
        finally:
            release()
            peer.out_pipe.clear()
            self.detach(peer)
            with trio.CancelScope(shield=True):
                await stream.aclose()

    @enable_ki_protection
    async def connecter(
        self,
        endpoint: Endpoint,
        peer: Peer,
        attached: bool,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect, run the connection, and reconnect with back-off, forever."""
        base = self.options["reconnect_ivl"]
        cap = self.options["reconnect_ivl_max"]
        immediate = not attached
        with trio.CancelScope() as scope:
            task_status.started(scope)
            delay = base
            refused = 0.0
            while True:
                try:
                    stream = await transport.connect(endpoint)
                except OSError as exc:
                    log.debug("%s: connect failed: %s", endpoint, exc)
                    self.emit(monitor.ConnectDelayed(str(endpoint), str(exc)))
                    outcome = Outcome.LOST
                else:
                    self.emit(monitor.Connected(str(endpoint)))
                    if immediate:
                        peer.gone = False
                    try:
                        outcome = await self.run_connection(stream, peer, attached=not immediate)
                    finally:
                        if immediate:
                            peer.out_pipe.clear()
                            self.detach(peer)
                            self.peers.add(peer)
                        with trio.CancelScope(shield=True):
                            await stream.aclose()
                if outcome is Outcome.REFUSED:
                    refused = min(max(REFUSED_MIN, base, refused * 2), max(REFUSED_MAX, cap))
                    wait = refused
                else:
                    if outcome is Outcome.DONE:
                        delay, refused = base, 0.0
                    wait = delay
                    if cap > base:
                        delay = min(delay * 2, cap)
                # jitter keeps a crowd of clients from reconnecting in lockstep; after a
                # refusal it only lengthens the wait, which stays at least REFUSED_MIN
                refused_now = outcome is Outcome.REFUSED
                wait *= _JITTER.uniform(1.0, 1.1) if refused_now else _JITTER.uniform(0.9, 1.1)
                self.emit(monitor.ConnectRetried(str(endpoint), wait))
                await trio.sleep(wait)

    async def run_connection(
        self,
        stream: trio.abc.Stream,
        peer: Peer,
        *,
        attached: bool,
        handshake_done: Callable[[], None] | None = None,
    ) -> Outcome:
        """Handshake on ``stream``, then run its reader and writer until it ends.

        ``handshake_done`` is called once the handshake is over, whatever its outcome.
        """
        options = self.options
        security = options["security"]
        conn = Connection(
            self.socket_type,
            identity=self.identity,
            maxmsgsize=options["maxmsgsize"],
            mechanism=security.mechanism() if security is not None else None,
        )
        where = f"{peer.endpoint} {peer.remote_address}".rstrip()
        try:
            events = await self.handshake(stream, conn, peer)
        except ProtocolError as exc:
            log.warning("%s: handshake refused: %s", where, exc)
            self.emit(monitor.HandshakeFailed(peer.endpoint, peer.remote_address, str(exc)))
            return Outcome.REFUSED
        except trio.TooSlowError:
            log.warning("%s: handshake timed out after %ss", where, options["handshake_ivl"])
            self.emit(
                monitor.HandshakeFailed(peer.endpoint, peer.remote_address, "handshake timed out")
            )
            return Outcome.LOST
        except (
            _ConnectionLost,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            OSError,
        ) as exc:
            log.debug("%s: lost during handshake: %s", where, exc)
            self.emit(monitor.HandshakeFailed(peer.endpoint, peer.remote_address, str(exc)))
            return Outcome.LOST
        finally:
            if handshake_done is not None:
                handshake_done()
        peer.conn = conn
        peer.peer_type = conn.peer_socket_type
        peer.identity = conn.peer_identity
        peer.version = conn.peer_version
        if not attached and not self.attach(peer):
            reason = f"a {self.socket_type} socket takes one peer only"
            log.warning("%s: refused: %s", where, reason)
            self.emit(monitor.HandshakeFailed(peer.endpoint, peer.remote_address, reason))
            # tell the peer why, so that it backs off instead of reconnecting at once
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await stream.send_all(conn.encode_error(reason))
            return Outcome.REFUSED
        peer.connected = True
        peer.gone = False
        self.peers.add(peer)
        self.emit(monitor.HandshakeSucceeded(peer.endpoint, peer.remote_address, peer.peer_type))
        self.strategy.connected(peer)
        self.wake_senders()
        state = {"outcome": Outcome.DONE}
        last_heard = [trio.current_time()]
        raw = RawSocket.of(stream)
        read_through = (
            ReadThrough(
                self,
                conn,
                peer,
                raw,
                state,
                where,
                last_heard if options["heartbeat_ivl"] else None,
            )
            if raw is not None
            else None
        )
        try:
            with trio.CancelScope() as scope:
                peer.scope = scope
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        self.writer, stream, conn, peer, nursery.cancel_scope, where, raw
                    )
                    if options["heartbeat_ivl"]:
                        nursery.start_soon(
                            self.heartbeat, peer, last_heard, nursery.cancel_scope, where
                        )
                    await self.reader(
                        stream, conn, peer, events, state, where, last_heard, raw, read_through
                    )
                    nursery.cancel_scope.cancel()
        finally:
            peer.read_through = None
            if raw is not None:
                raw.close()
            self.emit(monitor.Disconnected(peer.endpoint, peer.remote_address))
            peer.scope = None
            peer.connected = False
            peer.conn = None
            peer.writing = False
            if attached:
                self.strategy.disconnected(peer)
            self.flush_lot.unpark_all()
        return state["outcome"]

    async def handshake(self, stream: trio.abc.Stream, conn: Connection, peer: Peer) -> list[Any]:
        """Greeting, mechanism exchange and ZAP; returns events that followed in the same read."""
        limit = self.options["handshake_ivl"]
        with trio.fail_after(limit if limit is not None else math.inf):
            await stream.send_all(conn.start())
            while True:
                data = await stream.receive_some(RECEIVE_SIZE)
                if not data:
                    raise _ConnectionLost("peer closed the connection during the handshake")
                events = conn.receive_data(data)
                while conn.pending_zap is not None:
                    reply = await self.zap(conn.pending_zap, peer)
                    try:
                        events += conn.zap_reply(reply)
                    except ProtocolError:
                        # the refusal's ERROR is queued: let the client read why
                        with contextlib.suppress(
                            trio.BrokenResourceError, trio.ClosedResourceError, OSError
                        ):
                            await stream.send_all(conn.data_to_send())
                        raise
                if conn.handshake_complete and not await self.null_zap_admits(conn, peer):
                    with contextlib.suppress(
                        trio.BrokenResourceError, trio.ClosedResourceError, OSError
                    ):
                        await stream.send_all(conn.data_to_send() + conn.encode_error("400"))
                    raise ProtocolError("ZAP refused the client (400)")
                out = conn.data_to_send()
                if out:
                    await stream.send_all(out)
                for event in events:
                    if event.__class__ is PeerError:
                        raise ProtocolError(f"peer sent ERROR: {event.reason}")
                if conn.handshake_complete:
                    return [
                        e for e in events if e.__class__ is list or e.__class__ in _PEER_COMMANDS
                    ]

    def zap_request(
        self, mechanism: bytes, credentials: tuple[bytes, ...], peer: Peer
    ) -> list[bytes]:
        """The RFC 27 request frames for one handshake."""
        self.zap_requests += 1
        address = peer.remote_address.rpartition(":")[0].strip("[]")
        return [
            ZAP_VERSION,
            b"%d" % self.zap_requests,
            self.options["zap_domain"].encode(),
            address.encode(),
            peer.identity,
            mechanism,
            *credentials,
        ]

    async def zap(self, request: ZapRequest, peer: Peer) -> ZapReply:
        """Ask the run's Authenticator; without one, CURVE admits and PLAIN refuses."""
        handler = current_authenticator()
        if handler is None:
            await trio.lowlevel.checkpoint()
            if request.mechanism == b"PLAIN":
                return ZapReply("400", "no authenticator: a PLAIN server admits nobody")
            return ZapReply("200", "OK")
        reply = await handler.handle(self.zap_request(request.mechanism, request.credentials, peer))
        code = reply[2].decode("ascii", "replace") if len(reply) > 2 else "500"
        text = reply[3].decode("utf-8", "replace") if len(reply) > 3 else ""
        user_id = reply[4] if len(reply) > 4 else b""
        try:
            metadata = decode_metadata(reply[5]) if len(reply) > 5 and reply[5] else {}
        except ProtocolError:
            return ZapReply("500", "malformed metadata in the ZAP reply")
        return ZapReply(code, text, user_id, metadata)

    async def null_zap_admits(self, conn: Connection, peer: Peer) -> bool:
        """NULL consults ZAP only for sockets with a zap_domain, as in libzmq."""
        if self.options["security"] is not None or not self.options["zap_domain"]:
            return True
        handler = current_authenticator()
        if handler is None:
            return True
        reply = await handler.handle(self.zap_request(b"NULL", (), peer))
        return len(reply) > 2 and reply[2] == b"200"

    async def reader(
        self,
        stream: trio.abc.Stream,
        conn: Connection,
        peer: Peer,
        events: list[Any],
        state: dict[str, Outcome],
        where: str,
        last_heard: list[float],
        raw: RawSocket | None = None,
        read_through: ReadThrough | None = None,
    ) -> None:
        """Parse everything the peer sends; a full incoming pipe stops reading.

        With a :class:`RawSocket` it reads with direct system calls and parks in
        ``wait_readable`` only when the socket is empty: a short read means the
        socket was drained, so it waits at once; a full read yields to the scheduler
        (a checkpoint) before reading again, so a flood never starves other tasks.
        ``read_through`` is offered to receiving tasks once the handshake's leftovers
        are handed on (see :class:`ReadThrough`): such a task may read first.
        """
        pipe = peer.in_pipe
        # the time of the last read matters to the heartbeat task only
        heartbeats = bool(self.options["heartbeat_ivl"])
        try:
            self.deliver(peer, events)
            if read_through is not None:
                peer.read_through = read_through
            ready = True
            data: bytes | bytearray
            while True:
                if pipe.full:
                    # we stopped reading, the peer is not silent: no heartbeat timeout meanwhile
                    last_heard[0] = math.inf
                    await pipe.wait_writable()
                    last_heard[0] = trio.current_time()
                # a PING's TTL bounds the next read only, as in libzmq (any data clears it)
                ttl, peer.ttl = peer.ttl, 0.0
                if raw is not None:
                    if not ready:
                        if (
                            read_through is not None
                            and read_through.waiting is not None
                            and not ttl
                        ):
                            await read_through.stand_by()
                            continue
                        if ttl:
                            with trio.move_on_after(ttl) as timer:
                                await raw.wait_readable()
                            if timer.cancelled_caught:
                                log.warning(
                                    "%s: heartbeat TTL of %ss expired, dropping", where, ttl
                                )
                                return
                        else:
                            await raw.wait_readable()
                    if read_through is not None and read_through.ended:
                        return  # a receiving task met the end and ends the connection
                    try:
                        data = raw.recv(RECEIVE_SIZE)
                    except BlockingIOError:
                        ready = False
                        if ttl:
                            peer.ttl = ttl
                        continue
                elif ttl:
                    with trio.move_on_after(ttl) as timer:
                        data = await stream.receive_some(RECEIVE_SIZE)
                    if timer.cancelled_caught:
                        log.warning("%s: heartbeat TTL of %ss expired, dropping", where, ttl)
                        return
                else:
                    data = await stream.receive_some(RECEIVE_SIZE)
                if not data:
                    _log_closed(where, conn)
                    return
                if heartbeats:
                    last_heard[0] = trio.current_time()
                self.deliver(peer, conn.receive_data(data))
                if raw is not None:
                    ready = len(data) == RECEIVE_SIZE
                    if ready:
                        await trio.lowlevel.checkpoint()
                    elif pipe:
                        # We handed on a message, perhaps a request whose reply is
                        # coming. Like trio's own streams, which look again after every
                        # call, look once more before sleeping in epoll, but only after
                        # the woken task has had its turn: a reply written in that
                        # time is read without a wake-up from the kernel.
                        for _ in range(LOOK_AGAIN_AFTER):
                            await trio.lowlevel.checkpoint()
                        ready = True
        except ProtocolError as exc:
            log.warning("%s: dropping connection: %s", where, exc)
            state["outcome"] = Outcome.REFUSED
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            _log_lost(where, conn, exc)

    def deliver(self, peer: Peer, events: list[Any]) -> None:
        """Hand a batch of parsed events to the peer's incoming pipe in one go."""
        if not events:
            return
        pipe = peer.in_pipe
        if events[-1].__class__ is list and len(events) == 1:
            # one message, the usual case of a request or a reply
            pipe.put(events[0])
            return
        batch: list[Any] = []
        for event in events:
            cls = event.__class__
            if cls is list:
                batch.append(event)
            elif cls in _PEER_COMMANDS:
                if self.strategy.wants_commands:
                    batch.append(event)
            elif cls is Ping:
                peer.out_pipe.put(Pong(event.context))
                if event.ttl:
                    peer.ttl = event.ttl
            elif cls is PeerError:
                raise ProtocolError(f"peer sent ERROR: {event.reason}")
            # PONG and unknown commands carry nothing for the socket
        if batch:
            pipe.extend(batch)

    @enable_ki_protection
    async def writer(
        self,
        stream: trio.abc.Stream,
        conn: Connection,
        peer: Peer,
        done: trio.CancelScope,
        where: str,
        raw: RawSocket | None = None,
    ) -> None:
        """Drain the outgoing pipe into as few writes as possible.

        Messages are encoded into batches of up to :data:`WRITE_BATCH` bytes; with a
        :class:`RawSocket`, frames of :data:`BIG_FRAME` bytes or more are written from
        the sender's own object instead of being copied into the batch, and while this
        writer is idle, the first message put into its empty pipe may be written by
        the sending task itself (:meth:`Pipe.put`'s ``direct``): one scheduler pass
        less per message on a request-reply path.
        """
        pipe = peer.out_pipe
        encode_into = conn.message_encoder()
        encoders = _COMMAND_ENCODERS
        # a PUB's message for several subscribers is encoded once, unless encrypted
        share = not conn.mechanism.encrypts
        big = BIG_FRAME if raw is not None and share else math.inf
        direct = self._write_through(conn, pipe, raw) if raw is not None and share else None
        try:
            while True:
                if not pipe:
                    peer.writing = False
                    if self.closing:
                        self.flush_lot.unpark_all()
                    if direct is not None:
                        self.write_through = True
                        pipe.direct = direct
                        try:
                            await pipe.wait_readable()
                        finally:
                            pipe.direct = None
                    else:
                        await pipe.wait_readable()
                    continue
                if conn.closed:
                    # the reader ended the connection (peer ERROR, protocol error) before
                    # our cancellation arrived: leave the queue for the next connection
                    return
                peer.writing = True
                parts: list[Any] = []
                first = pipe.peek()
                if share and first.__class__ is Fanout:
                    # a publisher's queue: a run of messages another writer has
                    # probably encoded already, joined at C speed; as many as a
                    # write of messages like the first one takes
                    wire = first.wire
                    size = len(wire) if wire is not None else sum(map(len, first.frames))
                    batch = pipe.take(min(WRITE_ITEMS, WRITE_BATCH // (size + 1) + 1))
                    buf = _join_wires(batch, encode_into)
                    if buf is not None:
                        if raw is not None:
                            await self._send_raw(raw, buf)
                        else:
                            await stream.send_all(buf)
                        if pipe:
                            await trio.lowlevel.cancel_shielded_checkpoint()
                        continue
                else:
                    batch = pipe.take(WRITE_ITEMS)
                buf = bytearray()
                used = 0
                for item in batch:
                    used += 1
                    cls = item.__class__
                    if cls is list:
                        if len(item[-1]) >= big:
                            # written from the sender's own object, after this batch
                            self._encode_big(parts, buf, item)
                            buf = bytearray()
                            break
                        encode_into(buf, item)
                    elif cls is Fanout:
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
                        buf += item
                    else:
                        buf += encoders[cls](conn, item)
                    if len(buf) >= WRITE_BATCH:
                        break
                if used < len(batch):
                    pipe.unshift(batch[used:])
                if raw is None:
                    await stream.send_all(buf)
                    continue
                if buf:
                    parts.append(buf)
                for part in parts:
                    await self._send_raw(raw, part)
                if pipe:
                    # more to write at once: let other tasks run first
                    await trio.lowlevel.cancel_shielded_checkpoint()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("%s: write failed: %s", where, exc)
        finally:
            peer.writing = False
            if pipe and pipe.peek().__class__ is bytes:
                # half a message belongs to this connection only: never resend it
                pipe.popleft()
            done.cancel()

    @staticmethod
    def _encode_big(parts: list[Any], buf: bytearray, frames: list[bytes]) -> None:
        """Queue ``buf`` and a message with a big last frame into ``parts``, copying
        no frame of :data:`BIG_FRAME` bytes or more."""
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

    @staticmethod
    async def _send_raw(raw: RawSocket, data: Any) -> None:
        """Write all of ``data`` with direct system calls, waiting only when blocked."""
        view = memoryview(data)
        send = raw.send
        while view:
            try:
                sent = send(view)
            except BlockingIOError:
                await raw.wait_writable()
                continue
            view = view[sent:]

    def _write_through(
        self, conn: Connection, pipe: Pipe, raw: RawSocket
    ) -> Callable[[Any], Any]:
        """The ``direct`` hook of an idle writer's pipe (unencrypted connections only).

        The sending task encodes the message and writes it with one non-blocking
        system call. At most one such write happens between two of the socket's
        waits or yields (:attr:`write_through`): a loop of sends writes its first
        message through and queues the rest for one batched write, instead of paying
        a system call per message. What the kernel did not take is queued for the
        writer (the rest of the message as ``bytes``, written before anything else).
        """
        encode_into = conn.message_encoder()
        send = raw.send

        @enable_ki_protection
        def direct(item: Any) -> Any:
            if not self.write_through or conn.closed:
                return item
            cls = item.__class__
            if cls is list:
                frames = item
            elif cls is Fanout:
                frames = item.frames
            else:
                return item
            if len(frames[-1]) >= BIG_FRAME:
                return item
            self.write_through = False
            buf = bytearray()
            encode_into(buf, frames)
            try:
                sent = send(buf)
            except BlockingIOError:
                return item
            except OSError:
                # the writer meets the same error and ends the connection
                return item
            if cls is Fanout and item.wire is None:
                item.wire = bytes(buf)
            if sent == len(buf):
                return None
            return item if sent == 0 else bytes(buf[sent:])

        return direct

    @enable_ki_protection
    async def heartbeat(
        self, peer: Peer, last_heard: list[float], done: trio.CancelScope, where: str
    ) -> None:
        """Send PING every ``heartbeat_ivl``; drop a peer silent for ``heartbeat_timeout``."""
        ivl = self.options["heartbeat_ivl"]
        timeout = self.options["heartbeat_timeout"] or ivl
        ttl = self.options["heartbeat_ttl"] or 0.0
        while True:
            await trio.sleep(ivl)
            silent = trio.current_time() - last_heard[0]
            if silent > timeout:
                log.warning("%s: heartbeat timeout, silent for %.3fs", where, silent)
                done.cancel()
                return
            peer.out_pipe.put(Ping(ttl, b""))

    # -- udp (RADIO/DISH only: no ZMTP, one message per datagram) -----------------------
    async def bind_udp(self, endpoint: Endpoint) -> str:
        """A DISH's udp endpoint: one datagram peer fed by a receiver task."""
        try:
            receiver = await udp.open_receiver(endpoint)
        except (OSError, ValueError) as exc:
            self.emit(monitor.BindFailed(str(endpoint), str(exc)))
            raise
        resolved = receiver.endpoint
        peer = self.new_peer(resolved, "datagram", Pipe(0), Pipe(self.options["rcvhwm"]))
        peer.connected = True
        self.attach(peer)
        self.peers.add(peer)
        scope = await self.nursery.start(self.datagram_receiver, receiver, peer)
        self.listeners[resolved] = (_DatagramListener(receiver, peer, self), scope)
        self.emit(monitor.Listening(resolved))
        return resolved

    async def connect_udp(self, endpoint: Endpoint) -> None:
        """A RADIO's udp endpoint: one datagram peer drained by a sender task."""
        key = str(endpoint)
        sender = await udp.open_sender(endpoint)
        peer = self.new_peer(key, "datagram", Pipe(self.options["sndhwm"]), Pipe(0))
        peer.connected = True
        self.attach(peer)
        self.peers.add(peer)
        scope = await self.nursery.start(self.datagram_sender, sender, peer)
        self.connecters[key] = (peer, scope)

    @enable_ki_protection
    async def datagram_receiver(
        self,
        receiver: udp.UdpReceiver,
        peer: Peer,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Decode datagrams into ``[group, body]``; drop (and count) bad ones, never raise."""
        pipe = peer.in_pipe
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                try:
                    data = await receiver.receive()
                except (OSError, trio.ClosedResourceError) as exc:
                    log.debug("%s: udp receive failed: %s", receiver.endpoint, exc)
                    return
                try:
                    group, body = decode_datagram(data)
                except ProtocolError as exc:
                    self.datagrams_malformed += 1
                    log.debug("%s: dropped a malformed datagram: %s", receiver.endpoint, exc)
                    continue
                if pipe.full:
                    self.datagrams_dropped += 1
                    continue
                pipe.put([group, body])

    @enable_ki_protection
    async def datagram_sender(
        self,
        sender: udp.UdpSender,
        peer: Peer,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Send each queued ``[group, body]`` as one datagram; a failed send loses it."""
        pipe = peer.out_pipe
        with trio.CancelScope() as scope:
            task_status.started(scope)
            try:
                while True:
                    if not pipe:
                        peer.writing = False
                        if self.closing:
                            self.flush_lot.unpark_all()
                        await pipe.wait_readable()
                        continue
                    peer.writing = True
                    group, body = pipe.popleft()
                    try:
                        datagram = encode_datagram(group, body)
                    except ValueError as exc:
                        self.datagrams_dropped += 1
                        log.warning("%s: dropped a message: %s", peer.endpoint, exc)
                        continue
                    try:
                        await sender.send(datagram)
                    except OSError as exc:
                        # like libzmq: the datagram is lost, never retried
                        self.datagrams_dropped += 1
                        log.debug("%s: udp send failed: %s", peer.endpoint, exc)
            finally:
                peer.writing = False
                sender.close()

    # -- inproc ---------------------------------------------------------------------------
    def bind_inproc(self, endpoint: Endpoint) -> str:
        """Register an inproc name and take over the connects that waited for it."""
        name = endpoint.path or ""
        waiting = registry().bind(name, self)
        key = str(endpoint)
        self.listeners[key] = (None, None)
        self.emit(monitor.Listening(key))
        for engine, peer in waiting:
            self.link_inproc(engine, peer, key)
        return key

    def connect_inproc(self, endpoint: Endpoint) -> None:
        """Create the link's pipes now; hand them to the binder now or when it binds."""
        name = endpoint.path or ""
        key = str(endpoint)
        out_hwm, in_hwm = self.options["sndhwm"], self.options["rcvhwm"]
        # libzmq sizes an inproc pipe by both ends' marks; the binder's are unknown yet
        hwm = out_hwm + in_hwm if out_hwm and in_hwm else 0
        peer = self.new_peer(key, "inproc", Pipe(hwm), Pipe(hwm))
        self.connecters[key] = (peer, None)
        self.attach(peer)
        binder = registry().bound.get(name)
        if binder is None:
            registry().wait(name, self, peer)
        else:
            binder.link_inproc(self, peer, key)

    def link_inproc(self, connector: SocketEngine, their_peer: Peer, endpoint: str) -> None:
        """Join a connecting socket's peer to a new peer of ours over the same pipes."""
        if not is_compatible(self.socket_type, connector.socket_type):
            log.warning(
                "%s: refused inproc peer: %s cannot talk to %s",
                endpoint,
                connector.socket_type,
                self.socket_type,
            )
            connector.unlink_inproc(their_peer)
            return
        ours = self.new_peer(endpoint, "inproc", their_peer.in_pipe, their_peer.out_pipe)
        ours.peer_type, ours.identity = connector.socket_type, connector.identity
        their_peer.peer_type, their_peer.identity = self.socket_type, self.identity
        if not self.attach(ours):
            log.warning("%s: refused: a %s socket takes one peer only", endpoint, self.socket_type)
            connector.unlink_inproc(their_peer)
            return
        ours.on_gone = lambda: connector.unlink_inproc(their_peer)
        their_peer.on_gone = lambda: self.unlink_inproc(ours)
        for engine, peer in ((self, ours), (connector, their_peer)):
            peer.connected = True
            engine.peers.add(peer)
        self.strategy.connected(ours)
        connector.strategy.connected(their_peer)
        for engine, peer in ((self, ours), (connector, their_peer)):
            engine.wake_senders()
            engine.flush_lot.unpark_all()  # a lingering connecter's queue now has a reader
            if peer.in_pipe and peer.in_pipe.on_readable is not None:
                peer.in_pipe.on_readable()

    def unlink_inproc(self, peer: Peer) -> None:
        """Our inproc peer's other end went away (or we leave): drop the link."""
        if peer.gone:
            return
        peer.connected = False
        on_gone, peer.on_gone = peer.on_gone, None
        self.detach(peer)
        for key, (p, _scope) in list(self.connecters.items()):
            if p is peer:
                del self.connecters[key]
        if on_gone is not None:
            on_gone()

    # -- close ----------------------------------------------------------------------------
    def all_flushed(self) -> bool:
        """Every peer's outgoing queue is written out."""
        # connects still waiting for an inproc binder are not in peers, yet hold a queue
        peers = self.peers.union(peer for peer, _scope in self.connecters.values())
        return all(peer.flushed for peer in peers if not peer.gone or peer.writing)

    async def close(self, linger: float | None) -> None:
        """Unbind everything, flush for ``linger`` seconds, then cancel every task."""
        self.closing = True
        for endpoint in list(self.listeners):
            try:
                await self.unbind(endpoint)
            except OSError as exc:  # pragma: no cover - unbinding our own listener
                log.debug("%s: unbind on close failed: %s", endpoint, exc)
        if linger is None or linger > 0:
            with trio.move_on_after(math.inf if linger is None else linger):
                while not self.all_flushed():
                    await self.flush_lot.park()
        registry().forget(self)
        for peer in list(self.peers):
            if peer.kind == "inproc":
                self.unlink_inproc(peer)
        self.nursery.cancel_scope.cancel()
