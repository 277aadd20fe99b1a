r"""One direction of one peer: a bounded, closable FIFO of whole messages.

What it may hold is a closed set of kinds, declared once in
:mod:`trizmq.zmtp.queue_items` (messages, a publisher's shared ones, the rest of a
message begun, commands, a hangup; the incoming and the outgoing sets apart). Only
this module looks inside the queue: whoever else needs something of it (the next
batch, what is at its head, the rest of a message written in part, the counts)
asks it with one of its methods.

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
* Consumers ``popleft``/``drain``; a connection's writer takes its next step with
  :meth:`Pipe.transmit` (a batch from the head, encoded by the connection's outbound
  half, ``trizmq.zmtp.outbound``; what that did not hold stays); the sending task's
  write-through has the head encoded in place (:meth:`Pipe.encode_head`) and tells
  what the kernel took (:meth:`Pipe.sent`, :meth:`Pipe.sent_alone`), which leaves
  the rest of a message cut short at the head as
  :class:`~trizmq.zmtp.queue_items.Unsent`. Transitions wake the other side: empty →
  non-empty calls ``on_input`` (the reading socket's fair queue: this peer has
  input), wakes task(s) parked in :meth:`wait_readable` and calls
  ``on_readable``; at-or-over the mark → under it wakes :meth:`wait_writable`
  and calls ``on_writable``. The callbacks are how a socket learns that any of its
  pipes changed, without a task per pipe.
* An inproc connection shares the very same pipe objects between two sockets:
  one socket's outgoing pipe is the other's incoming pipe, so whole messages pass
  as objects with no encoding.

Counting (``sock.stats()``, see ``trizmq.nursery.counting``): a pipe holds its
peer direction's counters and counts where items are taken and handed over in
batches, once per batch, from what the encoder reports it framed: an outgoing pipe
as its items leave it (:meth:`Pipe.transmit`, :meth:`Pipe.sent`; :attr:`Pipe.exits`
is True there: what was handed to the queue is what left it plus what waits), an
incoming one as a read's messages enter it (:meth:`Pipe.extend_counted`,
:meth:`Pipe.put_counted`; their payload bytes are the codec's count). An inproc
link has neither, so its pipes (:class:`LinkPipe`) count each message as it
enters. Rare events are counted where they happen: a message refused at the mark
(:attr:`Pipe.refused`), one replaced under ``conflate``, dropped with a departed
peer's queue, or read and not delivered (:meth:`Pipe.discarded`, in
:attr:`Pipe.tally`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, TypeVar

import trio

from ..zmtp.queue_items import OUTGOING_MESSAGES, Fanout, Hangup, Unsent, payload
from .waiters import Waiters

if TYPE_CHECKING:
    from ..patterns.sockets.base import Queue
    from ..zmtp.outbound import Outbound, Transmit

__all__ = ["ConflateLinkPipe", "ConflatePipe", "LinkPipe", "Pipe", "pipes_for"]

_popleft = deque.popleft
_T = TypeVar("_T")


class Pipe:
    """A bounded FIFO of messages (``list[bytes]``) and command objects."""

    __slots__ = (
        "_items",
        "_readers",
        "_writers",
        "closed",
        "exits",
        "hwm",
        "octets",
        "on_input",
        "on_readable",
        "on_writable",
        "passed",
        "peak",
        "refused",
        "tally",
    )

    def __init__(self, hwm: int, *, exits: bool = False) -> None:
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
        #: True where :attr:`passed` counts messages as they leave (a stream's or udp's
        #: outgoing queue, counted by its writer), False where it counts them as they
        #: enter (an incoming queue, counted by its reader; an inproc link's pipe)
        self.exits = exits
        #: messages counted through the pipe (see :attr:`exits`), and their payload bytes
        self.passed = 0
        self.octets = 0
        #: the most messages seen queued at once (where they are counted, and on removal)
        self.peak = 0
        #: messages refused at the mark by :meth:`offer`/:meth:`offer_many` (a drop
        #: where the pattern drops, a wait elsewhere: the snapshot knows which)
        self.refused = 0
        #: counts of rare events, by name, made on the first (see :meth:`note`)
        self.tally: dict[str, int] | None = None

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

        It goes behind only the rest of a message already half written (an
        :class:`~trizmq.zmtp.queue_items.Unsent` at the head), which must stay whole
        on the wire. When an item of the
        same class already waits there, nothing is added and False is returned: a
        PING not yet written needs no twin. Ignores the mark, like :meth:`put`.
        """
        items = self._items
        if not items:
            self.put(item)
            return True
        index = 1 if items[0].__class__ is Unsent else 0
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
                self.refused += 1
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
                    self.refused += len(batch)
                    return 0
                self.refused += len(batch) - room
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
        keeps up, its queue held back or being written) takes it with one C-level
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

    def extend_counted(self, batch: Sequence[object], messages: int = -1) -> None:
        """:meth:`extend` with messages that enter, counted as they do (:attr:`passed`,
        :attr:`peak`): a reader's hand-over of what one read parsed, in one call.
        ``messages``: how many of ``batch`` are messages (-1: all of them)."""
        items = self._items
        was_empty = not items
        items.extend(batch)
        self.passed += len(batch) if messages < 0 else messages
        if len(items) > self.peak:
            self.peak = len(items)
        if was_empty and items:
            self._became_readable()

    def put_counted(self, item: object, octets: int = 0) -> None:
        """:meth:`put` of one message that enters, counted as it does (a reader's
        hand-over of a read's one message, a request or a reply, whose payload bytes
        the codec counts; a udp receiver's datagram, of ``octets`` payload bytes)."""
        items = self._items
        items.append(item)
        self.passed += 1
        self.octets += octets
        if len(items) > self.peak:
            self.peak = len(items)
        if len(items) == 1:
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
        if count > self.peak:
            self.peak = count
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

    # -- the outgoing side: what a connection's writer and write-through take -----------
    def transmit(self, outbound: Outbound) -> Transmit:
        """A writer's step: the next batch from the head, encoded by ``outbound`` (the
        connection's sending half); what the buffers hold leaves the queue, counted,
        and the rest stays at the head (the pipe must not be empty)."""
        batch = self.take(outbound.batch_limit(self._items[0]))
        transmit = outbound.encode(batch)
        used = transmit.used
        if used < len(batch):
            self._items.extendleft(reversed(batch[used:]))
        self.passed += transmit.messages
        self.octets += transmit.payload
        return transmit

    def encode_head(self, encode: Callable[[Sequence[object]], _T]) -> _T:
        """The items at the head encoded in place by ``encode`` (a connection's
        outbound half, ``Outbound.encode_messages`` or ``encode_runs``): read, not
        taken; :meth:`sent` takes what a write of them took."""
        return encode(self._items)

    def sent(self, transmit: Transmit, sent: int) -> bool:
        """A write of ``transmit`` (encoded from the head by :meth:`encode_head`) took
        its first ``sent`` bytes: the items it wrote leave, counted, the one it cut
        stays as the bytes still owed for it (an ``Unsent``, counted as it began).
        True when the queue is empty then."""
        items = self._items
        if len(items) > self.peak:
            self.peak = len(items)
        count = transmit.used
        if count == len(items) and sent == transmit.size:
            items.clear()
            self.passed += count
            self.octets += transmit.payload
            return True
        whole, rest = transmit.split(sent)
        for _ in range(whole):
            items.popleft()
        if rest is not None:
            items[0] = Unsent(rest)
            whole += 1
        self.passed += whole
        self.octets += transmit.payload_of(whole)
        return not items

    def sent_alone(self, wire: Sequence[int], sent: int, size: int) -> bool:
        """The queue's only item, a message of ``size`` payload bytes encoded as
        ``wire``, was written through, its first ``sent`` bytes taken: it left
        (counted), whole or begun (then its rest stays as an ``Unsent``). True when
        it went whole and nothing else waits."""
        self.passed += 1
        self.octets += size
        if not self.peak:
            self.peak = 1  # the message was queued alone, to an empty pipe
        items = self._items
        if sent < len(wire):
            # the rest belongs to this connection only: never resent on another
            items[0] = Unsent(wire[sent:])
            return False
        items.popleft()
        return not items

    def take_counted(self) -> object:
        """:meth:`popleft` of a message that leaves, counted as it does (a udp
        sender's datagram)."""
        items = self._items
        if len(items) > self.peak:
            self.peak = len(items)
        item = self.popleft()
        self.passed += 1
        self.octets += payload(item)
        return item

    def take_hangup(self) -> bool:
        """Whether a :class:`~trizmq.zmtp.queue_items.Hangup` is at the head (a
        connection that ends once what was before it is written): taken if so."""
        items = self._items
        if items and items[0].__class__ is Hangup:
            items.popleft()
            return True
        return False

    def drop_unsent(self) -> None:
        """The connection that began a message ends: the rest still owed for it (at the
        head) belongs to that connection only and is dropped, never resent on the
        next one (it was counted as it began; it is lost with the connection)."""
        items = self._items
        if items and items[0].__class__ is Unsent:
            items.popleft()
            self.note("disconnect")

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
        """Discard every item (a binding side forgets a departed peer's queue): the
        messages among them are counted as dropped at a ``"disconnect"``."""
        messages, octets = self.queued()
        if len(self._items) > self.peak:
            self.peak = len(self._items)
        self.drain()
        if messages:
            if self.exits:
                self.passed += messages
                self.octets += octets
            self.note("disconnect", messages)

    # -- counting (see the module docstring) ------------------------------------------
    def note(self, name: str, count: int = 1) -> None:
        """Add ``count`` to the rare event ``name`` in :attr:`tally`."""
        tally = self.tally
        if tally is None:
            tally = self.tally = {}
        tally[name] = tally.get(name, 0) + count

    def discarded(self, reason: str, item: object) -> None:
        """A message that entered this pipe was not delivered, for ``reason``
        (``"filtered"``, ``"conflate"``): counted with its payload bytes, which
        ``"<reason>_bytes"`` keeps."""
        self.note(reason)
        size = payload(item)
        if size:
            self.note(reason + "_bytes", size)

    def counted(self, name: str) -> int:
        """The rare event ``name``'s count (0 before the first)."""
        tally = self.tally
        return 0 if tally is None else tally.get(name, 0)

    def queued(self) -> tuple[int, int]:
        """The messages waiting now and their payload bytes: not the commands, nor the
        rest of a message begun on the wire (an ``Unsent``, counted as it began)."""
        messages = octets = 0
        for item in self._items:
            cls = item.__class__
            if cls is list or cls is bytes or cls is Fanout:
                messages += 1
                octets += payload(item)
        return messages, octets

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
    return item.__class__ in OUTGOING_MESSAGES


class ConflatePipe(Pipe):
    """A pipe that keeps only the newest message (libzmq's ``ZMQ_CONFLATE``): a new
    message replaces the one waiting, commands (subscriptions, PINGs) are kept, and
    the rest of a message half written (an ``Unsent`` at the head) stays whole.
    It is never full: nothing waits for room, nothing is dropped but older messages.
    """

    __slots__ = ()

    def __init__(self, *, exits: bool = False) -> None:
        super().__init__(0, exits=exits)

    def _forget_messages(self) -> None:
        items = self._items
        if any(_is_message(item) for item in items):
            kept = [item for item in items if not _is_message(item)]
            for item in items:
                if _is_message(item):
                    self._replaced(item, queued=True)
            items.clear()
            items.extend(kept)

    def _replaced(self, item: object, *, queued: bool) -> None:
        """``item`` was replaced by a newer message, once ``queued`` or as it came in a
        batch: a ``"conflate"`` drop. Where the pipe counts what leaves, it left; where
        it counts what enters itself (an inproc link), one of a batch entered."""
        if self.exits:
            self.passed += 1
            self.octets += payload(item)
        elif not queued and isinstance(self, LinkPipe):
            self.passed += 1
        self.discarded("conflate", item)

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
            for i, item in enumerate(batch):
                if i != last and _is_message(item):
                    self._replaced(item, queued=False)
            batch = [item for i, item in enumerate(batch) if i == last or not _is_message(item)]
        super().extend(batch)

    def put_counted(self, item: object, octets: int = 0) -> None:
        self.put(item)  # a replaced message entered too: it is counted in
        self.passed += 1
        self.octets += octets
        if len(self._items) > self.peak:
            self.peak = len(self._items)

    def extend_counted(self, batch: Sequence[object], messages: int = -1) -> None:
        self.extend(batch)  # replaced messages entered too: each is counted in
        self.passed += len(batch) if messages < 0 else messages
        if len(self._items) > self.peak:
            self.peak = len(self._items)


class LinkPipe(Pipe):
    """A pipe of an inproc link, shared by two sockets: one's outgoing queue is the
    other's incoming one, and no writer or reader moves its messages in batches, so
    it counts each message as it enters (:attr:`passed`, :attr:`peak`). Its payload
    bytes are not counted (:attr:`octets` stays 0): a link passes message objects,
    and summing their frames' sizes would cost every message more than the rest of
    the count (see docs/observability.md).

    Strategy: where the queue holds something already, one comparison covers both the
    mark and the peak (:attr:`_watch` is the lower of the two), where :class:`Pipe`
    makes one for the mark; into an empty queue (a receiver that keeps up) no length
    is looked at. Counting costs an offer one addition.
    """

    __slots__ = ("_watch",)

    def __init__(self, hwm: int, *, exits: bool = False) -> None:
        super().__init__(hwm, exits=exits)
        #: the queue length at which an offer must look: the mark, or the peak so far
        self._watch = 0

    def _grew(self, count: int) -> None:
        """The queue holds ``count`` entries, more than ever: a new peak."""
        self.peak = count
        hwm = self.hwm
        self._watch = count if not hwm or count < hwm else hwm

    def put(self, item: object) -> None:
        items = self._items
        if item.__class__ is list:  # a message (commands are other objects)
            self.passed += 1
        count = len(items)
        if count >= self.peak:
            self._grew(count + 1)
        items.append(item)
        if not count:
            self._became_readable()

    def offer(self, item: object) -> bool:
        items = self._items
        if items:
            count = len(items)
            if count >= self._watch:
                hwm = self.hwm
                if hwm and count >= hwm:
                    self.refused += 1
                    return False
                self._grew(count + 1)
            items.append(item)
            self.passed += 1
            return True
        items.append(item)
        self.passed += 1
        if not self.peak:
            self._grew(1)
        self._became_readable()
        return True

    def offer_many(self, batch: list[object]) -> int:
        taken = super().offer_many(batch)
        self.passed += taken
        if len(self._items) > self.peak:
            self._grew(len(self._items))
        return taken

    def extend(self, batch: Iterable[object]) -> None:
        items = self._items
        before = len(items)
        super().extend(batch)
        count = len(items)
        self.passed += count - before
        if count > self.peak:
            self._grew(count)

    def put_counted(self, item: object, octets: int = 0) -> None:
        self.put(item)  # which counts, as everything entering a link does

    def extend_counted(self, batch: Sequence[object], messages: int = -1) -> None:
        self.extend(batch)  # which counts, as everything entering a link does


class ConflateLinkPipe(ConflatePipe, LinkPipe):
    """:class:`ConflatePipe` on an inproc link: counts as :class:`LinkPipe` does."""

    __slots__ = ()

    put_counted = LinkPipe.put_counted
    extend_counted = LinkPipe.extend_counted


def pipes_for(
    sndhwm: int, rcvhwm: int, *, conflate_out: bool, conflate_in: bool, link: bool = False
) -> tuple[Pipe, Pipe]:
    """The (outgoing, incoming) pipes of a new peer: bounded by the marks, or keeping
    the newest message only in a direction that conflates (``conflate``, where the
    socket type's row says it applies: the direction that carries its messages, as
    in libzmq; a PUB's incoming subscriptions are never conflated); ``link``: an
    inproc link's, which count what enters them (:class:`LinkPipe`)."""
    if link:
        return (
            ConflateLinkPipe() if conflate_out else LinkPipe(sndhwm),
            ConflateLinkPipe() if conflate_in else LinkPipe(rcvhwm),
        )
    return (
        ConflatePipe(exits=True) if conflate_out else Pipe(sndhwm, exits=True),
        ConflatePipe() if conflate_in else Pipe(rcvhwm),
    )
