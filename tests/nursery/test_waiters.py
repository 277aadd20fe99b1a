"""Waiters: park until unpark_all, in order; cancellation leaves nothing behind."""

from __future__ import annotations

import trio
import trio.testing

from trizmq.nursery.waiters import Waiters


async def test_unpark_all_wakes_every_task_in_order() -> None:
    waiters = Waiters()
    woke: list[int] = []

    async def wait(i: int) -> None:
        await waiters.park()
        woke.append(i)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for i in range(5):
                nursery.start_soon(wait, i)
            await trio.testing.wait_all_tasks_blocked()
            assert len(waiters) == 5 and waiters
            waiters.unpark_all()
            assert not waiters
    assert sorted(woke) == list(range(5))


async def test_cancelled_waiter_is_removed_and_not_woken() -> None:
    waiters = Waiters()
    with trio.fail_after(5):
        with trio.move_on_after(0.01) as scope:
            await waiters.park()
        assert scope.cancelled_caught
        assert len(waiters) == 0
        waiters.unpark_all()  # nothing to wake, nothing breaks


async def test_unpark_all_with_nobody_parked_is_a_no_op() -> None:
    waiters = Waiters()
    waiters.unpark_all()
    assert not waiters
