"""send() and recv() notice cancellation at every call, on the fast path too.

On the fast path they make trio's cancellation test directly instead of awaiting
``trio.lowlevel.checkpoint_if_cancelled()`` when the installed trio has the fields
it needs (probed once, in ``trizmq.nursery.fastpath.trio_probe``); otherwise they
await that function. Both ways must behave the same, down to trio's count of cancel
points.
"""

from __future__ import annotations

import pytest
import trio

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath import trio_probe


async def test_installed_trio_gets_the_fast_check() -> None:
    """If this fails, trio's internals moved: the public function is in use (still
    correct, but inproc messages cost about a third more). Update the probe."""
    with trio.fail_after(10):
        async with trizmq.Pair(bind="inproc://probe"):
            pass
    if fastpath.ENABLED:
        assert trio_probe.cancel_pending() is not None


@pytest.fixture(params=[True, False], ids=["fast-check", "public-check"])
def check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(trio_probe, "_PROBED", request.param)
    return bool(request.param)


async def test_both_checks_count_a_cancel_point(check: bool) -> None:
    """trio counts the cancel points a task passes (``trio.testing`` reads the
    count); the inlined check counts each send and receive as trio's own does."""
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://points") as pull,
            trizmq.Push(connect="inproc://points") as push,
        ):
            task = trio.lowlevel.current_task()
            before = task._cancel_points
            await push.send(b"x")
            assert task._cancel_points == before + 1
            await pull.recv()
            assert task._cancel_points == before + 2


async def test_cancelled_send_sends_nothing(check: bool) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://c1") as pull,
            trizmq.Push(connect="inproc://c1") as push,
        ):
            for _ in range(3):
                with trio.CancelScope() as scope:
                    scope.cancel()
                    await push.send(b"never")
                assert scope.cancelled_caught
            await push.send(b"after")
            assert await pull.recv() == b"after"
            assert pull.statistics()["queued_in"] == 0


async def test_cancelled_recv_takes_nothing(check: bool) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://c2") as pull,
            trizmq.Push(connect="inproc://c2") as push,
        ):
            await push.send(b"kept")
            for _ in range(3):
                with trio.CancelScope() as scope:
                    scope.cancel()
                    await pull.recv()
                assert scope.cancelled_caught
            assert await pull.recv() == b"kept"


async def test_deadline_in_a_send_loop_that_never_waits(check: bool) -> None:
    """A loop of sends into an unbounded pipe stops at its deadline: the check runs
    at every call, and the loop yields, so the clock is read."""
    sent = 0
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://c3", rcvhwm=0) as pull,
            trizmq.Push(connect="inproc://c3", sndhwm=0) as push,
        ):
            with trio.move_on_after(0.05) as scope:
                while True:
                    await push.send(b"x")
                    sent += 1
            assert scope.cancelled_caught
            assert pull.statistics()["queued_in"] == sent
