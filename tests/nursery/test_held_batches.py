"""Held batches: a publisher's batches held back for idle connections, so that one system call
writes several (FastPath.route_batch, IoWaitHook). Counted, never timed: each test says
which rule released the held batches, with HOLD_TIME out of reach where the time rule must not
act."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest
import trio
import trio.testing
import zmq
from zmtp.helpers import handshaken

import trizmq
from trizmq.nursery.fastpath import instrument
from trizmq.nursery.fastpath.instrument import HOLD_ITEMS
from trizmq.nursery.fastpath.trio_probe import anything_runnable
from trizmq.nursery.fastpath.write_through import RawOutput
from trizmq.nursery.pipe import Pipe
from trizmq.zmtp.outbound import Outbound
from trizmq.zmtp.queue_items import FanoutRun

pytestmark = pytest.mark.fastpath


@pytest.fixture(autouse=True)
def no_time_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held batches wait an hour before the time rule releases them (unless a test says)."""
    monkeypatch.setattr(instrument, "HOLD_TIME", 3600.0)


@asynccontextmanager
async def publisher_and_subscribers(count: int) -> AsyncIterator[tuple[Any, list[Any]]]:
    """An XPUB over tcp and ``count`` subscribers of everything, subscribed."""
    async with trizmq.XPub(bind="tcp://127.0.0.1:0", xpub_verbose=True, sndhwm=0) as pub:
        bound = pub.statistics()["bound"][0]
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(
                    trizmq.Sub(connect=bound, subscribe=b"", rcvhwm=0)
                )
                for _ in range(count)
            ]
            for _ in subs:
                assert await pub.recv() == b"\x01"
            yield pub, subs


@asynccontextmanager
async def receiving(sub: Any) -> AsyncIterator[list[list[bytes]]]:
    """A task receiving the next batch of ``sub`` into the list yielded, parked in
    its receive before the body runs."""
    received: list[list[bytes]] = []

    async def receive() -> None:
        received.extend(await sub.recv_many())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await trio.testing.wait_all_tasks_blocked()
        yield received


def count_flushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes, in messages, of the queues the releases' flushes met."""
    sizes: list[int] = []
    real = RawOutput._write_runs

    def counting(output: RawOutput) -> bool:
        sizes.append(len(output._pipe))
        return real(output)

    monkeypatch.setattr(RawOutput, "_write_runs", counting)
    return sizes


async def test_batches_published_in_every_pass_share_a_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the publisher publishes every other pass: only HOLD_ITEMS releases the held batches
    # while it publishes
    flushes = count_flushes(monkeypatch)
    batches = 40
    async with publisher_and_subscribers(2) as (pub, subs):
        sent = []
        for round_ in range(batches):
            batch = [[b"%d-%d" % (round_, i)] for i in range(64)]
            sent += batch
            await pub.send_many(batch)
            await trio.sleep(0)
        for sub in subs:
            got: list[list[bytes]] = []
            while len(got) < len(sent):
                got += await sub.recv_many()
            assert got == sent
    # one flush a connection per HOLD_ITEMS messages, and the last ones as it went
    # idle, where a write a batch made 40
    assert 2 * batches * 64 // HOLD_ITEMS <= len(flushes) <= 2 * (batches * 64 // HOLD_ITEMS + 1)
    assert max(flushes) >= HOLD_ITEMS


async def test_held_batches_go_after_two_passes_without_publishing() -> None:
    # a publisher that publishes once while this task keeps the run loop busy (it
    # never waits for I/O): the subscriber gets the batch within a few passes of
    # the publisher going quiet. Two subscribers: a batch for one subscriber of
    # everything is queued as plain messages and written at once, not held back.
    async with publisher_and_subscribers(2) as (pub, (sub, _)):
        passes = 0
        async with receiving(sub) as received:
            await pub.send_many([[b"one"], [b"two"]])
            while not received:
                passes += 1
                assert passes < 1000, "the batches stayed held"
                await trio.sleep(0)
        assert received == [[b"one"], [b"two"]]
        assert passes < 10


async def test_held_batches_go_after_hold_time_while_publishing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one message a batch, in every other pass, never HOLD_ITEMS of them: once the
    # oldest held batch is HOLD_TIME old (made 0 here, where it was an hour), they go
    flushes = count_flushes(monkeypatch)
    async with publisher_and_subscribers(2) as (pub, (sub, _)):
        async with receiving(sub) as received:
            sent = 0
            for _ in range(20):
                await pub.send_many([[b"%d" % sent]])
                sent += 1
                await trio.sleep(0)
            assert not received and not flushes  # held all along
            monkeypatch.setattr(instrument, "HOLD_TIME", 0.0)
            while not received:
                assert sent < HOLD_ITEMS // 2, "the batches stayed held"
                await pub.send_many([[b"%d" % sent]])
                sent += 1
                await trio.sleep(0)
        assert received[0] == [b"0"]
        assert flushes and flushes[0] < HOLD_ITEMS


async def test_a_socket_that_never_holds_installs_no_instrument() -> None:
    # trio calls an instrument's hook once every scheduler pass: a PUSH's batches,
    # written at once, must not install the one holding uses
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.rcvtimeo = 10_000  # the thread below is bounded too
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    try:
        async with trizmq.Push(connect=f"tcp://127.0.0.1:{port}") as push:
            for _ in range(10):
                assert await push.send_many([[b"x"]] * 64) == 64
            got = await trio.to_thread.run_sync(lambda: [pull.recv() for _ in range(640)])
            assert got == [b"x"] * 640
            with pytest.raises(LookupError):
                instrument._IO_WAIT_HOOK.get()
    finally:
        pull.close(linger=0)
        ctx.term()


class _Raw:
    """A raw socket that records each write and takes ``room`` bytes of it."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.calls: list[list[bytes]] = []

    def sendmsg(self, buffers: list[bytes]) -> int:
        self.calls.append(list(buffers))
        return min(self.room, sum(map(len, buffers)))

    def send(self, buffer: bytes) -> int:
        return self.sendmsg([buffer])


def _output_with_queue(room: int, *queued: Sequence[object]) -> tuple[RawOutput, _Raw]:
    codec = handshaken("XPUB", b"XSUB")
    output = RawOutput.__new__(RawOutput)
    output.outbound = Outbound(codec, zero_copy=True)
    output._pipe = Pipe(0)
    for items in queued:
        output._pipe.extend(items)
    output.actor = SimpleNamespace(codec=codec)  # type: ignore[assignment]
    output.raw = raw = _Raw(room)  # type: ignore[assignment]
    output._fast = SimpleNamespace(write_through_allowed=True, write_through_ready=True)  # type: ignore[assignment]
    return output, raw


def _queued(output: RawOutput) -> list[object]:
    pipe = output._pipe
    return pipe.take(len(pipe))


@pytest.mark.parametrize("room", [10**6, 8, 9, 12, 13, 15, 16, 19])
def test_a_flush_writes_the_whole_runs_at_the_head_and_no_run_cut_short(room: int) -> None:
    # runs a and b are queued whole; c was cut short by this connection's mark (its
    # last message is not here): one sendmsg writes a's and b's shared encodings,
    # c stays for the writer; a write the kernel took part of (in a's wire, at its
    # end, in b's) leaves the bytes still owed for the message it cut, then the
    # rest in order
    a = FanoutRun([[b"a1"], [b"a2"], [b"a3"]])
    b = FanoutRun([[b"b1"], [b"b2"]])
    c = FanoutRun([[b"c1"], [b"c2"], [b"c3"]])
    output, raw = _output_with_queue(room, a.items, b.items, c.items[:2])
    assert output._write_runs() is False
    assert raw.calls == [[a.wire, b.wire]]
    left = _queued(output)
    assert left[-2:] == c.items[:2]
    if room > 100:
        assert len(left) == 2
    else:
        wire = a.wire + b.wire  # type: ignore[operator]
        ends = a.ends + [len(a.wire) + end for end in b.ends]  # type: ignore[arg-type]
        items = a.items + b.items
        cut = next(i for i, end in enumerate(ends) if end > room)
        owed = [wire[room : ends[cut]]] if ends[cut - 1] < room else [items[cut]]
        assert left[:-2] == owed + items[cut + 1 :]


def test_a_flush_writes_nothing_shared_past_a_run_not_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the head's run misses its first message (written before) or its last (cut by
    # the mark): nothing is written as shared; the ordinary path takes the queue
    a = FanoutRun([[b"a1"], [b"a2"], [b"a3"]])
    taken: list[RawOutput] = []
    monkeypatch.setattr(RawOutput, "write_queue_now", lambda output: taken.append(output))
    for queue in (a.items[1:], a.items[:2]):
        taken.clear()
        output, raw = _output_with_queue(10**6, queue)
        assert not output._write_runs()
        assert raw.calls == [] and taken == [output]
        assert _queued(output) == queue


async def _rescheduled_sleeper(nursery: trio.Nursery) -> trio.lowlevel.Task:
    """A task parked until rescheduled by hand, once every task is blocked."""

    async def sleeper(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started(trio.lowlevel.current_task())
        await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.SUCCEEDED)

    task: trio.lowlevel.Task = await nursery.start(sleeper)
    await trio.testing.wait_all_tasks_blocked()
    return task


async def test_anything_runnable_reads_trios_run_queue() -> None:
    async with trio.open_nursery() as nursery:
        task = await _rescheduled_sleeper(nursery)
        assert not anything_runnable()
        trio.lowlevel.reschedule(task)
        assert anything_runnable()


async def test_the_loop_is_woken_only_when_a_task_waits_to_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # held batches released with everything written woke nobody: the loop may sleep
    # (a wake-up of its own cost a lone published message ~15 µs); a woken writer
    # must not wait for the sleep to end
    hook = instrument.IoWaitHook()
    wakes: list[object] = []
    hook._token = SimpleNamespace(  # type: ignore[assignment]
        run_sync_soon=lambda fn, idempotent: wakes.append(fn)
    )
    monkeypatch.setattr(instrument.IoWaitHook, "_release_if_due", lambda self, timeout: True)
    async with trio.open_nursery() as nursery:
        task = await _rescheduled_sleeper(nursery)
        hook.held = [object()]  # type: ignore[list-item]
        hook.before_io_wait(1.0)
        assert wakes == []
        trio.lowlevel.reschedule(task)
        hook.held = [object()]  # type: ignore[list-item]
        hook.before_io_wait(1.0)
        assert wakes == [instrument._nothing]
        hook.held = [object()]  # type: ignore[list-item]
        hook.before_io_wait(0.0)  # the loop does not sleep anyway
        assert wakes == [instrument._nothing]


async def test_holding_never_keeps_a_subscriber_into_its_mark() -> None:
    # with sndhwm at 100 and batches of 40 in every other pass, batches held to
    # HOLD_ITEMS would fill the queues past the mark and drop messages two idle
    # subscribers could take: held batches go once half the mark waits
    async with trizmq.XPub(bind="tcp://127.0.0.1:0", xpub_verbose=True, sndhwm=100) as pub:
        bound = pub.statistics()["bound"][0]
        async with (
            trizmq.Sub(connect=bound, subscribe=b"", rcvhwm=0) as one,
            trizmq.Sub(connect=bound, subscribe=b"", rcvhwm=0) as two,
        ):
            for _ in range(2):
                assert await pub.recv() == b"\x01"
            sent: list[list[bytes]] = []
            with trio.fail_after(10):
                for round_ in range(20):
                    batch = [[b"%d-%d" % (round_, i)] for i in range(40)]
                    sent += batch
                    assert await pub.send_many(batch) == 40
                    await trio.sleep(0)
                assert pub.statistics()["dropped"] == 0
                for sub in (one, two):
                    got: list[list[bytes]] = []
                    while len(got) < len(sent):
                        got += await sub.recv_many()
                    assert got == sent


def test_the_hold_limit_is_half_a_lower_mark() -> None:
    assert instrument.hold_limit(Pipe(0)) == HOLD_ITEMS
    assert instrument.hold_limit(Pipe(2 * HOLD_ITEMS)) == HOLD_ITEMS
    assert instrument.hold_limit(Pipe(100)) == 50
    assert instrument.hold_limit(Pipe(1)) == 1
