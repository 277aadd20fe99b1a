"""A socket's life: its options, its runtime in a nursery of its own, monitors, close.

Entering a socket opens its nursery, builds its runtime (``trizmq.nursery``) and
applies ``bind=``/``connect=``; leaving it flushes for ``linger`` seconds and
cancels every task (at once when the body raised or was cancelled). The messages
a socket sends and receives are :class:`trizmq.Socket`'s business
(``trizmq._socket``); this base holds what every socket has before and after them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import trio

from . import _open_sockets
from ._monitor import Monitor, MonitorEvent
from ._options import Options, changed_options, check_compression, validate_options
from ._stats import SocketStats
from .nursery import fastpath
from .nursery.fastpath import trio_probe
from .nursery.fastpath.socket_state import FastPath
from .nursery.runtime import SocketRuntime
from .nursery.waiters import Waiters
from .patterns.sockets import SOCKET_TYPES, SocketStrategy, SocketType

__all__ = ["SocketLife"]

S = TypeVar("S", bound="SocketLife")


@trio.lowlevel.enable_ki_protection
async def _supervise(task_status: trio.TaskStatus[trio.Nursery]) -> None:
    """Own the nursery of a socket's tasks until the runtime cancels it."""
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


class SocketLife:
    """What every socket has: options, strategy, runtime, endpoints, monitors, close.

    The base of :class:`trizmq.Socket`; it makes no socket itself (a subclass sets
    ``socket_type``).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``bind``, ``connect``, ``sndhwm``, ``linger``,
            ...); an unknown name raises ``TypeError``, a bad value ``ValueError``.

    Raises:
        TypeError: for a class without a ``socket_type`` (``trizmq.Socket()``), an
            unknown option, or an option that does not apply to the socket type.
        ValueError: for a bad option value.
    """

    #: the ZMTP Socket-Type of the subclass
    socket_type: ClassVar[str] = ""

    def __init__(self, **options: object) -> None:
        kind = SOCKET_TYPES.get(self.socket_type) if self.socket_type else None
        if kind is None:
            raise TypeError(
                f"trizmq.{type(self).__name__} is the base of the socket types and makes no "
                "socket itself: use trizmq.Push, Pull, Pub, Sub, Req, Rep, Dealer, Router, ..."
                if not self.socket_type
                else f"no socket type {self.socket_type!r} in the table of socket types"
            )
        #: the type's row of the socket-type table: what it decides
        self._type: SocketType = kind
        self._options: Options = validate_options(kind, options, SOCKET_TYPES.values())
        self._recv_lot = Waiters()
        self._send_lot = Waiters()
        self._strategy: SocketStrategy = kind.strategy(
            self._options, self._wake_receivers, self._wake_senders
        )
        self._runtime: SocketRuntime | None = None
        self._nursery_manager: AbstractAsyncContextManager[trio.Nursery] | None = None
        self._closed = False
        self._closing = False
        #: entered, open, and able to send / receive (the sends' and receives' check)
        self._sendable = False
        self._recvable = False
        #: send's one check for its shortest way: sendable, no frames kept with
        #: more=True (``Sending._update_send_ready``)
        self._send_ready = False
        #: recv's one check for its shortest way: receivable, no message part-read
        #: (``Receiving._update_recv_ready``)
        self._recv_ready = False
        self._closed_event: trio.Event | None = None
        #: the trio.run the socket was entered in (a socket lives within one)
        self._trio_token: trio.lowlevel.TrioToken | None = None
        self._ops = 0
        self._monitors: list[Monitor] = []
        self._incoming: deque[bytes] = deque()
        self._outgoing: list[bytes] = []
        #: the fast path's state (None: the portable path; see trizmq.nursery.fastpath)
        self._fast: FastPath | None = None
        #: the inlined cancellation test, or None (await checkpoint_if_cancelled)
        self._cancel_pending: Callable[[], bool] | None = None
        #: trio's run context values in this thread (``["task"]``: the running task),
        #: read by the inlined check (set where ``_cancel_pending`` is)
        self._run_vars: dict[str, Any] = {}
        #: how a receiving task parks until a message may be there (on the fast path,
        #: the fast path's wait, which may read the only peer's connection meanwhile)
        self._wait_to_recv: Callable[[], Awaitable[None]] = self._recv_lot.park

    @property
    def options(self) -> Options:
        """The socket's options, validated, read-only.

        One attribute per option, named as the constructor's keyword
        (``sock.options.sndhwm``), validated, defaults filled in. Read-only; change
        them with ``set_options()``.
        """
        return self._options

    def set_options(self, **options: object) -> None:
        """Change options after construction, where libzmq lets them change.

        Checked as the constructor checks them: ``TypeError`` for an unknown name
        (with a suggestion), for one that does not apply to this socket type, or for
        one that cannot change now (``bind``, ``connect``: call ``bind()`` and
        ``connect()``; ``max_handshakes``); ``ValueError`` naming the option for a
        bad value. A queue bound (``sndhwm``, ``rcvhwm``) applies to peers made from
        now on, ``linger`` to the close, the ROUTER/REQ/XPUB/PUB flags and bounds at
        once (but for the refusal of a topic over ``max_subscription_bytes`` at its
        frame header, which keeps the bound its connection was made with);
        ``heartbeat_*``, ``security``, ``maxmsgsize``, ``routing_id``,
        ``ssl_context`` and the other connection options to the connections made
        afterwards; ``reconnect_ivl``/``_max`` and ``immediate`` to endpoints
        connected afterwards, ``backlog`` to later binds. ``subscribe`` (SUB) adds
        subscriptions, as ``Sub.subscribe()`` does.

        Args:
            **options: the options to change, by their constructor keyword (see the
                options table of docs/getting-started.md).

        Raises:
            TypeError: for an unknown option, one that does not apply to the socket
                type, or one that cannot change now.
            ValueError: for a bad value (the message names the option).

        Example::

            >>> pull = trizmq.Pull()
            >>> pull.set_options(rcvhwm=10, linger=0)
            >>> pull.options.rcvhwm
            10
        """
        new = changed_options(self._type, self._options, options, SOCKET_TYPES.values())
        if self._runtime is not None:  # and the compressed endpoints it has already
            check_compression(new, (*self._runtime.listeners, *self._runtime.connecters))
        added = new.subscribe[len(self._options.subscribe) :]
        self._options = new
        if self._runtime is not None:
            self._runtime.reconfigure(new)
        else:
            self._strategy.reconfigure(new)
        if added:  # only a SUB takes the option (the constructor subscribes the same way)
            for topic in added:
                self._strategy.subscribe(topic)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._runtime else "new"
        return f"<trizmq.{type(self).__name__} {state}>"

    # -- lifecycle -----------------------------------------------------------------------
    async def __aenter__(self: S) -> S:
        if self._runtime is not None or self._closed:
            raise RuntimeError(f"{type(self).__name__} can be entered only once")
        # entering while already cancelled: a plain Cancelled, before anything opens
        await trio.lowlevel.checkpoint_if_cancelled()
        self._trio_token = trio.lowlevel.current_trio_token()
        self._nursery_manager = manager = trio.open_nursery()
        outer = await manager.__aenter__()
        # The runtime's tasks run in an inner nursery owned by a supervisor task, so
        # that closing (which cancels that nursery) never cancels the body of our async
        # with, which runs inside the outer nursery's scope.
        try:
            nursery: trio.Nursery = await outer.start(_supervise)
        except BaseException:
            # cancelled while starting (start() may even have reparented the supervisor
            # into ``outer`` first): stop it and close ``outer``, or trio's nursery stack
            # breaks. Shielded from the outside, so the cancellation propagates as itself.
            self._closing = self._closed = True
            outer.cancel_scope.shield = True
            outer.cancel_scope.cancel()
            await manager.__aexit__(None, None, None)
            raise
        if fastpath.ENABLED:
            self._fast = FastPath(self._strategy.inbound, self._recv_lot)
            pending, run_vars = trio_probe.cancel_pending(), trio_probe.run_vars()
            if pending is not None and run_vars is not None:
                # the hot paths' inlined checkpoint reads the running task from these
                self._cancel_pending, self._run_vars = pending, run_vars
            # receivers wait the fast path's way (read-through)
            self._wait_to_recv = self._fast.wait_to_recv
            if self._strategy.gathers:
                # one-at-a-time publishes to stream subscribers go out as batches
                self._fast.gather(self._strategy)
        self._runtime = SocketRuntime(
            self._type,
            self._options,
            self._strategy,
            nursery,
            self._wake_receivers,
            self._wake_senders,
            self._fast,
        )
        self._runtime.emit = self._emit
        self._sendable = self._strategy.can_send
        self._recvable = self._strategy.can_recv
        self._send_ready = self._sendable
        self._recv_ready = self._recvable
        try:
            for endpoint in self._options.bind:
                await self._runtime.bind(endpoint)
            for endpoint in self._options.connect:
                await self._runtime.connect(endpoint)
        except BaseException:
            await self._teardown(0)
            await manager.__aexit__(None, None, None)
            raise
        _open_sockets.opened(self)  # seen by trizmq.metrics.register_all()
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
            assert self._nursery_manager is not None
            await self._nursery_manager.__aexit__(None, None, None)
        return False

    async def aclose(self) -> None:
        """Close: flush pending messages for up to ``linger`` seconds, then stop.

        Idempotent. ``linger=None`` waits until every queued message is written. An
        enclosing cancellation (a cancel scope around the ``async with`` or this
        call) cuts the flush short: the socket still closes, at once, every task
        and descriptor released, and ``Cancelled`` goes on as trio expects. After
        it, every operation raises ``trio.ClosedResourceError``.
        """
        await self._teardown(self._options.linger)

    async def _teardown(self, linger: float | None) -> None:
        if self._closing:
            if self._closed_event is not None:
                await self._closed_event.wait()
            else:
                await trio.lowlevel.checkpoint()
            return
        self._closing = True
        self._sendable = self._recvable = self._send_ready = self._recv_ready = False
        # from now on the calls take trio's own checkpoint, which reads the calling
        # thread's task (run_vars is the dict of the thread this socket ran in)
        self._cancel_pending = None
        # the rest of a message half read with recv(), or half sent with more=True
        self._incoming.clear()
        self._outgoing = []
        self._closed_event = trio.Event()
        try:
            self._strategy.flush()  # a publisher's gathered messages, to linger with the rest
            if self._runtime is not None:
                # cancellable only while it waits for the queues to drain (linger)
                await self._runtime.close(linger)
        finally:
            self._closed = True
            _open_sockets.discard(self)
            self._wake_receivers()
            self._send_lot.unpark_all()
            for monitor in list(self._monitors):
                monitor.close()
            self._closed_event.set()

    @property
    def closed(self) -> bool:
        """True once the socket is closed (or closing)."""
        return self._closing

    def _closed_error(self) -> Exception:
        """Why a closed socket cannot be used: closed, or closed by the end of another
        ``trio.run`` (a socket lives and dies within the run it was entered in)."""
        token = self._trio_token
        if token is not None:
            try:
                here = trio.lowlevel.current_trio_token()
            except RuntimeError:
                here = None
            if here is not token:
                return RuntimeError(
                    f"this trizmq.{type(self).__name__} belongs to another trio.run, which "
                    "closed it; a socket lives within the trio.run it was entered in: "
                    "make a new one in this run"
                )
        return trio.ClosedResourceError(f"{type(self).__name__} is closed")

    # -- monitoring -----------------------------------------------------------------------
    def monitor(self, capacity: int = 1000) -> Monitor:
        """Watch this socket's events: ``async with sock.monitor() as events: async for ...``.

        See :class:`trizmq.MonitorEvent` and docs/monitor.md for the event types. It ends when the
        socket closes; it keeps at most ``capacity`` unread events.

        Args:
            capacity: the most unread events the monitor keeps; at least 1.

        Returns:
            A new :class:`trizmq.Monitor` of this socket.

        Raises:
            ValueError: for a ``capacity`` below 1.
            trio.ClosedResourceError: once the socket is closed.
        """
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")
        monitor = Monitor(capacity, self._monitors.remove, self.stats)
        self._monitors.append(monitor)
        return monitor

    def stats(self) -> SocketStats:
        """The socket's counters now, as a typed snapshot (see docs/observability.md).

        Messages and bytes sent and received, drops by reason, what was filtered,
        queue depths and their peaks, connection events, heartbeat round trips and
        subscriptions, for the socket and for each current peer: counters that are
        always on, each kept by the actor or strategy where its event happens. The
        snapshot is frozen, a copy taken at the call: keep it, compare it, hand it to
        an exporter (``trizmq.metrics``). Call it from the socket's own ``trio.run``
        (an exporter in another thread goes through the run's token). A socket not
        entered yet has every figure 0; a closed one keeps its last figures.

        Returns:
            A :class:`trizmq.SocketStats`.
        """
        runtime = self._runtime
        if runtime is None:
            return SocketStats(socket_type=self.socket_type)
        return runtime.stats()

    def _emit(self, event: MonitorEvent) -> None:
        for monitor in self._monitors:
            monitor.emit(event)

    # -- waiting -------------------------------------------------------------------------
    def _wake_receivers(self) -> None:
        self._recv_lot.unpark_all()  # a no-op with nobody parked
        fast = self._fast
        if fast is not None and fast.reading is not None:
            fast.reading.interrupt()

    def _wake_senders(self) -> None:
        if self._send_lot:
            self._send_lot.unpark_all()

    async def _yield_turn(self) -> None:
        """The yield once every YIELD_EVERY operations that did not wait."""
        self._ops = 0
        if self._fast is not None:
            self._fast.waited()
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def _wait_to_send(self) -> None:
        """Park until a pipe can take more."""
        if self._fast is not None:
            self._fast.waited()
        await self._send_lot.park()
