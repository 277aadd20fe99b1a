"""The run loop's hook: what the fast path does just before trio waits for I/O.

The rules it bends: a message routed to a connection goes to its writer at once,
and a task woken is woken by whoever made its work. :class:`IoWaitHook`, one trio
instrument a run (installed by the first read-through, held batch or gathered
publish), instead holds a publisher's batches back for idle connections (written
several at a time with one ``sendmsg`` when released), routes the one-at-a-time
publishes a publisher gathered as one batch, and pays the wake-ups a read-through
owes its reader, all in ``before_io_wait``. Whether a task waits to run is read from trio's
run queue (:func:`~.trio_probe.anything_runnable`).

The portable path (``TRIZMQ_FASTPATH=0``) installs no instrument: nothing is held
back or gathered (``tests/nursery/test_gathered_publishes.py``,
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
    "HOLD_ITEMS",
    "HOLD_TIME",
    "GatheringSocket",
    "HeldOutput",
    "IoWaitHook",
    "PublishingSocket",
    "ReaderDue",
    "hold_limit",
    "io_wait_hook",
]

#: a publisher's batches held back for an idle connection go out once this many
#: messages wait (or half the connection's ``sndhwm``, when that is fewer: see
#: :func:`hold_limit`), ...
HOLD_ITEMS = 512
#: ... or once the oldest has waited this long (seconds, trio's clock) while the
#: publisher kept publishing in every scheduler pass
HOLD_TIME = 0.0005


# -- what the instrument sees of the parts above it ------------------------------------------
# Annotations only: the instrument sits below read_through, write_through and socket_state
# (they install it), so it names their objects by the fields it reads, the private
# ones included, read directly as before.
class ReaderDue(Protocol):
    """A read-through (``ReadThrough``) that may owe its connection's reader a
    wake-up: whether it does, and the reader standing by."""

    reader_wake_due: bool

    @property
    def _reader(self) -> Waiters: ...


class GatheringSocket(Protocol):
    """A socket's fast-path state (``FastPath``) whose publisher gathered messages
    in this pass."""

    def route_gathered(self) -> None:
        """Route what the publisher gathered, as a batch."""
        ...


class PublishingSocket(Protocol):
    """A socket's fast-path state (``FastPath``), as a hold reads it: the scheduler
    pass in which the socket last published a batch."""

    @property
    def published_in_pass(self) -> int: ...


class HeldOutput(Protocol):
    """A connection's write-through (``RawOutput``) whose published batches are held
    back: its queue, its socket's state, and the write that releases them."""

    @property
    def _pipe(self) -> Pipe: ...

    @property
    def _fast(self) -> PublishingSocket: ...

    def flush(self) -> None:
        """Write what was held back."""
        ...


class IoWaitHook(trio.abc.Instrument):
    """Wakes the readers whose receiving task left a read-through and did not come
    back to wait, and releases a publisher's held batches when that is due, just
    before trio's run loop waits for I/O (one per trio run, installed by the first
    read-through or held batch).

    A receiving task that read a connection through leaves its reader standing by:
    were the reader woken at once, it would run only to see the task waiting again
    (a scheduler pass and a ``epoll_wait`` per message, ~5 µs). So the read-through
    is owed a wake-up instead, paid here unless the task waited once more. When the
    loop is about to sleep (``timeout`` > 0), a wake-up through trio's token ends that
    sleep at once, so the reader watches the connection without delay: messages,
    PINGs and the peer's close are read while the application does something else.
    The loop is woken so only when a task waits to run: held batches released with
    everything written (a publisher's gathered messages) woke nobody.
    """

    __slots__ = ("_held_since", "_token", "gathering", "held", "passes", "readers_due")

    def __init__(self) -> None:
        #: read-throughs that may owe their reader a wake-up (see ReadThrough.wait)
        self.readers_due: list[ReaderDue] = []
        #: sockets whose publishes were gathered in this pass (see FastPath.gather)
        self.gathering: list[GatheringSocket] = []
        #: connections whose published batches are held back (see FastPath.route_batch)
        self.held: list[HeldOutput] = []
        self._held_since = 0.0
        #: scheduler passes so far (counted as each ends)
        self.passes = 0
        self._token = trio.lowlevel.current_trio_token()

    def hold(self, output: HeldOutput) -> None:
        """Hold back what the idle ``output`` was just given (a published batch)."""
        if not self.held:
            self._held_since = trio.current_time()
        self.held.append(output)

    def before_io_wait(self, timeout: float) -> None:
        """Route the gathered publishes; wake the readers still owed a wake-up;
        write what is held back, when that is due."""
        gathering = self.gathering
        if gathering:
            self.gathering = []
            for fast in gathering:
                fast.route_gathered()  # may wake writers: the loop must not sleep
        woke = (self._release_if_due(timeout) if self.held else False) or bool(gathering)
        self.passes += 1
        due = self.readers_due
        if due:
            self.readers_due = []
            for read_through in due:
                if read_through.reader_wake_due:
                    read_through.reader_wake_due = False
                    read_through._reader.unpark_all()
                    woke = True
        if woke and timeout > 0 and anything_runnable():
            # a task woken here would wait for the loop's sleep to end: end it now
            self._token.run_sync_soon(_nothing, idempotent=True)

    def _release_if_due(self, timeout: float) -> bool:
        """Release every held batch once that is due (at once when the loop is about
        to sleep); True when they were released. Looking costs the same whatever the
        number of connections held: the first one's queue stands for the others (a
        publisher's batches go to all of them alike)."""
        first = self.held[0]
        pipe = first._pipe
        quiet = self.passes - 2  # fed in neither this pass nor the one before
        if not (
            timeout > 0
            or first._fast.published_in_pass <= quiet
            or len(pipe) >= hold_limit(pipe)
            or trio.current_time() - self._held_since >= HOLD_TIME
        ):
            return False
        self.release()
        return True

    def release(self) -> None:
        """Release everything held now: each connection writes what it was given."""
        held, self.held = self.held, []
        for output in held:
            output.flush()


def hold_limit(pipe: Pipe) -> int:
    """The most messages held back for a connection whose queue is ``pipe``:
    :data:`HOLD_ITEMS`, or half the queue's mark where that is fewer. Batches held to
    the mark would have the publisher drop what an idle subscriber could take."""
    hwm = pipe.hwm
    return HOLD_ITEMS if not hwm or hwm >= 2 * HOLD_ITEMS else max(1, hwm // 2)


def _nothing() -> None:
    """Run by trio's token only to end a wait for I/O."""


_IO_WAIT_HOOK: trio.lowlevel.RunVar[IoWaitHook] = trio.lowlevel.RunVar("trizmq_io_wait_hook")


def io_wait_hook() -> IoWaitHook:
    """This trio run's :class:`IoWaitHook`, installed on first use."""
    try:
        return _IO_WAIT_HOOK.get()
    except LookupError:
        instrument = IoWaitHook()
        trio.lowlevel.add_instrument(instrument)
        _IO_WAIT_HOOK.set(instrument)
        return instrument
