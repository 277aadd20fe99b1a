"""send_many / recv_many: the batch forms of the fast path."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trizmq


@pytest.mark.parametrize("endpoint", ["inproc://batch", "tcp://127.0.0.1:0"])
async def test_send_many_and_recv_many_keep_order_and_atomicity(endpoint: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(bind=endpoint) as pull:
            bound = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=bound) as push:
                messages = [[b"%d" % i, b"tail"] for i in range(5000)]
                sent: list[int] = []

                async def producer() -> None:
                    sent.append(await push.send_many(messages))

                got: list[list[bytes]] = []
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(producer)  # the queues hold less than 5000
                    while len(got) < 5000:
                        batch = await pull.recv_many(700)
                        assert 1 <= len(batch) <= 700
                        got.extend(batch)
                assert sent == [5000]
                assert got == messages


async def test_send_many_waits_where_the_pattern_says_and_stays_cancellable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with trizmq.Push(linger=0) as push:  # no peer: the first message waits
            with trio.move_on_after(1) as timer:
                await push.send_many([[b"a"], [b"b"]])
            assert timer.cancelled_caught


async def test_recv_many_checks_its_argument() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull(bind="inproc://batch-arg") as pull:
            with pytest.raises(ValueError, match="max_messages"):
                await pull.recv_many(0)
            with pytest.raises(TypeError, match="max_messages"):
                await pull.recv_many(2.5)  # type: ignore[arg-type]


async def test_single_part_types_take_one_frame_messages_in_batches() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Gather(bind="inproc://batch-g") as gather,
            trizmq.Scatter(connect="inproc://batch-g") as scatter,
        ):
            assert await scatter.send_many([[b"1"], [b"2"]]) == 2
            with pytest.raises(ValueError):
                await scatter.send_many([[b"x", b"y"]])
            assert await gather.recv_many() == [[b"1"], [b"2"]]
