"""Corks: a publisher's batches held back for idle connections, so that one system call
writes several (FastPath.route_batch, Revival). Counted, never timed: each test says
which rule took a cork off, with trio's clock stopped where the time rule must not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath import CORK_ITEMS, RawOutput

pytestmark = pytest.mark.skipif(not fastpath.ENABLED, reason="corks are the fast path's")


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


def count_flushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes, in messages, of the queues the corks' flushes met."""
    sizes: list[int] = []
    real = RawOutput._write_runs

    def counting(output: RawOutput) -> bool:
        sizes.append(len(output._pipe._items))
        return real(output)

    monkeypatch.setattr(RawOutput, "_write_runs", counting)
    return sizes


async def test_batches_published_in_every_pass_share_a_write(
    mock_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # trio's clock stands still (CORK_TIME never passes) and the publisher publishes
    # every other pass: only CORK_ITEMS takes the corks off while it publishes
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
    # one flush a connection per CORK_ITEMS messages, and the last ones as it went
    # idle, where a write a batch made 40
    assert 2 * batches * 64 // CORK_ITEMS <= len(flushes) <= 2 * (batches * 64 // CORK_ITEMS + 1)
    assert max(flushes) >= CORK_ITEMS


async def test_a_cork_comes_off_after_two_passes_without_publishing(
    mock_clock: trio.testing.MockClock,
) -> None:
    # (two subscribers: a batch for one subscriber of everything is queued as plain
    # messages and written at once, not corked)
    # a publisher that publishes once while another task keeps the run loop busy
    # (it never waits for I/O, and trio's clock stands still): the subscriber gets
    # the batch within a few passes of the publisher going quiet
    async with publisher_and_subscribers(2) as (pub, (sub, _)):
        passes = 0
        received: list[list[bytes]] = []

        async def receive() -> None:
            received.extend(await sub.recv_many())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            await trio.testing.wait_all_tasks_blocked()
            await pub.send_many([[b"one"], [b"two"]])
            while not received:
                passes += 1
                assert passes < 1000, "the cork stayed on"
                await trio.sleep(0)
        assert received == [[b"one"], [b"two"]]
        assert passes < 10


async def test_a_cork_comes_off_after_cork_time_while_publishing(
    mock_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one message a batch, in every other pass, never CORK_ITEMS of them: the clock
    # moving on by CORK_TIME takes the cork off
    flushes = count_flushes(monkeypatch)
    async with publisher_and_subscribers(2) as (pub, (sub, _)):
        received: list[list[bytes]] = []

        async def receive() -> None:
            received.extend(await sub.recv_many())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            await trio.testing.wait_all_tasks_blocked()
            sent = 0
            for _ in range(20):
                await pub.send_many([[b"%d" % sent]])
                sent += 1
                await trio.sleep(0)
            assert not received and not flushes  # corked all along
            mock_clock.jump(fastpath.CORK_TIME)
            while not received:
                assert sent < CORK_ITEMS // 2, "the cork stayed on"
                await pub.send_many([[b"%d" % sent]])
                sent += 1
                await trio.sleep(0)
        assert received[0] == [b"0"]
        assert flushes and flushes[0] < CORK_ITEMS
