"""The run loop's hook: what the fast path does just before trio waits for I/O.

The rules it bends: a message routed to a connection goes to its writer at once,
and a task woken is woken by whoever made its work. :class:`Revival`, one trio
instrument a run (installed by the first read-through, cork or gathered publish),
instead holds a publisher's batches back for idle connections (corks: written
several at a time with one ``sendmsg``), routes the one-at-a-time publishes a
publisher gathered as one batch, and pays the wake-ups a read-through owes its
reader, all in ``before_io_wait``. Whether a task waits to run is read from trio's
run queue (:func:`~.trio_probe.anything_runnable`).

The portable path (``TRIZMQ_FASTPATH=0``) installs no instrument: nothing is corked
or gathered (``tests/nursery/test_gathered_publishes.py``,
``test_without_the_fast_path_nothing_gathers``), and ``tests/test_batch.py``
checks a publisher's batches arrive alike on both paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import trio

from .trio_probe import anything_runnable

if TYPE_CHECKING:
    from ..pipe import Pipe
    from ..waiters import Waiters

__all__ = [
    "CORK_ITEMS",
    "CORK_TIME",
    "CorkedOutput",
    "GatheringSocket",
    "OwedReader",
    "PublishingSocket",
    "Revival",
    "cork_limit",
    "revival",
]

#: a publisher's batches held back for an idle connection (corked) go out once this
#: many messages wait (or half the connection's ``sndhwm``, when that is fewer: see
#: :func:`cork_limit`), ...
CORK_ITEMS = 512
#: ... or once the oldest has waited this long (seconds, trio's clock) while the
#: publisher kept publishing in every scheduler pass
CORK_TIME = 0.0005


# -- what the instrument sees of the parts above it ------------------------------------------
# Annotations only: the instrument sits below read_through, write_through and routing
# (they install it), so it names their objects by the fields it reads, the private
# ones included, read directly as before.
class OwedReader(Protocol):
    """A read-through (``ReadThrough``) that may owe its connection's reader a
    wake-up: the debt, and the reader standing by."""

    owed: bool

    @property
    def _reader(self) -> Waiters: ...


class GatheringSocket(Protocol):
    """A socket's fast-path state (``FastPath``) whose publisher gathered messages
    in this pass."""

    def route_gathered(self) -> None:
        """Route what the publisher gathered, as a batch."""
        ...


class PublishingSocket(Protocol):
    """A socket's fast-path state (``FastPath``), as a cork reads it: the scheduler
    pass in which the socket last published a batch."""

    @property
    def fed_at(self) -> int: ...


class CorkedOutput(Protocol):
    """A connection's write-through (``RawOutput``) whose published batches a cork
    holds back: its queue, its socket's state, and the write that takes the cork off."""

    @property
    def _pipe(self) -> Pipe: ...

    @property
    def _fast(self) -> PublishingSocket: ...

    def flush(self) -> None:
        """Write what the cork held back."""
        ...


class Revival(trio.abc.Instrument):
    """Wakes the readers whose receiving task left a read-through and did not come
    back to wait, and takes the corks off a publisher's batches when one is due, just
    before trio's run loop waits for I/O (one per trio run, installed by the first
    read-through or cork).

    A receiving task that read a connection through leaves its reader standing by:
    were the reader woken at once, it would run only to see the task waiting again
    (a scheduler pass and a ``epoll_wait`` per message, ~5 µs). So the read-through
    is *owed* a wake-up instead, paid here unless the task waited once more. When the
    loop is about to sleep (``timeout`` > 0), a wake-up through trio's token ends that
    sleep at once, so the reader watches the connection without delay: messages,
    PINGs and the peer's close are read while the application does something else.
    The loop is woken so only when a task waits to run: corks that came off with
    everything written (a publisher's gathered messages) woke nobody.
    """

    __slots__ = ("_corked_at", "_token", "corked", "gathering", "owed", "passes")

    def __init__(self) -> None:
        self.owed: list[OwedReader] = []
        #: sockets whose publishes were gathered in this pass (see FastPath.gather)
        self.gathering: list[GatheringSocket] = []
        #: connections whose published batches are held back (see FastPath.route_batch)
        self.corked: list[CorkedOutput] = []
        self._corked_at = 0.0
        #: scheduler passes so far (counted as each ends)
        self.passes = 0
        self._token = trio.lowlevel.current_trio_token()

    def cork(self, output: CorkedOutput) -> None:
        """Hold back what the idle ``output`` was just given (a published batch)."""
        if not self.corked:
            self._corked_at = trio.current_time()
        self.corked.append(output)

    def before_io_wait(self, timeout: float) -> None:
        """Route the gathered publishes; wake the readers still owed a wake-up;
        write what corks held back."""
        gathering = self.gathering
        if gathering:
            self.gathering = []
            for fast in gathering:
                fast.route_gathered()  # may wake writers: the loop must not sleep
        woke = (self._uncork(timeout) if self.corked else False) or bool(gathering)
        self.passes += 1
        owed = self.owed
        if owed:
            self.owed = []
            for read_through in owed:
                if read_through.owed:
                    read_through.owed = False
                    read_through._reader.unpark_all()
                    woke = True
        if woke and timeout > 0 and anything_runnable():
            # a task woken here would wait for the loop's sleep to end: end it now
            self._token.run_sync_soon(_nothing, idempotent=True)

    def _uncork(self, timeout: float) -> bool:
        """Flush every cork once one is due (at once when the loop is about to
        sleep); True when they were flushed. Looking costs the same whatever the
        number of connections corked: the first one's queue stands for the others
        (a publisher's batches go to all of them alike)."""
        first = self.corked[0]
        pipe = first._pipe
        quiet = self.passes - 2  # fed in neither this pass nor the one before
        if not (
            timeout > 0
            or first._fast.fed_at <= quiet
            or len(pipe) >= cork_limit(pipe)
            or trio.current_time() - self._corked_at >= CORK_TIME
        ):
            return False
        self.uncork()
        return True

    def uncork(self) -> None:
        """Take every cork off now: each corked connection writes what it holds."""
        corked, self.corked = self.corked, []
        for output in corked:
            output.flush()


def cork_limit(pipe: Pipe) -> int:
    """The most messages a cork holds for a connection whose queue is ``pipe``:
    :data:`CORK_ITEMS`, or half the queue's mark where that is fewer. A cork held to
    the mark would have the publisher drop what an idle subscriber could take."""
    hwm = pipe.hwm
    return CORK_ITEMS if not hwm or hwm >= 2 * CORK_ITEMS else max(1, hwm // 2)


def _nothing() -> None:
    """Run by trio's token only to end a wait for I/O."""


_REVIVAL: trio.lowlevel.RunVar[Revival] = trio.lowlevel.RunVar("trizmq_revival")


def revival() -> Revival:
    """This trio run's :class:`Revival`, installed on first use."""
    try:
        return _REVIVAL.get()
    except LookupError:
        instrument = Revival()
        trio.lowlevel.add_instrument(instrument)
        _REVIVAL.set(instrument)
        return instrument
