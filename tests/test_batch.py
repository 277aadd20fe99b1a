"""send_many / recv_many: the batch forms of the fast path."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.write_through import RawOutput


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


async def test_recv_many_shares_a_batch_among_busy_peers_each_in_order() -> None:
    """Three peers with messages waiting: one batch draws on all of them, and each
    peer's messages come in the order it sent them."""
    with trio.fail_after(10):
        async with trizmq.Pull(bind="inproc://batch-fair", rcvhwm=0) as pull:
            pushes = [trizmq.Push(connect="inproc://batch-fair") for _ in range(3)]
            async with pushes[0], pushes[1], pushes[2]:
                for n, push in enumerate(pushes):
                    await push.send_many([[b"%d" % n, b"%d" % i] for i in range(300)])
                first = await pull.recv_many(90)
                assert len(first) == 90
                assert {msg[0] for msg in first} == {b"0", b"1", b"2"}
                rest: list[list[bytes]] = []
                while len(first) + len(rest) < 900:
                    rest += await pull.recv_many(1000)
                for n in range(3):
                    mine = [msg[1] for msg in first + rest if msg[0] == b"%d" % n]
                    assert mine == [b"%d" % i for i in range(300)]


@pytest.mark.parametrize("endpoint", ["inproc://batch-router", "tcp://127.0.0.1:0"])
async def test_router_recv_many_names_each_message_s_peer(endpoint: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Router(bind=endpoint, rcvhwm=0) as router:
            bound = router.statistics()["bound"][0]
            dealers = [trizmq.Dealer(connect=bound, routing_id=b"d%d" % n) for n in range(2)]
            async with dealers[0], dealers[1]:
                for dealer in dealers:
                    await dealer.send_many([[b"%d" % i] for i in range(200)])
                got: list[list[bytes]] = []
                while len(got) < 400:
                    got += await router.recv_many(64)
                for n in range(2):
                    mine = [msg[1] for msg in got if msg[0] == b"d%d" % n]
                    assert mine == [b"%d" % i for i in range(200)]
                assert all(len(msg) == 2 for msg in got)


async def test_send_many_sends_the_messages_before_a_bad_one() -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://batch-bad") as pull,
            trizmq.Push(connect="inproc://batch-bad") as push,
        ):
            with pytest.raises(ValueError):
                await push.send_many([[b"1"], [b"2"], [], [b"4"]])
            assert await pull.recv_many() == [[b"1"], [b"2"]]


async def test_a_message_list_sent_is_the_senders_to_reuse() -> None:
    """Over inproc the receiver gets message objects, not bytes: the one-frame lists a
    sender passes (and may reuse, or pass twice) are copied, never handed over."""
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="inproc://batch-reuse") as pull,
            trizmq.Push(connect="inproc://batch-reuse") as push,
        ):
            one = [b"a"]
            await push.send_many([one, one])
            await push.send_multipart(one)
            got = await pull.recv_many()
            while len(got) < 3:
                got += await pull.recv_many()
            assert got == [[b"a"], [b"a"], [b"a"]]
            assert all(msg is not one for msg in got)
            assert got[0] is not got[1]
            got[0].append(b"mutated")
            one[0] = b"reused"
            await push.send_many([one])
            assert await pull.recv_many() == [[b"reused"]]
            assert got[1:] == [[b"a"], [b"a"]]


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_pub_send_many_reaches_every_subscriber_past_a_muted_one(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch published to three subscribers, one of which reads nothing: the
    other two get every message in order; the muted one's queue stops at its mark
    and the rest is dropped for it alone. Over tcp (fast path), the batches are
    held back and written as their shared buffers (RawOutput.flush), whole while the
    kernel takes them and in part once the muted one's buffers are full."""
    runs = {True: 0, False: 0}
    real = RawOutput._write_runs

    def counting(output: RawOutput) -> bool:
        whole = real(output)
        runs[whole] += 1
        return whole

    monkeypatch.setattr(RawOutput, "_write_runs", counting)
    endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else "inproc://batch-pub"
    with trio.fail_after(20):
        # an XPUB (a PUB that hands subscriptions to the application): the test
        # awaits the three subscriptions before it publishes
        async with trizmq.XPub(bind=endpoint, sndhwm=50, xpub_verbose=True) as pub:
            bound = pub.statistics()["bound"][0]
            # the muted one's queue holds one message: its reader stops, and (tcp) the
            # kernel's buffers, far smaller than 1000 messages of 16 KiB, fill up
            # (an inproc link is sized by the connecting side's marks, both of them)
            subs = [
                trizmq.Sub(connect=bound, subscribe=b"", rcvhwm=hwm, sndhwm=hwm)
                for hwm in (0, 0, 1)
            ]
            async with subs[0], subs[1], subs[2]:
                for _ in subs:
                    assert await pub.recv() == b"\x01"
                sent = 0
                for round_ in range(100):
                    batch = [[b"%d" % (round_ * 10 + i) + bytes(16_384)] for i in range(10)]
                    sent += await pub.send_many(batch)
                    for sub in subs[:2]:
                        got = []
                        while len(got) < 10:
                            got += await sub.recv_many(10)
                        assert got == batch
                assert sent == 1000
                assert pub.statistics()["dropped"] > 0  # the muted one's, only
    if transport == "tcp" and fastpath.ENABLED:
        assert runs[True] > 0 and runs[False] > 0


@pytest.mark.parametrize("batch", [21, 256])
@pytest.mark.parametrize("peer", ["libzmq", "trizmq"])
async def test_send_many_of_more_than_the_mark_goes_on_as_the_peer_reads(
    peer: str, batch: int
) -> None:
    """A PUSH whose ``sndhwm`` (20) is below its batches, to a peer that reads in its
    own time: every batch goes out whole. (A batch that filled the queue and wrote it
    through in the same pass used to park with nothing left to wake it: 20 to 40
    messages went, then the sender waited for good.)"""
    import zmq

    total = 20 * batch
    messages = [[b"%d" % i] for i in range(total)]
    with trio.fail_after(60):
        async with trizmq.Push(bind="tcp://127.0.0.1:0", sndhwm=20) as push:
            endpoint = push.statistics()["bound"][0]
            got: list[bytes] = []

            async def send_all() -> None:
                for start in range(0, total, batch):
                    assert await push.send_many(messages[start : start + batch]) == batch

            if peer == "libzmq":
                ctx = zmq.Context()
                pull = ctx.socket(zmq.PULL)
                pull.rcvhwm = 10
                pull.connect(endpoint)
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(send_all)
                        while len(got) < total:
                            try:
                                got.append(pull.recv(zmq.NOBLOCK))
                            except zmq.Again:
                                await trio.sleep(0.001)  # pyzmq's socket has no trio wait
                finally:
                    pull.close(linger=0)
                    ctx.term()
            else:
                async with (
                    trizmq.Pull(connect=endpoint, rcvhwm=10) as pull_tz,
                    trio.open_nursery() as nursery,
                ):
                    nursery.start_soon(send_all)
                    while len(got) < total:
                        got.append(await pull_tz.recv())
                        if len(got) % 7 == 0:
                            await trio.sleep(0.001)  # a reader slower than the sender
            assert got == [m[0] for m in messages]
