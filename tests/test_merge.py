"""``trizmq.merge``: one loop over the messages of several sockets, fair, with
nothing buffered and nothing lost when the loop is cancelled."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trizmq


async def test_messages_of_several_sockets_tagged_with_their_socket() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://m-a") as a,
            trizmq.Sub(bind="inproc://m-b", subscribe=b"") as b,
            trizmq.Push(connect="inproc://m-a") as to_a,
            trizmq.Pub(connect="inproc://m-b") as to_b,
        ):
            await to_a.send_multipart([b"job", b"1"])
            await to_b.send(b"tick")
            got = []
            async for sock, frames in trizmq.merge(a, b):
                got.append((sock, frames))
                if len(got) == 2:
                    break
            assert sorted(got, key=lambda g: g[1]) == [(a, [b"job", b"1"]), (b, [b"tick"])]
            # a message that arrives while the loop waits ends the wait
            async with trio.open_nursery() as nursery:
                nursery.start_soon(to_b.send, b"later")
                sock, frames = await trizmq.merge(a, b).__anext__()
            assert (sock, frames) == (b, [b"later"])


async def test_a_busy_socket_does_not_starve_a_quiet_one() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://m-busy") as busy,
            trizmq.Pull(bind="inproc://m-quiet") as quiet,
            trizmq.Push(connect="inproc://m-busy") as to_busy,
            trizmq.Push(connect="inproc://m-quiet") as to_quiet,
        ):
            for i in range(100):
                await to_busy.send(b"%d" % i)
            for i in range(3):
                await to_quiet.send(b"q%d" % i)
            order = []
            merged = trizmq.merge(busy, quiet)
            for _ in range(6):
                sock, _frames = await merged.__anext__()
                order.append("busy" if sock is busy else "quiet")
            assert order == ["busy", "quiet"] * 3


async def test_nothing_is_taken_before_it_is_asked_for() -> None:
    """The loop holds no queue of its own: unread messages stay in the socket, under
    its HWM, pushing back on the sender."""
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://m-bp", rcvhwm=5) as pull,
            trizmq.Push(connect="inproc://m-bp", sndhwm=5) as push,
        ):
            merged = trizmq.merge(pull)
            sent = 0
            while True:  # fill the link: as many as both marks allow
                try:
                    push.send_nowait(b"%d" % sent)
                except trio.WouldBlock:
                    break
                sent += 1
            assert sent >= 5
            assert (await merged.__anext__())[1] == [b"0"]
            push.send_nowait(b"again")  # one read made room for one
            with pytest.raises(trio.WouldBlock):
                push.send_nowait(b"over")


async def test_cancelling_a_wait_loses_no_message() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://m-c1") as one,
            trizmq.Pull(bind="inproc://m-c2") as two,
            trizmq.Push(connect="inproc://m-c1") as to_one,
            trizmq.Push(connect="inproc://m-c2") as to_two,
        ):
            merged = trizmq.merge(one, two)
            for _ in range(20):
                with trio.move_on_after(0.001):
                    await merged.__anext__()  # nothing there yet: cancelled while waiting
            # both messages arrive in the same scheduling round: one is returned, the
            # other kept for the next call, even if that call is cancelled before it
            async with trio.open_nursery() as nursery:
                nursery.start_soon(to_one.send, b"first")
                nursery.start_soon(to_two.send, b"second")
                first = await merged.__anext__()
            with trio.CancelScope() as scope:
                scope.cancel()
                with pytest.raises(trio.Cancelled):
                    await merged.__anext__()
            second = await merged.__anext__()
            assert sorted([first[1], second[1]]) == [[b"first"], [b"second"]]


async def test_closed_sockets_drop_out_and_the_loop_ends() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull(bind="inproc://m-e") as a, trizmq.Pull() as b:
            got = []

            async def close_them() -> None:
                await trio.testing.wait_all_tasks_blocked()
                await a.aclose()
                await b.aclose()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(close_them)
                async for item in trizmq.merge(a, b):
                    got.append(item)
            assert got == []


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="at least one socket"):
        trizmq.merge()
    with pytest.raises(trizmq.NotSupportedError, match="PUSH socket cannot receive"):
        trizmq.merge(trizmq.Push())
    with pytest.raises(TypeError, match="not str"):
        trizmq.merge("tcp://x")  # type: ignore[arg-type]
    pull = trizmq.Pull()
    with pytest.raises(TypeError, match="once"):
        trizmq.merge(pull, pull)
