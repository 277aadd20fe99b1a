"""The public socket: every socket type's base, its sends and receives and its life.

:class:`Socket` is four parts, a file each: its life (``trizmq._lifecycle``:
options, entering and closing, monitors, statistics), its endpoints
(``trizmq._endpoints``: bind, connect and their undoing), its sends
(``trizmq._sending``) and its receives (``trizmq._receiving``). Routing is the
socket type's strategy (``trizmq.patterns.sockets``): none of them routes.

Every operation exists once, as a core that answers False (a send) or None (a
receive) where it would block; the ``_nowait`` form raises ``trio.WouldBlock`` on
that answer, and the awaiting form is the core plus a park on it, as trio builds
``MemorySendChannel.send`` on ``send_nowait``. On the fast path the four hottest
are compiled with their cores and the cancellation test inlined
(``trizmq.nursery.fastpath.hot_paths``: a call costs a few percent of an inproc
message), from this same source.
"""

from __future__ import annotations

from typing import Any

from ._endpoints import Endpoints
from ._lifecycle import SocketLife
from ._receiving import Receiving
from ._sending import Sending

__all__ = ["Socket"]


class Socket(Sending, Receiving, Endpoints, SocketLife):
    """Base class of every socket type; use a subclass such as :class:`trizmq.Push`.

    ``trizmq.Socket()`` itself makes no socket (``TypeError``). A socket is an async
    context manager, entered once: entering opens the nursery that owns every task
    the socket runs and applies ``bind=`` then ``connect=``; leaving flushes for up to
    ``linger`` seconds and closes it (at once when the body raised or was cancelled).

    Every send and receive has an awaiting form and a ``_nowait`` twin that raises
    ``trio.WouldBlock`` where the awaiting form would wait. Sending on a type that
    cannot send, or receiving on one that cannot receive, raises
    :class:`trizmq.NotSupportedError`; every operation after the close raises
    ``trio.ClosedResourceError``; a send or receive before the socket is entered
    raises ``RuntimeError``, as does one from another ``trio.run`` than the one it
    was entered in, once that run has closed it. ``async for frames in sock`` gives
    whole messages and ends quietly when the socket closes.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``bind``, ``connect``, ``sndhwm``, ``rcvhwm``,
            ``linger``, ``heartbeat_ivl``, ``security``, ...); an unknown name, or one
            that does not apply to the type, raises ``TypeError``, a bad value
            ``ValueError`` (:class:`trizmq.EndpointError` for a bad endpoint).

    Raises:
        TypeError: for ``Socket()`` itself, an unknown option, or an option that does
            not apply to the socket type.
        ValueError: for a bad option value.
    """

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        #: True when the subclass shows a message differently from the strategy's form
        self._own_frames = type(self)._frames_of is not Socket._frames_of

    def statistics(self) -> dict[str, Any]:
        """Peers, endpoints and queue lengths, for diagnostics: the older, untyped dict
        (``stats()`` is the typed snapshot of every counter).

        ``queued_out`` and ``queued_in`` count the messages waiting in this socket's
        peer queues (outgoing: not yet written; incoming: not yet read);
        ``receivers_waiting`` and ``senders_waiting`` the tasks (and threads) parked
        in a receive or a send.

        Returns:
            A new ``dict`` of counters and lists, by name. Always ``peers``,
            ``receivers_waiting`` and ``senders_waiting``; once the socket is entered,
            ``bound``, ``connected``, ``live_peers``, ``queued_out`` and ``queued_in``;
            and the type's own (``dropped`` and ``subscriptions`` on a PUB, the
            datagram counters of a RADIO or DISH, ...).
        """
        stats: dict[str, Any] = dict(self._strategy.statistics())
        fast = self._fast
        reading = fast.reading if fast is not None else None
        stats["receivers_waiting"] = len(self._recv_lot) + (
            reading is not None and reading.waiting is not None
        )
        stats["senders_waiting"] = len(self._send_lot)
        runtime = self._runtime
        if runtime is not None:
            stats.update(runtime.statistics())
            if self._type.udp:  # a type that may go over udp: its datagram counters
                stats["datagrams_malformed"] = runtime.counters["datagrams_malformed"]
                stats["datagrams_dropped"] = runtime.counters["datagrams_dropped"]
        return stats
