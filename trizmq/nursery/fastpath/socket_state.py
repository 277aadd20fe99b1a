"""The socket's fast-path state: when a send may write through, what a receive waits on.

The rules it bends: a send only routes (the writer writes), and a receive parks with
the socket's receivers. :class:`FastPath` lets the sending task write a routed
message itself while a connection's writer is idle (``write_through``), holds back a
publisher's batches and gathers its one-at-a-time publishes (``instrument``), and
parks a receiving task on its peer's connection to read it through
(``read_through``).

The portable path (``TRIZMQ_FASTPATH=0``) creates no :class:`FastPath`: a socket's
``_fast`` is None, and ``tests/test_sockets.py`` and ``tests/test_batch.py`` run on
both paths (``tests/nursery/test_gathered_publishes.py``,
``test_without_the_fast_path_nothing_gathers``, checks that nothing gathers there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from .instrument import hold_limit, io_wait_hook

if TYPE_CHECKING:
    from ...patterns.routing import FairQueue
    from ...patterns.sockets.base import PeerLike, SocketStrategy
    from ..waiters import Waiters
    from .instrument import IoWaitHook
    from .read_through import ReadThrough
    from .write_through import RawOutput

__all__ = ["FastPath"]


class FastPath:
    """One socket's fast-path state: write-through and read-through.

    ``write_through_allowed``: may the next message routed to an idle connection be
    written by the sending task? Cleared by such a write; set again whenever the
    socket's tasks wait or yield (:meth:`waited`) and when a writer goes idle.
    ``write_through_ready`` is True while it is allowed and some writer is idle: the
    one thing a send looks at before it routes through :meth:`route`. ``routing`` is
    True while the socket's sending task routes a message: an idle writer that gets
    work then leaves it to that task (``writes_due``) instead of waking.
    """

    __slots__ = (
        "_gatherer",
        "_hook",
        "_inbound",
        "_park",
        "_recent",
        "idle_writers",
        "published_in_pass",
        "readers",
        "reading",
        "routing",
        "write_through_allowed",
        "write_through_ready",
        "writes_due",
    )

    def __init__(self, inbound: FairQueue[PeerLike], receivers: Waiters) -> None:
        #: the socket's fair queue (its ``only`` peer may be read through)
        self._inbound = inbound
        #: how a receiving task parks when it cannot read through
        self._park = receivers.park
        #: among several peers, the one the last message came from at the last wait
        self._recent: object = None
        self.write_through_allowed = True
        self.write_through_ready = False
        #: writers idle right now that the sending task may write for
        self.idle_writers = 0
        self.routing = False
        #: the idle connections the sending task owes a write-through after routing
        self.writes_due: list[RawOutput] = []
        #: the scheduler pass (IoWaitHook.passes) in which the socket last published a
        #: batch: its batches stay held while it goes on publishing
        self.published_in_pass = 0
        self._hook: IoWaitHook | None = None
        #: peer -> the ReadThrough of its live connection
        self.readers: dict[object, ReadThrough] = {}
        #: the ReadThrough a receiving task of this socket waits in, if any
        self.reading: ReadThrough | None = None
        #: a publisher's strategy that gathers one-at-a-time publishes (see gather)
        self._gatherer: SocketStrategy | None = None

    def gather(self, strategy: SocketStrategy) -> None:
        """Let a publisher's ``strategy`` gather the messages it is given one at a
        time to its stream subscribers: they are routed as one batch
        (:meth:`route_batch`, holding and all) just before trio's run loop next waits
        for I/O (:meth:`IoWaitHook.before_io_wait`), as ``send_many`` would route them."""
        self._gatherer = strategy
        strategy.gather = self._gathering

    def _gathering(self) -> None:
        """The gatherer began to gather: route its messages before the loop waits.

        Until then a send only gathers, with nothing to write through: it need not
        route through :meth:`route` (``write_through_ready`` is set again by :meth:`route_gathered`
        and whenever the socket's task waits or yields)."""
        self.write_through_ready = False
        hook = self._hook
        if hook is None:
            hook = self._hook = io_wait_hook()
        hook.gathering.append(self)

    def route_gathered(self) -> None:
        """Route what the gatherer gathered, as a batch."""
        strategy = self._gatherer
        if strategy is not None:
            msgs = strategy.take_gathered()
            if msgs:
                self.route_batch(strategy.send_batch, msgs, 0)
            self.write_through_ready = self.write_through_allowed and self.idle_writers > 0

    def waited(self) -> None:
        """The socket's task waited or yielded: write-through may happen again."""
        self.write_through_allowed = True
        self.write_through_ready = self.idle_writers > 0

    def route(self, send: Callable[[list[bytes]], bool], msg: list[bytes]) -> bool:
        """``send(msg)`` (a strategy's routing), then write through what it queued for
        an idle connection."""
        self.routing = True
        try:
            return send(msg)
        finally:
            self.routing = False
            if self.writes_due:
                # write each message due, or leave it to its writer
                due, self.writes_due = self.writes_due, []
                for output in due:
                    if not (self.write_through_allowed and output.write_now()):
                        output.wake()

    def route_batch(
        self,
        send_batch: Callable[[list[list[bytes]], int], int],
        msgs: list[list[bytes]],
        start: int,
    ) -> int:
        """``send_batch(msgs, start)`` (a strategy's routing of a batch), then write
        through, with one call each, what it queued for the connections that were
        idle: a batch costs each of them one system call and no wake-up.

        A published batch is held back instead (:meth:`IoWaitHook.hold`), the writer
        left idle, so that the batches the socket goes on publishing join it and one
        system call writes several (a system call per subscriber and batch is most
        of what a subscriber costs a publisher). What is held goes out before trio's
        run loop next waits for I/O, or after two scheduler passes in a row in which
        the socket published nothing (a loop of ``send_many`` and ``trio.sleep(0)``
        publishes every other pass), or once :func:`hold_limit` messages wait (then at
        once, as the batch that reached it is held) or the oldest has waited
        :data:`HOLD_TIME`.
        """
        self.routing = True
        try:
            return send_batch(msgs, start)
        finally:
            self.routing = False
            # the run's instrument is installed by the first batch held (a socket that
            # never holds one, a PUSH's say, costs no scheduler pass a look at them)
            hook = self._hook
            if hook is not None:
                self.published_in_pass = hook.passes
            if self.writes_due:
                due, self.writes_due = self.writes_due, []
                allowed = self.write_through_allowed
                held: RawOutput | None = None
                for output in due:
                    if not allowed:
                        output.wake()
                    elif output.holdable():
                        if hook is None:
                            hook = self._hook = io_wait_hook()
                            self.published_in_pass = hook.passes
                        hook.hold(output)
                        held = output
                    elif not output.write_queue_now():
                        output.wake()
                # the queue of one connection held stands for the others (they were
                # given the same batches): a hold never waits for the pass to end
                # with a queue at its limit, where the next batch would find it full
                if held is not None and hook is not None:
                    pipe = held._pipe
                    if len(pipe) >= hold_limit(pipe):
                        hook.release()

    async def wait_to_recv(self) -> None:
        """Park a receiving task: on a peer's connection (read-through) when that has
        nothing queued, else with the socket's receivers. Write-through may happen
        again afterwards (the socket waited).

        The peer read through is the only one, or, among several, the one the last
        message came from when the wait before came after that peer's message too (a
        socket with one busy peer among idle ones then reads as with that peer
        alone; a REQ or DEALER whose replies come from its peers in turn, each
        waited for elsewhere, parks). Input from any other peer wakes the socket's
        receivers, which ends the wait (``interrupt``), so the task then takes it in
        its turn.
        """
        self.write_through_allowed = True
        self.write_through_ready = self.idle_writers > 0
        inbound = self._inbound
        only = inbound.only
        if only is None:
            recent = inbound.recent()
            if recent is not None and recent is self._recent:
                only = recent
            self._recent = recent
        reader = self.readers.get(only) if only is not None else None
        if reader is None or reader.ended or reader.waiting is not None or reader.peer.in_pipe:
            await self._park()
            return
        self.reading = reader
        try:
            await reader.wait()
        except trio.ClosedResourceError:
            return  # interrupted: look again
        finally:
            if reader.waiting is None:
                self.reading = None
        reader.read()

    def interrupt(self) -> None:
        """Something a receiver must see happened: end a read-through wait."""
        reading = self.reading
        if reading is not None:
            reading.interrupt()
