"""One direction of one peer: a bounded, closable FIFO of whole messages.

A pipe is the channel contract of the runtime: bounded by a high-water mark,
closable, cancellation-safe and batch friendly. It is a ``deque`` plus two
:class:`~trizmq.nursery.waiters.Waiters` (a light ``trio.lowlevel.ParkingLot``)
rather than a ``trio`` memory channel, because one send and receive through a
memory channel costs ~25 µs here and this costs ~2 µs.

Strategy:

* Producers check :attr:`Pipe.full` and then :meth:`Pipe.put` (or
  :meth:`Pipe.extend` a whole batch, which may overshoot the mark by that batch:
  a reader hands on everything one ``receive_some`` produced, then waits).
  Commands (subscriptions, pongs) use :meth:`Pipe.put` without the check: they
  must never be dropped and do not count as messages a peer could flood us with.
  A heartbeat PING jumps the queue (:meth:`Pipe.put_next`): it is written with the
  writer's next write, not after a high-water mark's worth of messages.
* Consumers ``popleft``/``drain``. Transitions wake the other side: empty →
  non-empty calls ``on_input`` (the reading socket's fair queue: this peer has
  input), wakes task(s) parked in :meth:`wait_readable` and calls
  ``on_readable``; at-or-over the mark → under it wakes :meth:`wait_writable`
  and calls ``on_writable``. The callbacks are how a socket learns that any of its
  pipes changed, without a task per pipe.
* An inproc connection shares the very same pipe objects between two sockets:
  one socket's outgoing pipe is the other's incoming pipe, so whole messages pass
  as objects with no encoding.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat

import trio

from ..patterns.sockets.base import Fanout, Queue
from .waiters import Waiters

__all__ = ["ConflatePipe", "Pipe", "pipes_for"]

_popleft = deque.popleft


class Pipe:
    """A bounded FIFO of messages (``list[bytes]``) and command objects."""

    __slots__ = (
        "_items",
        "_readers",
        "_writers",
        "closed",
        "hwm",
        "on_input",
        "on_readable",
        "on_writable",
    )

    def __init__(self, hwm: int) -> None:
        self._items: deque[object] = deque()
        #: the high-water mark in messages; 0 means unbounded
        self.hwm = hwm
        self._readers = Waiters()
        self._writers = Waiters()
        self.closed = False
        self.on_readable: Callable[[], None] | None = None
        self.on_writable: Callable[[], None] | None = None
        #: the fair queue's hook (``FairQueue.add`` sets it): this pipe has input now
        self.on_input: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @property
    def full(self) -> bool:
        """True when a producer must not add a message now."""
        return self.hwm > 0 and len(self._items) >= self.hwm

    def put(self, item: object) -> None:
        """Append one item, ignoring the mark (callers check :attr:`full` first)."""
        items = self._items
        if items:
            items.append(item)
            return
        items.append(item)
        self._became_readable()

    def put_next(self, item: object) -> bool:
        """Queue a command to be taken before every queued message (a heartbeat PING).

        It goes behind only the rest of a message already half written (a ``bytes``
        item at the head), which must stay whole on the wire. When an item of the
        same class already waits there, nothing is added and False is returned: a
        PING not yet written needs no twin. Ignores the mark, like :meth:`put`.
        """
        items = self._items
        if not items:
            self.put(item)
            return True
        index = 1 if items[0].__class__ is bytes else 0
        if index < len(items) and items[index].__class__ is item.__class__:
            return False
        items.insert(index, item)
        return True

    def offer(self, item: object) -> bool:
        """:meth:`put` unless the pipe is :attr:`full`; False when full (the hot path's
        check and put in one call)."""
        items = self._items
        if items:
            hwm = self.hwm
            if hwm and len(items) >= hwm:
                return False
            items.append(item)
            return True
        items.append(item)
        self._became_readable()
        return True

    def offer_many(self, batch: list[object]) -> int:
        """Append as many of ``batch`` as the mark lets in, in order, with at most one
        wake-up; return how many (a publisher's batch: the rest is dropped)."""
        items = self._items
        was_empty = not items
        hwm = self.hwm
        if hwm:
            room = hwm - len(items)
            if room < len(batch):
                if room <= 0:
                    return 0
                batch = batch[:room]
        items.extend(batch)
        if was_empty and items:
            self._became_readable()
        return len(batch)

    @staticmethod
    def offer_many_each(queues: Sequence[Queue], batch: list[object]) -> int:
        """:meth:`offer_many` of ``batch`` to each of ``queues`` in one call, a
        publisher's batch to its subscribers; how many were dropped in all.

        A pipe that holds items and has room for the whole batch (a subscriber that
        keeps up, its queue corked or being written) takes it with one C-level
        ``extend`` and no call of its own: no wake-up is owed, it was not empty.
        """
        count = len(batch)
        dropped = 0
        for queue in queues:
            if type(queue) is Pipe:
                items = queue._items
                if items:
                    hwm = queue.hwm
                    if not hwm or len(items) + count <= hwm:
                        items.extend(batch)
                        continue
            dropped += count - queue.offer_many(batch)
        return dropped

    def poll(self) -> object:
        """Remove and return the oldest item, or None when the pipe is empty."""
        items = self._items
        if not items:
            return None
        item = items.popleft()
        hwm = self.hwm
        if hwm and len(items) == hwm - 1:
            self._became_writable()
        return item

    def poll_message(self) -> list[bytes] | None:
        """Remove and return the oldest message, dropping any command before it; None
        when there is none (a receive's one-peer shortcut). A one-frame message
        queued as its bytes comes back as a list."""
        item = self.poll_item()
        return [item] if isinstance(item, bytes) else item

    def poll_item(self) -> list[bytes] | bytes | None:
        """:meth:`poll_message`, but a one-frame message queued as its bytes comes as
        they are (the single-frame receive's one-peer shortcut)."""
        items = self._items
        while items:
            item = items.popleft()
            hwm = self.hwm
            if hwm and len(items) == hwm - 1:
                self._became_writable()
            cls = item.__class__
            if cls is list or cls is bytes:
                return item  # type: ignore[return-value]
        return None

    def extend(self, batch: Iterable[object]) -> None:
        """Append a batch at once, with at most one wake-up."""
        items = self._items
        was_empty = not items
        items.extend(batch)
        if was_empty and items:
            self._became_readable()

    def popleft(self) -> object:
        """Remove and return the oldest item; ``IndexError`` when empty."""
        items = self._items
        item = items.popleft()
        if self.hwm and len(items) == self.hwm - 1:
            self._became_writable()
        return item

    def take(self, limit: int) -> list[object]:
        """Remove and return the oldest ``limit`` items (all of them, if fewer)."""
        items = self._items
        count = len(items)
        if count <= limit:
            batch = list(items)
            items.clear()
        else:
            # deque.popleft called ``limit`` times at C speed
            batch = list(map(_popleft, repeat(items, limit)))
        hwm = self.hwm
        if hwm and count >= hwm > len(items):
            self._became_writable()
        return batch

    def unshift(self, batch: list[object]) -> None:
        """Put back items taken but not used, in front, in order (no wake-ups: the
        consumer that took them is running and goes on with them)."""
        self._items.extendleft(reversed(batch))

    def peek(self) -> object:
        """The oldest item without removing it; ``IndexError`` when empty."""
        return self._items[0]

    def drain(self) -> list[object]:
        """Remove and return every item."""
        items = self._items
        was_full = self.full
        batch = list(items)
        items.clear()
        if was_full:
            self._became_writable()
        return batch

    def clear(self) -> None:
        """Discard every item (a binding side forgets a departed peer's queue)."""
        self.drain()

    def close(self) -> None:
        """Wake every waiter; waiters see :attr:`closed` and give up."""
        self.closed = True
        self._readers.unpark_all()
        self._writers.unpark_all()

    def _became_readable(self) -> None:
        if self.on_input is not None:
            self.on_input()
        if self._readers._tasks:
            self._readers.unpark_all()
        if self.on_readable is not None:
            self.on_readable()

    def _became_writable(self) -> None:
        if self._writers:
            self._writers.unpark_all()
        if self.on_writable is not None:
            self.on_writable()

    async def wait_readable(self) -> None:
        """Park until the pipe holds an item or is closed (returns at once if so)."""
        if self._items or self.closed:
            await trio.lowlevel.checkpoint()
            return
        await self._readers.park()

    async def wait_writable(self) -> None:
        """Park until the pipe is under its mark or closed (returns at once if so)."""
        if not self.full or self.closed:
            await trio.lowlevel.checkpoint()
            return
        await self._writers.park()

    def statistics(self) -> dict[str, int]:
        """Queue length, mark and parked tasks, for diagnostics and tests."""
        return {
            "queued": len(self._items),
            "hwm": self.hwm,
            "readers_waiting": len(self._readers),
            "writers_waiting": len(self._writers),
        }


def _is_message(item: object) -> bool:
    cls = item.__class__
    return cls is list or cls is Fanout


class ConflatePipe(Pipe):
    """A pipe that keeps only the newest message (libzmq's ``ZMQ_CONFLATE``): a new
    message replaces the one waiting, commands (subscriptions, PINGs) are kept, and
    the rest of a message half written (a ``bytes`` item at the head) stays whole.
    It is never full: nothing waits for room, nothing is dropped but older messages.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def _forget_messages(self) -> None:
        items = self._items
        if any(_is_message(item) for item in items):
            kept = [item for item in items if not _is_message(item)]
            items.clear()
            items.extend(kept)

    def put(self, item: object) -> None:
        if _is_message(item):
            self._forget_messages()
        super().put(item)

    def offer(self, item: object) -> bool:
        self.put(item)
        return True

    def offer_many(self, batch: list[object]) -> int:
        self.extend(batch)
        return len(batch)

    def extend(self, batch: Iterable[object]) -> None:
        batch = list(batch)
        last = next((i for i in range(len(batch) - 1, -1, -1) if _is_message(batch[i])), None)
        if last is not None:
            self._forget_messages()
            batch = [item for i, item in enumerate(batch) if i == last or not _is_message(item)]
        super().extend(batch)


#: the socket types whose queues ``conflate`` applies to, as in libzmq: the direction
#: that carries their messages (a PUB's incoming subscriptions are never conflated)
CONFLATE_OUT = frozenset({"PUSH", "PUB", "DEALER"})
CONFLATE_IN = frozenset({"PULL", "SUB", "DEALER"})


def pipes_for(socket_type: str, sndhwm: int, rcvhwm: int, conflate: bool) -> tuple[Pipe, Pipe]:
    """The (outgoing, incoming) pipes of a new peer of a ``socket_type`` socket."""
    out_pipe = ConflatePipe() if conflate and socket_type in CONFLATE_OUT else Pipe(sndhwm)
    in_pipe = ConflatePipe() if conflate and socket_type in CONFLATE_IN else Pipe(rcvhwm)
    return out_pipe, in_pipe
