"""The runtime's Pipe: a bounded FIFO that wakes the other side on transitions only."""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from trizmq.nursery.pipe import ConflateLinkPipe, ConflatePipe, LinkPipe, Pipe
from trizmq.zmtp.queue_items import Unsent


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def test_bounded_by_the_mark() -> None:
    pipe = Pipe(2)
    assert not pipe.full and not pipe and len(pipe) == 0
    pipe.put([b"a"])
    assert not pipe.full
    pipe.put([b"b"])
    assert pipe.full and len(pipe) == 2
    # put ignores the mark (callers check full; commands must never be dropped)
    pipe.put([b"c"])
    assert pipe.full and len(pipe) == 3


def test_offer_many_takes_what_the_mark_lets_in_with_one_wake_up() -> None:
    pipe = Pipe(5)
    woken = Counter()
    pipe.on_readable = woken
    assert pipe.offer_many([[b"a"], [b"b"], [b"c"]]) == 3
    assert woken.calls == 1
    assert pipe.offer_many([[b"d"], [b"e"], [b"f"]]) == 2  # f is over the mark
    assert woken.calls == 1 and pipe.full
    assert pipe.offer_many([[b"g"]]) == 0
    assert pipe.drain() == [[b"a"], [b"b"], [b"c"], [b"d"], [b"e"]]
    assert pipe.offer_many([]) == 0 and woken.calls == 1  # nothing came: no wake-up
    unbounded = Pipe(0)
    assert unbounded.offer_many([[b"x"]] * 10_000) == 10_000


def test_zero_means_unbounded() -> None:
    pipe = Pipe(0)
    pipe.extend([[b"x"]] * 10_000)
    assert not pipe.full and len(pipe) == 10_000


def test_fifo_order_peek_popleft_drain_clear() -> None:
    pipe = Pipe(10)
    pipe.extend([[b"1"], [b"2"], [b"3"]])
    assert pipe.peek() == [b"1"]
    assert pipe.popleft() == [b"1"]
    assert pipe.drain() == [[b"2"], [b"3"]]
    assert not pipe
    with pytest.raises(IndexError):
        pipe.popleft()
    with pytest.raises(IndexError):
        pipe.peek()
    assert pipe.drain() == []
    pipe.put([b"4"])
    pipe.clear()
    assert len(pipe) == 0


class Ping:
    """Stands for a command object (the pipe only looks at classes)."""


def test_put_next_goes_ahead_of_queued_messages() -> None:
    pipe = Pipe(2)
    pipe.extend([[b"1"], [b"2"]])
    first = Ping()
    assert pipe.put_next(first)
    # one waiting is enough: no twin is queued
    assert not pipe.put_next(Ping())
    # it ignores the mark, like put
    assert len(pipe) == 3 and pipe.full
    assert pipe.drain() == [first, [b"1"], [b"2"]]


def test_put_next_keeps_a_half_written_message_whole() -> None:
    pipe = Pipe(10)
    pipe.extend([Unsent(b"rest of a message"), [b"next"]])
    ping = Ping()
    assert pipe.put_next(ping)
    assert not pipe.put_next(Ping())
    assert pipe.drain() == [b"rest of a message", ping, [b"next"]]


def test_put_next_into_an_empty_pipe_is_put() -> None:
    # (the pipe no longer offers items to a write-through hook: that is the fast
    # path's, after routing; an empty pipe still wakes its reader once)
    pipe = Pipe(10)
    readable = Counter()
    pipe.on_readable = readable
    ping = Ping()
    assert pipe.put_next(ping)
    assert readable.calls == 1
    assert pipe.drain() == [ping]


def test_on_readable_only_on_empty_to_non_empty() -> None:
    pipe = Pipe(10)
    readable = Counter()
    pipe.on_readable = readable
    pipe.put([b"a"])
    assert readable.calls == 1
    pipe.put([b"b"])
    pipe.extend([[b"c"], [b"d"]])
    assert readable.calls == 1
    pipe.drain()
    pipe.extend([])  # an empty batch is no transition
    assert readable.calls == 1
    pipe.extend([[b"e"], [b"f"]])  # one wake-up for a whole batch
    assert readable.calls == 2


def test_on_writable_only_on_full_to_not_full() -> None:
    pipe = Pipe(2)
    writable = Counter()
    pipe.on_writable = writable
    pipe.put([b"a"])
    pipe.popleft()  # never was full
    assert writable.calls == 0
    pipe.extend([[b"a"], [b"b"]])
    pipe.popleft()  # full -> not full
    assert writable.calls == 1
    pipe.popleft()
    assert writable.calls == 1
    pipe.extend([[b"a"], [b"b"]])
    pipe.drain()  # full -> empty
    assert writable.calls == 2
    pipe.put([b"a"])
    pipe.drain()  # not full -> empty: no transition
    pipe.clear()
    assert writable.calls == 2


def test_overshoot_wakes_once_when_back_under_the_mark() -> None:
    pipe = Pipe(2)
    writable = Counter()
    pipe.on_writable = writable
    pipe.extend([[b"x"]] * 5)
    for _ in range(3):
        pipe.popleft()
    assert writable.calls == 0  # still at or over the mark
    pipe.popleft()
    assert writable.calls == 1 and not pipe.full
    pipe.popleft()
    assert writable.calls == 1


def test_unbounded_never_calls_on_writable() -> None:
    pipe = Pipe(0)
    writable = Counter()
    pipe.on_writable = writable
    pipe.extend([[b"x"]] * 3)
    pipe.popleft()
    pipe.drain()
    assert writable.calls == 0


def test_statistics() -> None:
    pipe = Pipe(7)
    pipe.extend([[b"x"]] * 3)
    assert pipe.statistics() == {
        "queued": 3,
        "hwm": 7,
        "readers_waiting": 0,
        "writers_waiting": 0,
    }


async def test_wait_readable_wakes_every_parked_reader_once() -> None:
    with trio.fail_after(5):
        pipe = Pipe(4)
        woken: list[int] = []

        async def reader(i: int) -> None:
            await pipe.wait_readable()
            woken.append(i)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader, 1)
            nursery.start_soon(reader, 2)
            await wait_all_tasks_blocked()
            assert pipe.statistics()["readers_waiting"] == 2
            pipe.put([b"a"])
            pipe.put([b"b"])
        assert sorted(woken) == [1, 2]
        assert pipe.statistics()["readers_waiting"] == 0


async def test_wait_writable_wakes_on_leaving_full() -> None:
    with trio.fail_after(5):
        pipe = Pipe(1)
        pipe.put([b"a"])
        done = trio.Event()

        async def writer() -> None:
            await pipe.wait_writable()
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            await wait_all_tasks_blocked()
            assert pipe.statistics()["writers_waiting"] == 1
            assert not done.is_set()
            pipe.popleft()
        assert done.is_set()


async def test_waits_return_at_once_when_ready() -> None:
    with trio.fail_after(5):
        pipe = Pipe(2)
        await pipe.wait_writable()
        pipe.put([b"a"])
        await pipe.wait_readable()
        assert pipe.statistics()["readers_waiting"] == 0


async def test_close_wakes_every_waiter_and_stays_closed() -> None:
    with trio.fail_after(5):
        empty, full = Pipe(1), Pipe(1)
        full.put([b"a"])
        woken: list[str] = []

        async def read() -> None:
            await empty.wait_readable()
            woken.append("reader")

        async def write() -> None:
            await full.wait_writable()
            woken.append("writer")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            nursery.start_soon(write)
            await wait_all_tasks_blocked()
            assert woken == []
            empty.close()
            full.close()
        assert sorted(woken) == ["reader", "writer"]
        assert empty.closed and full.closed
        # a closed pipe never parks again
        await empty.wait_readable()
        await full.wait_writable()


async def test_wait_is_cancellable() -> None:
    with trio.fail_after(5):
        pipe = Pipe(1)
        with trio.move_on_after(0.01) as scope:
            await pipe.wait_readable()
        assert scope.cancelled_caught
        assert pipe.statistics()["readers_waiting"] == 0


def test_offer_many_each_is_offer_many_to_every_pipe() -> None:
    # a publisher's batch to its subscribers in one call: an empty pipe is woken
    # once, a pipe with room takes it all, one near its mark takes what it lets in,
    # a full one nothing, a conflating pipe keeps the last; the drops are summed
    pipes = [Pipe(0), Pipe(10), Pipe(4), Pipe(2), ConflatePipe()]
    woken = Counter()
    pipes[0].on_readable = woken
    for pipe in pipes[1:4]:
        pipe.put([b"old"])
    pipes[3].put([b"old"])
    batch: list[object] = [[b"a"], [b"b"], [b"c"], [b"d"]]
    assert Pipe.offer_many_each(pipes, batch) == 1 + 4
    assert woken.calls == 1
    assert pipes[0].drain() == batch
    assert pipes[1].drain() == [[b"old"], *batch]
    assert pipes[2].drain() == [[b"old"], [b"a"], [b"b"], [b"c"]]
    assert pipes[3].drain() == [[b"old"], [b"old"]]
    assert pipes[4].drain() == [[b"d"]]


def test_a_pipe_counts_refusals_and_what_a_clear_drops() -> None:
    # a pipe counts no message itself: its writer and reader do, in batches
    pipe = Pipe(2, exits=True)
    assert pipe.offer([b"a"]) and pipe.offer([b"bc"])
    assert not pipe.offer([b"d"])
    assert pipe.offer_many([[b"e"], [b"f"]]) == 0
    assert (pipe.passed, pipe.refused) == (0, 3)
    pipe.put(Ping())  # a command is no message
    assert pipe.queued() == (2, 3)
    pipe.clear()
    # dropped with a departed peer: they left the queue, and were lost
    assert (pipe.passed, pipe.octets, pipe.peak) == (2, 3, 3)
    assert pipe.counted("disconnect") == 2 and pipe.counted("hwm") == 0


def test_a_bytes_item_is_a_message_and_the_rest_of_one_begun_is_not() -> None:
    pipe = Pipe(0)
    pipe.extend([b"bare", [b"list", b"ed"], Ping()])
    assert pipe.queued() == (2, 10)
    outgoing = Pipe(0, exits=True)
    # the rest of a message begun on the wire was counted as it began
    outgoing.extend([Unsent(b"rest"), [b"list", b"ed"], Ping()])
    assert outgoing.queued() == (1, 6)


def test_an_inproc_link_counts_what_enters_and_its_peak() -> None:
    pipe = LinkPipe(3)
    assert [pipe.offer([b"x"]) for _ in range(5)] == [True, True, True, False, False]
    assert (pipe.passed, pipe.peak, pipe.refused) == (3, 3, 2)
    pipe.poll_item()
    pipe.put([b"y"])
    pipe.put(Ping())  # a command: no message, but an entry of the queue
    assert (pipe.passed, pipe.peak) == (4, 4)
    assert pipe.offer_many([[b"z"]] * 3) == 0  # over the mark
    pipe.drain()
    assert pipe.offer_many([[b"z"]] * 5) == 3
    pipe.extend([[b"w"]])
    assert (pipe.passed, pipe.peak, pipe.octets) == (8, 4, 0)  # no bytes on a link
    unbounded = LinkPipe(0)
    for _ in range(10):
        unbounded.offer([b"u"])
    assert (unbounded.passed, unbounded.peak) == (10, 10)


def test_conflate_counts_its_replacements_as_drops() -> None:
    outgoing = ConflatePipe(exits=True)
    for body in (b"1", b"22", b"333"):
        outgoing.offer([body])
    # counted as they left the queue: what waits is added in the snapshot
    assert (outgoing.passed, outgoing.octets) == (2, 3)
    assert outgoing.counted("conflate") == 2 and outgoing.counted("conflate_bytes") == 3
    link = ConflateLinkPipe()
    link.extend([[b"a"], [b"bb"], [b"ccc"]])
    link.put([b"dddd"])
    # a link counts what enters: all four, three of them replaced
    assert link.passed == 4 and link.counted("conflate") == 3
    assert link.queued() == (1, 4)
    incoming = ConflatePipe()  # a reader's: the reader counts what it hands in
    incoming.extend([[b"a"], [b"bb"], [b"ccc"]])
    assert incoming.passed == 0 and incoming.counted("conflate") == 2
    assert incoming.queued() == (1, 3)
    assert incoming.counted("conflate_bytes") == 3


def test_a_write_through_cut_short_leaves_the_rest_owed_at_the_head() -> None:
    """What a partial write took leaves the queue, counted; the message it cut stays
    as the bytes still owed (an ``Unsent``, counted as it began); the rest wait."""
    from zmtp.helpers import handshaken

    from trizmq.zmtp.outbound import Outbound

    codec = handshaken("PUSH", b"PULL")
    outbound = Outbound(codec)
    pipe = Pipe(0, exits=True)
    pipe.extend([[b"aaa"], [b"bb"], [b"cccc"], Ping()])
    transmit = pipe.encode_head(outbound.encode_messages)
    assert transmit.used == 3 and len(pipe) == 4  # read in place, not taken
    assert not pipe.sent(transmit, 7)
    assert (pipe.passed, pipe.octets, pipe.peak) == (2, 5, 4)
    rest, *others = pipe.take(10)
    assert rest.__class__ is Unsent and rest == b"bb"  # [b"bb"]'s last two bytes
    assert others[0] == [b"cccc"] and isinstance(others[1], Ping)


def test_a_lone_message_written_through_in_part_leaves_its_rest() -> None:
    pipe = Pipe(0, exits=True)
    pipe.put([b"only"])
    assert not pipe.sent_alone(bytearray(b"\x00\x04only"), 3, 4)
    (rest,) = pipe.drain()
    assert rest.__class__ is Unsent and rest == b"nly"
    assert (pipe.passed, pipe.octets, pipe.peak) == (1, 4, 1)
    pipe.put([b"again"])
    assert pipe.sent_alone(bytearray(b"\x00\x05again"), 7, 5) and not pipe
