"""Behaviour of the socket API, trizmq talking to trizmq, over inproc, tcp and ipc
(and memory://, a test-only transport registered through the public seam).

Handshakes over tcp/ipc are awaited on socket monitors (or, for pub-sub, by probing
until a subscription took effect), never by sleeping; inproc links are made
synchronously by ``connect()``.
"""

from __future__ import annotations

import contextlib
import itertools
import socket as stdsocket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from memory_transport import registered
from trio.testing import wait_all_tasks_blocked

import trizmq

_NAMES = itertools.count()


@pytest.fixture(params=["inproc", "tcp", "ipc", "memory", "ws"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    # memory:// is a test-only transport registered through the public seam
    # (tests/memory_transport.py): every test here runs over it unchanged
    with registered(str(request.param)) as name:
        yield name


def fresh(transport: str, tmp_path: Path) -> str:
    """A bindable endpoint of ``transport`` nobody uses yet."""
    n = next(_NAMES)
    if transport == "inproc":
        return f"inproc://sockets-{n}"
    if transport == "memory":
        return f"memory://sockets-{n}"
    if transport == "ipc":
        return f"ipc://{tmp_path}/s{n}"
    if transport == "ws":
        return f"ws://127.0.0.1:0/s{n}"
    return "tcp://127.0.0.1:0"


def free_tcp_port() -> int:
    with stdsocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def handshakes(events: trizmq.Monitor, n: int) -> None:
    """Wait until ``n`` handshakes succeeded on the monitored socket."""
    seen = 0
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            seen += 1
            if seen == n:
                return
    raise AssertionError("monitor ended before the handshakes")


@asynccontextmanager
async def linked(
    binder: trizmq.Socket, connecters: list[trizmq.Socket], endpoint: str
) -> AsyncIterator[str]:
    """Enter ``binder`` and ``connecters`` (connected to it) and wait for every handshake."""
    async with binder:
        events = binder.monitor()
        resolved = await binder.bind(endpoint)
        async with _entered(connecters):
            for sock in connecters:
                await sock.connect(resolved)
            if not resolved.startswith("inproc://"):
                await handshakes(events, len(connecters))
            events.close()
            yield resolved


@asynccontextmanager
async def _entered(socks: list[trizmq.Socket]) -> AsyncIterator[None]:
    if not socks:
        yield
        return
    async with socks[0], _entered(socks[1:]):
        yield


async def assert_nothing_more(sock: trizmq.Socket) -> None:
    """Nothing further arrives (as far as a settled run can tell)."""
    await wait_all_tasks_blocked()
    with pytest.raises(trio.WouldBlock):
        sock.recv_multipart_nowait()


async def subscribed(pub: trizmq.Socket, sub: trizmq.Socket, topic: bytes) -> None:
    """Probe until ``sub`` receives ``topic`` messages from ``pub``; leave no probe behind."""
    while True:
        await pub.send(topic + b"#probe")
        with trio.move_on_after(0.02):
            assert await sub.recv() == topic + b"#probe"
            break
    await pub.send(topic + b"#end")
    while await sub.recv() != topic + b"#end":
        pass


# -- messages ------------------------------------------------------------------------------


async def test_send_recv_single_and_multipart(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            await push.send(b"one")
            assert await pull.recv() == b"one"
            assert not pull.rcvmore
            await push.send_multipart([b"a", b"", b"c" * 1000])
            assert await pull.recv_multipart() == [b"a", b"", b"c" * 1000]
            await push.send(b"")
            assert await pull.recv_multipart() == [b""]


async def test_pair_talks_both_ways(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        a = trizmq.Pair()
        async with linked(a, [b := trizmq.Pair()], fresh(transport, tmp_path)):
            await a.send_multipart([b"ping", b"1"])
            assert await b.recv_multipart() == [b"ping", b"1"]
            await b.send(b"pong")
            assert await a.recv() == b"pong"


async def test_send_more_is_atomic(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            await push.send(b"1", more=True)
            await push.send(bytearray(b"2"), more=True)
            await assert_nothing_more(pull)
            push.send_nowait(b"3", more=True)
            await assert_nothing_more(pull)
            await push.send(b"4")
            assert await pull.recv_multipart() == [b"1", b"2", b"3", b"4"]
            # the nowait form completes a message too
            push.send_nowait(b"x", more=True)
            push.send_nowait(b"y")
            assert await pull.recv_multipart() == [b"x", b"y"]


async def test_recv_frames_and_rcvmore(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            await push.send_multipart([b"a", b"b", b"c"])
            await push.send_multipart([b"d", b"e"])
            await push.send(b"f")
            assert await pull.recv() == b"a"
            assert pull.rcvmore
            assert await pull.recv() == b"b"
            assert pull.rcvmore
            assert await pull.recv() == b"c"
            assert not pull.rcvmore
            # recv_multipart after a partial recv returns the rest of that message
            assert await pull.recv() == b"d"
            assert pull.rcvmore
            assert await pull.recv_multipart() == [b"e"]
            assert not pull.rcvmore
            assert pull.recv_nowait() == b"f"
            assert not pull.rcvmore


async def test_recv_multipart_nowait_after_partial_recv(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            await push.send_multipart([b"a", b"b", b"c"])
            assert await pull.recv() == b"a"
            assert pull.recv_multipart_nowait() == [b"b", b"c"]
            with pytest.raises(trio.WouldBlock):
                pull.recv_multipart_nowait()


async def test_async_for_yields_whole_messages(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            for i in range(3):
                await push.send_multipart([b"m", str(i).encode()])
            got = []
            async for frames in pull:
                got.append(frames)
                if len(got) == 3:
                    break
            assert got == [[b"m", b"0"], [b"m", b"1"], [b"m", b"2"]]


async def test_recv_message(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            await push.send(b"only")
            await push.send_multipart([b"a", b"b"])
            msg = await pull.recv_message()
            assert isinstance(msg, trizmq.Message)
            assert msg.data == b"only" and msg.frames == [b"only"]
            msg = await pull.recv_message()
            assert msg.frames == [b"a", b"b"]
            with pytest.raises(ValueError):
                _ = msg.data


async def test_bytes_like_frames_are_copied_at_send(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pull = trizmq.Pull()
        async with linked(pull, [push := trizmq.Push()], fresh(transport, tmp_path)):
            buf = bytearray(b"abc")
            await push.send(buf)
            buf[:] = b"xyz"
            backing = bytearray(b"memory")
            view = memoryview(backing)
            await push.send_multipart([buf, view, memoryview(b"ro")])
            backing[:] = b"MEMORY"
            buf[:] = b"!!!"
            await push.send(view[1:3], more=True)
            backing[:] = b"------"
            await push.send(b"end")
            assert await pull.recv() == b"abc"
            got = await pull.recv_multipart()
            assert got == [b"xyz", b"memory", b"ro"]
            assert all(type(f) is bytes for f in got)
            assert await pull.recv_multipart() == [b"EM", b"end"]


async def test_bad_frames_raise() -> None:
    with trio.fail_after(5):
        async with trizmq.Push(connect="inproc://bad-frames") as push:
            with pytest.raises(TypeError):
                await push.send("text")
            with pytest.raises(TypeError):
                await push.send_multipart([b"ok", 42])
            with pytest.raises(TypeError):
                push.send_nowait("text")
            with pytest.raises(ValueError):
                await push.send_multipart([])
            with pytest.raises(ValueError):
                push.send_multipart_nowait([])
            with pytest.raises(ValueError):
                await push.send_multipart(iter(()))


async def test_nowait_raises_would_block(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as push, trizmq.Pull() as pull:
            await push.bind(fresh(transport, tmp_path))
            await pull.bind(fresh(transport, tmp_path))
            # a binding PUSH with no peer cannot take a message
            with pytest.raises(trio.WouldBlock):
                push.send_nowait(b"x")
            with pytest.raises(trio.WouldBlock):
                push.send_multipart_nowait([b"x", b"y"])
            # nothing to receive
            with pytest.raises(trio.WouldBlock):
                pull.recv_nowait()
            with pytest.raises(trio.WouldBlock):
                pull.recv_multipart_nowait()
            # the refused frames were not queued
            assert push.statistics()["peers"] == 0


async def test_send_nowait_more_is_kept_when_the_last_frame_would_block() -> None:
    with trio.fail_after(5):
        async with trizmq.Push(bind="inproc://nowait-more") as push:
            push.send_nowait(b"head", more=True)
            with pytest.raises(trio.WouldBlock):
                push.send_nowait(b"tail")
            async with trizmq.Pull(connect="inproc://nowait-more") as pull:
                push.send_nowait(b"tail")
                assert await pull.recv_multipart() == [b"head", b"tail"]


async def test_wrong_direction_raises() -> None:
    with trio.fail_after(5):
        async with trizmq.Push() as push, trizmq.Pull() as pull, trizmq.Sub() as sub:
            with pytest.raises(trizmq.NotSupportedError):
                await push.recv()
            with pytest.raises(trizmq.NotSupportedError):
                await pull.send(b"x")
            with pytest.raises(trizmq.NotSupportedError):
                sub.send_nowait(b"x")


# -- pipeline --------------------------------------------------------------------------------


async def test_push_round_robins_across_pulls(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Push() as push,
            trizmq.Pull() as p0,
            trizmq.Pull() as p1,
            trizmq.Pull() as p2,
        ):
            pulls = [p0, p1, p2]
            for pull in pulls:
                await push.connect(await pull.bind(fresh(transport, tmp_path)))
            for i in range(30):
                await push.send(b"%d" % i)
            shares = []
            for pull in pulls:
                shares.append([int(await pull.recv()) for _ in range(10)])
            for pull in pulls:
                await assert_nothing_more(pull)
            # strict rotation: each PULL gets every third message, in order
            assert sorted(s[0] for s in shares) == [0, 1, 2]
            for share in shares:
                assert share == list(range(share[0], 30, 3))


async def test_binding_push_round_robins_across_connected_pulls(
    transport: str, tmp_path: Path
) -> None:
    with trio.fail_after(10):
        pulls: list[trizmq.Socket] = [trizmq.Pull() for _ in range(3)]
        async with linked(push := trizmq.Push(), pulls, fresh(transport, tmp_path)):
            for i in range(60):
                await push.send(b"%d" % i)
            counts = []
            for pull in pulls:
                got = [await pull.recv() for _ in range(20)]
                counts.append(len(got))
            for pull in pulls:
                await assert_nothing_more(pull)
            assert counts == [20, 20, 20]


async def test_pull_fair_queues_pushes_inproc() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://fair") as pull,
            trizmq.Push(connect="inproc://fair") as a,
            trizmq.Push(connect="inproc://fair") as b,
            trizmq.Push(connect="inproc://fair") as c,
        ):
            for name, push in ((b"a", a), (b"b", b), (b"c", c)):
                for i in range(5):
                    await push.send_multipart([name, b"%d" % i])
            got = [await pull.recv_multipart() for _ in range(15)]
        # every round takes one message from each PUSH
        for r in range(5):
            assert sorted(m[0] for m in got[3 * r : 3 * r + 3]) == [b"a", b"b", b"c"]
            assert {m[1] for m in got[3 * r : 3 * r + 3]} == {b"%d" % r}


async def test_pull_receives_every_push(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        pushes: list[trizmq.Socket] = [trizmq.Push() for _ in range(3)]
        async with linked(pull := trizmq.Pull(), pushes, fresh(transport, tmp_path)):
            for n, push in enumerate(pushes):
                for i in range(20):
                    await push.send_multipart([b"%d" % n, b"%d" % i])
            got = [await pull.recv_multipart() for _ in range(60)]
            for n in range(3):
                # per sender, order is kept
                assert [m[1] for m in got if m[0] == b"%d" % n] == [b"%d" % i for i in range(20)]


async def test_push_without_peer_waits_and_is_cancellable(autojump_clock: Any) -> None:
    with trio.fail_after(100):
        async with trizmq.Push(bind="inproc://lonely") as push:
            start = trio.current_time()
            with trio.move_on_after(5) as scope:
                await push.send(b"lost")
            assert scope.cancelled_caught
            assert trio.current_time() - start == pytest.approx(5)
            with trio.move_on_after(5) as scope:
                await push.send_multipart([b"lost", b"too"])
            assert scope.cancelled_caught
            async with trizmq.Pull(connect="inproc://lonely") as pull:
                await push.send(b"found")
                # the cancelled sends queued nothing
                assert await pull.recv_multipart() == [b"found"]
                with pytest.raises(trio.WouldBlock):
                    pull.recv_nowait()


async def test_blocked_push_resumes_when_a_peer_arrives(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as push:
            endpoint = await push.bind(fresh(transport, tmp_path))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(push.send, b"waited")
                await wait_all_tasks_blocked()
                async with trizmq.Pull(connect=endpoint) as pull:
                    assert await pull.recv() == b"waited"


# -- pub-sub ---------------------------------------------------------------------------------


async def test_pub_never_blocks_without_subscribers(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trizmq.Pub() as pub:
            await pub.bind(fresh(transport, tmp_path))
            for i in range(5000):
                await pub.send(b"%d" % i)
                pub.send_nowait(b"x")
            await pub.send_multipart([b"a", b"b"])


async def test_pub_drops_for_a_full_subscriber(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sub = trizmq.Sub(subscribe=b"", sndhwm=2, rcvhwm=2)
        async with linked(pub := trizmq.Pub(sndhwm=2), [sub], fresh(transport, tmp_path)):
            await subscribed(pub, sub, b"")
            payload = b"x" * 10_000
            sent = 3000
            for _ in range(sent):
                await pub.send(payload)  # never waits for the subscriber that never reads
                pub.send_nowait(payload)
            assert pub.statistics()["dropped"] > 0
            await wait_all_tasks_blocked()
            received = 0
            while True:
                try:
                    sub.recv_nowait()
                except trio.WouldBlock:
                    break
                received += 1
            assert 0 < received < 2 * sent
            if transport == "inproc":
                assert received == 4  # the link's pipe: the subscriber's sndhwm + rcvhwm


async def test_sub_prefix_filtering(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sub = trizmq.Sub(subscribe=[b"a", "ü"])
        async with linked(pub := trizmq.Pub(), [sub], fresh(transport, tmp_path)):
            await subscribed(pub, sub, b"a")
            for topic in (b"b1", b"a1", b"", b"ab", b"x", "ü!".encode(), b"A"):
                await pub.send(topic)
            await pub.send_multipart([b"a-multi", b"payload"])
            await pub.send_multipart([b"b-multi", b"a"])
            assert await sub.recv() == b"a1"
            assert await sub.recv() == b"ab"
            assert await sub.recv() == "ü!".encode()
            assert await sub.recv_multipart() == [b"a-multi", b"payload"]
            await assert_nothing_more(sub)


async def test_sub_subscriptions_are_counted(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sub = trizmq.Sub(subscribe=b"m")
        async with linked(pub := trizmq.Pub(), [sub], fresh(transport, tmp_path)):
            sub.subscribe(b"t")
            sub.subscribe("t")
            await subscribed(pub, sub, b"t")
            sub.unsubscribe(b"t")
            await pub.send(b"t1")
            assert await sub.recv() == b"t1"
            sub.unsubscribe(b"t")
            await pub.send(b"t2")
            await pub.send(b"m-end")
            assert await sub.recv() == b"m-end"


async def test_sub_with_empty_subscription_gets_everything(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sub = trizmq.Sub()
        async with linked(pub := trizmq.Pub(), [sub], fresh(transport, tmp_path)):
            sub.subscribe()
            await subscribed(pub, sub, b"")
            await pub.send(b"anything")
            assert await sub.recv() == b"anything"


async def test_xpub_reports_first_subscription_once(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        endpoint = fresh(transport, tmp_path)
        async with trizmq.XPub() as xpub:
            endpoint = await xpub.bind(endpoint)
            async with trizmq.Sub(connect=endpoint, subscribe=b"topic"):
                assert await xpub.recv() == b"\x01topic"
                async with trizmq.Sub(connect=endpoint, subscribe=[b"topic", b"zz"]):
                    # the second subscriber's b"topic" is not news; its b"zz" is
                    assert await xpub.recv() == b"\x01zz"
                    await assert_nothing_more(xpub)


async def test_xpub_verbose_reports_every_subscription(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        endpoint = fresh(transport, tmp_path)
        async with trizmq.XPub(xpub_verbose=True) as xpub:
            endpoint = await xpub.bind(endpoint)
            async with trizmq.Sub(connect=endpoint, subscribe=b"topic"):
                assert await xpub.recv() == b"\x01topic"
                async with trizmq.Sub(connect=endpoint, subscribe=[b"topic", b"zz"]):
                    assert await xpub.recv() == b"\x01topic"
                    assert await xpub.recv() == b"\x01zz"


async def test_xpub_reports_cancel_when_subscriber_leaves(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        endpoint = fresh(transport, tmp_path)
        async with trizmq.XPub() as xpub:
            endpoint = await xpub.bind(endpoint)
            async with trizmq.Sub(connect=endpoint, subscribe=b"topic"):
                assert await xpub.recv() == b"\x01topic"
            assert await xpub.recv() == b"\x00topic"


async def test_xpub_reports_cancel_on_unsubscribe(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        endpoint = fresh(transport, tmp_path)
        async with trizmq.XPub() as xpub:
            endpoint = await xpub.bind(endpoint)
            async with trizmq.Sub(connect=endpoint, subscribe=b"topic") as sub:
                assert await xpub.recv() == b"\x01topic"
                sub.unsubscribe(b"topic")
                assert await xpub.recv() == b"\x00topic"


async def test_xsub_subscribes_by_message(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        xsub = trizmq.XSub()
        async with linked(xpub := trizmq.XPub(), [xsub], fresh(transport, tmp_path)):
            await xsub.send(b"\x01topic")
            assert await xpub.recv() == b"\x01topic"
            await xpub.send(b"nope")
            await xpub.send(b"topic!")
            assert await xsub.recv() == b"topic!"
            await xsub.send(b"\x00topic")
            assert await xpub.recv() == b"\x00topic"
            await xpub.send(b"topic again")
            await assert_nothing_more(xsub)


async def test_pair_takes_one_peer_only(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        first = trizmq.Pair()
        endpoint = fresh(transport, tmp_path)
        async with (
            linked(pair := trizmq.Pair(), [first], endpoint) as ep,
            trizmq.Pair(connect=ep) as intruder,
        ):
            # over tcp/ipc the intruder's own queue takes the message, over inproc
            # its link was refused outright; either way it is never delivered
            with contextlib.suppress(trio.WouldBlock):
                intruder.send_nowait(b"intruder")
            await first.send(b"hello")
            assert await pair.recv() == b"hello"
            await pair.send(b"back")
            assert await first.recv() == b"back"
            await assert_nothing_more(pair)
            await assert_nothing_more(intruder)


# -- queue lifetimes -------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["inproc", "tcp", "ipc"])
async def test_connecting_push_queues_before_the_pull_binds(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        if transport == "tcp":
            endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
        else:
            endpoint = fresh(transport, tmp_path)
        async with trizmq.Push(connect=endpoint) as push:
            for i in range(3):
                await push.send(b"%d" % i)
            async with trizmq.Pull(bind=endpoint) as pull:
                assert [await pull.recv() for _ in range(3)] == [b"0", b"1", b"2"]


async def test_binding_push_discards_a_departed_peers_queue(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trizmq.Push(sndhwm=4) as push:
            events = push.monitor()
            endpoint = await push.bind(fresh(transport, tmp_path))
            async with trizmq.Pull(connect=endpoint, rcvhwm=1, sndhwm=1):
                if transport != "inproc":
                    await handshakes(events, 1)
                payload = b"x" * 65536
                for _ in range(10_000):
                    try:
                        push.send_nowait(payload)
                    except trio.WouldBlock:
                        break
                    await trio.lowlevel.checkpoint()
                else:
                    raise AssertionError("the queues never filled")
                assert push.statistics()["queued_out"] > 0
            if transport != "inproc":
                async for event in events:
                    if isinstance(event, trizmq.Disconnected):
                        break
            # the departed peer's queue is gone with it
            assert push.statistics()["queued_out"] == 0
            assert push.statistics()["peers"] == 0
            async with trizmq.Pull(connect=endpoint) as pull:
                if transport != "inproc":
                    await handshakes(events, 1)
                await push.send(b"new")
                assert await pull.recv() == b"new"
            events.close()


async def test_sndhwm_bounds_a_connecting_queue(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        if transport == "tcp":
            endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
        elif transport == "ws":
            endpoint = f"ws://127.0.0.1:{free_tcp_port()}/nobody"
        else:
            endpoint = fresh(transport, tmp_path)
        async with trizmq.Push(connect=endpoint, sndhwm=3, rcvhwm=2, linger=0) as push:
            # inproc sizes a link by both of the connecter's marks, as libzmq does
            bound = 5 if transport == "inproc" else 3
            for i in range(bound):
                push.send_nowait(b"%d" % i)
            with pytest.raises(trio.WouldBlock):
                push.send_nowait(b"over")
            (peer,) = push._runtime.peers  # type: ignore[union-attr]
            assert peer.out_pipe.statistics()["queued"] == bound
            assert peer.out_pipe.statistics()["hwm"] == bound
            stats = push.statistics()
            assert stats["connected"] == [endpoint]
            assert stats["live_peers"] == 0
            assert stats["queued_out"] == bound and stats["queued_in"] == 0


async def test_rcvhwm_bounds_the_receiving_queue() -> None:
    with trio.fail_after(10):
        payload = b"x" * 100_000
        async with trizmq.Pull(rcvhwm=4) as pull:
            events = pull.monitor()
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(connect=endpoint, sndhwm=4, linger=0) as push:
                await handshakes(events, 1)
                sent = 0
                while True:
                    with trio.move_on_after(0.5) as scope:
                        await push.send(payload)
                    if scope.cancelled_caught:
                        break
                    sent += 1
                    assert sent < 2000, "the PUSH never blocked"
                in_pipe = next(iter(pull._runtime.peers)).in_pipe  # type: ignore[union-attr]
                queued = in_pipe.statistics()["queued"]
                assert pull.statistics()["queued_in"] == queued
                assert push.statistics()["queued_out"] <= 4
                # the reader stops at the mark; one read may overshoot by what it held
                assert 4 <= queued <= 4 + 262_144 // len(payload) + 1
                assert sent > queued
                got = 0
                while got < sent:
                    assert await pull.recv() == payload
                    got += 1
            events.close()


async def test_xpub_reports_cancel_when_the_last_holder_leaves(
    transport: str, tmp_path: Path
) -> None:
    with trio.fail_after(10):
        endpoint = fresh(transport, tmp_path)
        async with trizmq.XPub() as xpub:
            endpoint = await xpub.bind(endpoint)
            async with trizmq.Sub(connect=endpoint, subscribe=b"topic"):
                assert await xpub.recv() == b"\x01topic"
                async with trizmq.Sub(connect=endpoint, subscribe=[b"topic", b"zz"]):
                    assert await xpub.recv() == b"\x01zz"
                # b"topic" is still held by the first subscriber
                assert await xpub.recv() == b"\x00zz"
                await assert_nothing_more(xpub)
            assert await xpub.recv() == b"\x00topic"


async def test_pub_fans_out_one_message_to_stream_inproc_and_curve_subscribers() -> None:
    """Several subscribers share one encoding; inproc ones get their own lists; CURVE encrypts."""
    with trio.fail_after(10):
        public, secret = trizmq.curve_keypair()
        client_public, client_secret = trizmq.curve_keypair()
        async with (
            trizmq.Pub(bind=["tcp://127.0.0.1:0", "inproc://fanout"]) as plain_pub,
            trizmq.Pub(
                bind="tcp://127.0.0.1:0", security=trizmq.CurveServer(secret_key=secret)
            ) as curve_pub,
        ):
            tcp_endpoint = next(e for e in plain_pub.statistics()["bound"] if e.startswith("tcp"))
            curve_endpoint = curve_pub.statistics()["bound"][0]
            curve = trizmq.CurveClient(
                server_key=public, public_key=client_public, secret_key=client_secret
            )
            async with (
                trizmq.Sub(connect=tcp_endpoint, subscribe=b"") as s1,
                trizmq.Sub(connect=tcp_endpoint, subscribe=b"") as s2,
                trizmq.Sub(connect="inproc://fanout", subscribe=b"") as s3,
                trizmq.Sub(connect="inproc://fanout", subscribe=b"") as s4,
                trizmq.Sub(connect=curve_endpoint, subscribe=b"", security=curve) as s5,
                trizmq.Sub(connect=curve_endpoint, subscribe=b"", security=curve) as s6,
            ):
                subs = [s1, s2, s3, s4]
                ready: set[int] = set()
                while len(ready) < 6:  # until every subscription has reached its PUB
                    await plain_pub.send_multipart([b"probe", b"x"])
                    await curve_pub.send_multipart([b"probe", b"x"])
                    with trio.move_on_after(0.02):
                        for index, sub in enumerate([*subs, s5, s6]):
                            if index not in ready:
                                await sub.recv_multipart()
                                ready.add(index)
                for i in range(3):
                    await plain_pub.send_multipart([b"topic", b"%d" % i])
                    await curve_pub.send_multipart([b"topic", b"%d" % i])
                for sub in [*subs, s5, s6]:
                    got = []
                    while len(got) < 3:
                        frames = await sub.recv_multipart()
                        if frames[0] == b"topic":
                            got.append(frames)
                    assert got == [[b"topic", b"%d" % i] for i in range(3)]
