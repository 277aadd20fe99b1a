"""The public socket: an async context manager whose nursery owns everything it runs.

Entering a socket opens its nursery, builds its engine (``trizmq.nursery``) and
applies ``bind=``/``connect=``; leaving it flushes for ``linger`` seconds and
cancels every task (at once when the body raised or was cancelled). Routing is the
socket type's strategy (``trizmq.patterns.sockets``).

Checkpoints: trio's convention is that every ``await`` is a checkpoint. trizmq's
send and receive keep the *cancellation* half of it on every call
(``checkpoint_if_cancelled``), but reschedule only when they must wait or once every
:data:`YIELD_EVERY` calls, because a full reschedule costs ~12 µs here against ~1 µs
for queueing a message. A loop of sends or receives that never waits therefore
still lets other tasks run, and still notices cancellation at every call. The
single-frame ``send``/``recv`` read trio's cancellation test themselves rather than
awaiting ``checkpoint_if_cancelled`` (see :func:`_probe_fast_cancel_check`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from types import TracebackType
from typing import Any, ClassVar

import trio

from ._endpoint import Endpoint, parse_endpoint
from ._errors import NotSupportedError
from ._message import Message
from ._monitor import Monitor, MonitorEvent
from ._options import validate_options
from .nursery.engine import SocketEngine
from .nursery.waiters import Waiters
from .patterns.routing import FairQueue, RoundRobin
from .patterns.sockets import STRATEGIES, SocketStrategy
from .patterns.sockets.pipeline import RoundRobinOut

__all__ = ["Socket"]

#: a send or receive that did not wait still yields to the scheduler once per this many calls
YIELD_EVERY = 128

_BYTES_LIKE = (bytes, bytearray, memoryview)


def _frame(data: Any) -> bytes:
    if data.__class__ is bytes:
        return data  # type: ignore[no-any-return,unused-ignore]
    if isinstance(data, _BYTES_LIKE):
        # copy: the caller may reuse a bytearray before the writer encodes it
        return bytes(data)
    if isinstance(data, str):
        raise TypeError("frames must be bytes-like, not str (encode it first)")
    raise TypeError(f"frames must be bytes-like, not {type(data).__name__}")


_current_task = trio.lowlevel.current_task


def _probe_fast_cancel_check() -> bool:
    """Whether this trio has the fields ``trio.lowlevel.checkpoint_if_cancelled`` reads.

    ``send()`` and ``recv()`` read them directly instead of awaiting that function:
    the same test (the task's cancel status, and a pending Ctrl-C for the main
    task), without creating a coroutine, which is a third of an inproc message's
    cost. These are trio internals, so they are probed once, from inside a run, and
    a trio without them gets the public function (``tests/test_cancel_check.py``
    says which one the installed trio gets).
    """
    try:
        task = _current_task()
        runner = task._runner
        return (
            isinstance(task._cancel_status.effectively_cancelled, bool)
            and isinstance(runner.ki_pending, bool)
            and runner.main_task is not None
        )
    except AttributeError:
        return False


#: set by the first socket entered (see :func:`_probe_fast_cancel_check`)
_FAST_CANCEL_CHECK = False
_FAST_CANCEL_PROBED = False


@trio.lowlevel.enable_ki_protection
async def _supervise(task_status: trio.TaskStatus[trio.Nursery]) -> None:
    """Own the nursery of a socket's tasks until the engine cancels it."""
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


class Socket:
    """Base class of every socket type; use a subclass such as :class:`trizmq.Push`."""

    #: the ZMTP Socket-Type of the subclass
    socket_type: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        self._options = validate_options(self.socket_type, options)
        strategy_class = STRATEGIES[self.socket_type]
        self._recv_lot = Waiters()
        self._send_lot = Waiters()
        self._strategy: SocketStrategy = strategy_class(
            self._options, self._wake_receivers, self._wake_senders
        )
        self._engine: SocketEngine | None = None
        self._nursery_manager: Any = None
        self._closed = False
        self._closing = False
        #: the hot paths' one check: entered, open, and able to send / receive
        self._sendable = False
        self._recvable = False
        self._closed_event: trio.Event | None = None
        self._ops = 0
        self._monitors: list[Monitor] = []
        self._incoming: deque[bytes] = deque()
        #: True when the subclass shows a message differently from the strategy's form
        self._own_frames = type(self)._frames_of is not Socket._frames_of
        #: the strategy routes exactly as the shared fair queue / round robin do, so
        #: recv()/send() may take their one-peer shortcut themselves
        strategy = self._strategy
        self._fair_queue: FairQueue[Any] | None = (
            strategy.inbound if type(strategy).recv is SocketStrategy.recv else None
        )
        self._round_robin: RoundRobin[Any] | None = (
            strategy.outbound
            if isinstance(strategy, RoundRobinOut) and type(strategy).send is RoundRobinOut.send
            else None
        )
        self._outgoing: list[bytes] = []
        #: the ReadThrough a receiving task of ours parks in (see _wait_to_recv)
        self._reading: Any = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._engine else "new"
        return f"<trizmq.{type(self).__name__} {state}>"

    # -- lifecycle -----------------------------------------------------------------------
    async def __aenter__(self) -> Any:
        if self._engine is not None or self._closed:
            raise RuntimeError(f"{type(self).__name__} can be entered only once")
        # entering while already cancelled: a plain Cancelled, before anything opens
        await trio.lowlevel.checkpoint_if_cancelled()
        global _FAST_CANCEL_CHECK, _FAST_CANCEL_PROBED
        if not _FAST_CANCEL_PROBED:
            _FAST_CANCEL_CHECK = _probe_fast_cancel_check()
            _FAST_CANCEL_PROBED = True
        self._nursery_manager = trio.open_nursery()
        outer = await self._nursery_manager.__aenter__()
        # The engine's tasks run in an inner nursery owned by a supervisor task, so that
        # closing (which cancels that nursery) never cancels the body of our async with,
        # which runs inside the outer nursery's scope.
        try:
            nursery: trio.Nursery = await outer.start(_supervise)
        except BaseException:
            # cancelled while starting (start() may even have reparented the supervisor
            # into ``outer`` first): stop it and close ``outer``, or trio's nursery stack
            # breaks. Shielded from the outside, so the cancellation propagates as itself.
            self._closing = self._closed = True
            outer.cancel_scope.shield = True
            outer.cancel_scope.cancel()
            await self._nursery_manager.__aexit__(None, None, None)
            raise
        self._engine = SocketEngine(
            self.socket_type,
            self._options,
            self._strategy,
            nursery,
            self._wake_receivers,
            self._wake_senders,
        )
        self._engine.emit = self._emit
        self._sendable = self._strategy.can_send
        self._recvable = self._strategy.can_recv
        try:
            for endpoint in self._options["bind"]:
                await self._engine.bind(endpoint)
            for endpoint in self._options["connect"]:
                await self._engine.connect(endpoint)
        except BaseException:
            await self._teardown(0)
            await self._nursery_manager.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        try:
            if exc_type is None:
                await self.aclose()
            else:
                # the owner failed or was cancelled: tear down at once, no linger
                await self._teardown(0)
        finally:
            # our tasks never raise, so the nursery exits cleanly; the body's own
            # exception (if any) propagates as itself, not wrapped in a group
            await self._nursery_manager.__aexit__(None, None, None)
        return False

    async def aclose(self) -> None:
        """Close: flush pending messages for up to ``linger`` seconds, then stop.

        Idempotent and shielded from cancellation for at most ``linger``; after it,
        every operation raises ``trio.ClosedResourceError``.
        """
        await self._teardown(self._options["linger"])

    async def _teardown(self, linger: float | None) -> None:
        if self._closing:
            if self._closed_event is not None:
                await self._closed_event.wait()
            else:
                await trio.lowlevel.checkpoint()
            return
        self._closing = True
        self._sendable = self._recvable = False
        # the rest of a message half read with recv(), or half sent with more=True
        self._incoming.clear()
        self._outgoing = []
        self._closed_event = trio.Event()
        try:
            with trio.CancelScope(shield=True):
                if self._engine is not None:
                    await self._engine.close(linger)
        finally:
            self._closed = True
            self._wake_receivers()
            self._send_lot.unpark_all()
            for monitor in list(self._monitors):
                monitor.close()
            self._closed_event.set()

    @property
    def closed(self) -> bool:
        """True once the socket is closed (or closing)."""
        return self._closing

    def _require_engine(self) -> SocketEngine:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")
        if self._engine is None:
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )
        return self._engine

    # -- endpoints -----------------------------------------------------------------------
    async def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; return it with a wildcard or 0 port resolved."""
        parsed = parse_endpoint(endpoint, for_bind=True)
        return await self._require_engine().bind(parsed)

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on an endpoint returned by :meth:`bind`."""
        await self._require_engine().unbind(str(parse_endpoint(endpoint, for_bind=True)))

    async def connect(self, endpoint: str) -> None:
        """Connect in the background (before or after the peer binds); returns at once."""
        parsed: Endpoint = parse_endpoint(endpoint, for_bind=False)
        await self._require_engine().connect(parsed)

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint``, dropping its queued messages."""
        await self._require_engine().disconnect(str(parse_endpoint(endpoint, for_bind=False)))

    # -- monitoring -----------------------------------------------------------------------
    def monitor(self, capacity: int = 1000) -> Monitor:
        """Watch this socket's events: ``async with sock.monitor() as events: async for ...``.

        See :class:`trizmq.MonitorEvent` and docs/monitor.md for the event types. It ends when the
        socket closes; it keeps at most ``capacity`` unread events.
        """
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")
        monitor = Monitor(capacity, self._monitors.remove)
        self._monitors.append(monitor)
        return monitor

    def _emit(self, event: MonitorEvent) -> None:
        for monitor in self._monitors:
            monitor.emit(event)

    # -- wake-ups ------------------------------------------------------------------------
    def _wake_receivers(self) -> None:
        self._recv_lot.unpark_all()  # a no-op with nobody parked
        reading = self._reading
        if reading is not None:
            reading.interrupt()  # a no-op once its task has woken

    def _wake_senders(self) -> None:
        if self._send_lot:
            self._send_lot.unpark_all()

    async def _yield_turn(self) -> None:
        """The fast paths' yield, once every YIELD_EVERY calls that did not wait."""
        self._ops = 0
        self._engine.write_through = True  # type: ignore[union-attr]
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def _wait_to_send(self) -> None:
        """Park until a pipe can take more (the socket waits: write-through again)."""
        self._engine.write_through = True  # type: ignore[union-attr]
        await self._send_lot.park()

    async def _wait_to_recv(self) -> None:
        """Park until a message may be there (the socket waits: write-through again).

        With one peer, a live stream connection, and nothing queued from it, the task
        waits on the connection's socket itself and reads what arrives (read-through,
        ``trizmq.nursery.engine.ReadThrough``): a message then takes one scheduler
        pass to reach it, not two. Anything that would wake a parked receiver
        (another peer's message, the socket closing) interrupts that wait.
        """
        engine = self._engine
        engine.write_through = True  # type: ignore[union-attr]
        peers = engine.peers  # type: ignore[union-attr]
        if len(peers) == 1:
            for peer in peers:
                reader = peer.read_through
                if reader is not None and reader.waiting is None and not peer.in_pipe:
                    self._reading = reader
                    try:
                        await reader.wait()
                    except trio.ClosedResourceError:
                        return  # interrupted: look again
                    finally:
                        if reader.waiting is None:
                            self._reading = None
                    reader.read()
                    return
        await self._recv_lot.park()

    # -- sending ---------------------------------------------------------------------------
    def _check_send(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")
        if not self._strategy.can_send:
            raise NotSupportedError(f"a {self.socket_type} socket cannot send")
        if self._engine is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    async def send_multipart(self, frames: Iterable[Any]) -> None:
        """Send a whole message; waits where the pattern says (no peer, or all full)."""
        msg = [_frame(f) for f in frames]
        if not msg:
            raise ValueError("a message needs at least one frame")
        await self._send_raw(msg)

    async def _send_raw(self, msg: list[bytes]) -> None:
        """Queue one message in the strategy's own form, waiting as the pattern says."""
        await trio.lowlevel.checkpoint_if_cancelled()
        strategy = self._strategy
        while True:
            if not self._sendable:
                self._check_send()
            if strategy.send(msg):
                # the fast path: yield to the scheduler only once every YIELD_EVERY calls
                self._ops += 1
                if self._ops >= YIELD_EVERY:
                    await self._yield_turn()
                return
            await self._wait_to_send()

    def _prepare(self, frames: Iterable[Any]) -> list[bytes]:
        """A message given as frames, in the strategy's own form."""
        msg = [_frame(f) for f in frames]
        if not msg:
            raise ValueError("a message needs at least one frame")
        return msg

    async def send_many(self, messages: Iterable[Iterable[Any]]) -> int:
        """Send whole messages in order; return how many were sent.

        Equivalent to awaiting :meth:`send_multipart` for each, but it checks for
        cancellation once, waits only where the pattern says, and yields to the
        scheduler once at the end: the batch form of the fast path. If it is
        cancelled while waiting, the messages before the one that waited were sent
        and that one and the rest were not.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        strategy = self._strategy
        count = 0
        for frames in messages:
            msg = self._prepare(frames)
            while True:
                if not self._sendable:
                    self._check_send()
                if strategy.send(msg):
                    break
                await self._wait_to_send()
            count += 1
        if self._engine is not None:
            self._engine.write_through = True
        await trio.lowlevel.cancel_shielded_checkpoint()
        return count

    def send_multipart_nowait(self, frames: Iterable[Any]) -> None:
        """Send a whole message or raise ``trio.WouldBlock``."""
        msg = [_frame(f) for f in frames]
        if not msg:
            raise ValueError("a message needs at least one frame")
        self._send_raw_nowait(msg)

    def _send_raw_nowait(self, msg: list[bytes]) -> None:
        self._check_send()
        if self._engine is None or not self._strategy.send(msg):
            raise trio.WouldBlock

    async def send(self, data: Any, *, more: bool = False) -> None:
        """Send one frame; ``more=True`` continues a multipart message (sent atomically)."""
        frame = data if data.__class__ is bytes else _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            await trio.lowlevel.checkpoint_if_cancelled()
            return
        if self._outgoing:
            msg, self._outgoing = [*self._outgoing, frame], []
            await self._send_raw(msg)
            return
        # _send_raw inlined: the single-frame send is the hottest path there is;
        # checkpoint_if_cancelled() inlined too (see _FAST_CANCEL_CHECK)
        if _FAST_CANCEL_CHECK:
            task = _current_task()
            if task._cancel_status.effectively_cancelled or (
                task is task._runner.main_task and task._runner.ki_pending
            ):
                await trio.lowlevel.checkpoint()
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        msg = [frame]
        strategy = self._strategy
        while True:
            if not self._sendable:
                self._check_send()
            round_robin = self._round_robin
            peer = round_robin.only if round_robin is not None else None
            # RoundRobinOut.send inlined for its commonest case, one peer
            if peer.out_pipe.offer(msg) if peer is not None else strategy.send(msg):
                self._ops += 1
                if self._ops >= YIELD_EVERY:
                    await self._yield_turn()
                return
            await self._wait_to_send()

    def send_nowait(self, data: Any, *, more: bool = False) -> None:
        """Send one frame or raise ``trio.WouldBlock`` (nothing is queued then)."""
        frame = _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            return
        msg = [*self._outgoing, frame]
        self.send_multipart_nowait(msg)
        self._outgoing = []

    # -- receiving -------------------------------------------------------------------------
    def _check_recv(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")
        if not self._strategy.can_recv:
            raise NotSupportedError(f"a {self.socket_type} socket cannot receive")
        if self._engine is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    async def recv_multipart(self) -> list[bytes]:
        """Receive a whole message (the rest of one, if :meth:`recv` started it)."""
        if self._incoming:
            rest = list(self._incoming)
            self._incoming.clear()
            await trio.lowlevel.checkpoint()
            return rest
        return self._frames_of(await self._recv_raw())

    async def _recv_raw(self) -> list[bytes]:
        """The next message in the strategy's own form (routing id or group first)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        strategy = self._strategy
        while True:
            if not self._recvable:
                self._check_recv()
            msg = strategy.recv()
            if msg is not None:
                self._ops += 1
                if self._ops >= YIELD_EVERY:
                    await self._yield_turn()
                return msg
            await self._wait_to_recv()

    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        """The frames the application sees of a strategy's message."""
        return raw

    def _message_of(self, raw: list[bytes]) -> Message:
        """The :class:`Message` of a strategy's message."""
        return Message(raw)

    def recv_multipart_nowait(self) -> list[bytes]:
        """Receive a whole message or raise ``trio.WouldBlock``."""
        if self._incoming:
            rest = list(self._incoming)
            self._incoming.clear()
            return rest
        self._check_recv()
        msg = self._strategy.recv()
        if msg is None:
            raise trio.WouldBlock
        return self._frames_of(msg)

    async def recv(self) -> bytes:
        """Receive one frame; :attr:`rcvmore` tells whether the message goes on."""
        if self._incoming:
            await trio.lowlevel.checkpoint()
            return self._incoming.popleft()
        # _recv_raw inlined: the single-frame receive is the hottest path there is;
        # checkpoint_if_cancelled() inlined too (see _FAST_CANCEL_CHECK)
        if _FAST_CANCEL_CHECK:
            task = _current_task()
            if task._cancel_status.effectively_cancelled or (
                task is task._runner.main_task and task._runner.ki_pending
            ):
                await trio.lowlevel.checkpoint()
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        strategy = self._strategy
        while True:
            if not self._recvable:
                self._check_recv()
            fair_queue = self._fair_queue
            peer = fair_queue.only if fair_queue is not None else None
            if peer is not None and not peer.gone:
                # SocketStrategy.recv inlined for its commonest case, one live peer:
                # a message, or nothing to read; anything else is dropped, as there
                msg = peer.in_pipe.poll()
                if msg.__class__ is list:
                    if strategy.accepts_all or strategy.accept(peer, msg):
                        break
                    continue
                if msg is not None:
                    continue
            else:
                msg = strategy.recv()
                if msg is not None:
                    break
            await self._wait_to_recv()
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()
        if self._own_frames:
            msg = self._frames_of(msg)
        if len(msg) > 1:
            self._incoming.extend(msg[1:])
        first: bytes = msg[0]
        return first

    def recv_nowait(self) -> bytes:
        """Receive one frame or raise ``trio.WouldBlock``."""
        if self._incoming:
            return self._incoming.popleft()
        msg = self.recv_multipart_nowait()
        self._incoming.extend(msg[1:])
        return msg[0]

    async def recv_many(self, max_messages: int = 1024) -> list[list[bytes]]:
        """Wait for one whole message, then take up to ``max_messages`` already queued.

        The batch form of :meth:`recv_multipart`: one wake-up for many messages.
        """
        if isinstance(max_messages, bool) or not isinstance(max_messages, int):
            raise TypeError(f"max_messages must be an int, not {max_messages!r}")
        if max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, not {max_messages!r}")
        batch = [await self.recv_multipart()]
        strategy = self._strategy
        while len(batch) < max_messages and not self._closing:
            msg = strategy.recv()
            if msg is None:
                break
            batch.append(self._frames_of(msg))
        return batch

    @property
    def rcvmore(self) -> bool:
        """True while frames of the message being read with :meth:`recv` remain."""
        return bool(self._incoming)

    async def recv_message(self) -> Message:
        """Receive a whole message with its metadata (group, routing id)."""
        if self._incoming:
            return Message(await self.recv_multipart())
        return self._message_of(await self._recv_raw())

    def __aiter__(self) -> Socket:
        return self

    async def __anext__(self) -> list[bytes]:
        try:
            return await self.recv_multipart()
        except trio.ClosedResourceError:
            raise StopAsyncIteration from None

    def statistics(self) -> dict[str, Any]:
        """Peers, endpoints and queue lengths, for diagnostics.

        ``queued_out`` and ``queued_in`` count the messages waiting in this socket's
        peer queues (outgoing: not yet written; incoming: not yet read);
        ``receivers_waiting`` and ``senders_waiting`` the tasks (and threads) parked
        in a receive or a send.
        """
        engine = self._engine
        stats: dict[str, Any] = dict(self._strategy.statistics())
        reading = self._reading
        stats["receivers_waiting"] = len(self._recv_lot) + (
            reading is not None and reading.waiting is not None
        )
        stats["senders_waiting"] = len(self._send_lot)
        if engine is not None:
            stats["bound"] = sorted(engine.listeners)
            stats["connected"] = sorted(engine.connecters)
            stats["live_peers"] = sum(1 for p in engine.peers if p.connected)
            peers = engine.peers | {peer for peer, _scope in engine.connecters.values()}
            stats["queued_out"] = sum(len(p.out_pipe) for p in peers)
            stats["queued_in"] = sum(len(p.in_pipe) for p in peers)
            if self.socket_type in ("RADIO", "DISH"):
                stats["datagrams_malformed"] = engine.datagrams_malformed
                stats["datagrams_dropped"] = engine.datagrams_dropped
        return stats
