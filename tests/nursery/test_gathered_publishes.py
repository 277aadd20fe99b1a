"""The runtime's side of a publisher's gathered messages (``FastPath.gather``): what a
PUB is given one ``send`` at a time for its subscribers (one or several) goes out as batches,
routed just before trio's run loop next waits, and reaches libzmq subscribers whole
and in order, on tcp and ipc, whichever side binds. Counted, never timed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import zmq

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.socket_state import FastPath
from trizmq.patterns.sockets.pubsub import PubStrategy

pytestmark = pytest.mark.fastpath


def count_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the runs the publisher queued."""
    sizes: list[int] = []
    real = PubStrategy._queue_run

    def counting(self: PubStrategy, queues: Any, msgs: Any) -> None:
        sizes.append(len(msgs))
        real(self, queues, msgs)

    monkeypatch.setattr(PubStrategy, "_queue_run", counting)
    return sizes


def endpoint(transport: str, tmp_path: Path) -> str:
    return "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp_path / 'pub.ipc'}"


@asynccontextmanager
async def trizmq_subscribers(
    count: int, **pub_options: Any
) -> AsyncIterator[tuple[Any, list[Any]]]:
    """An XPUB over tcp and ``count`` trizmq subscribers of everything, subscribed."""
    async with trizmq.XPub(bind="tcp://127.0.0.1:0", xpub_verbose=True, **pub_options) as pub:
        bound = pub.statistics()["bound"][0]
        async with AsyncExitStack() as stack:
            subs = [
                await stack.enter_async_context(trizmq.Sub(connect=bound, subscribe=b""))
                for _ in range(count)
            ]
            for _ in subs:
                assert await pub.recv() == b"\x01"
            yield pub, subs


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("pub_binds", [True, False])
@pytest.mark.parametrize("subscribers", [1, 3])
async def test_one_at_a_time_publishes_reach_libzmq_subscribers_as_batches(
    transport: str,
    pub_binds: bool,
    subscribers: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = count_runs(monkeypatch)
    count = 1000
    ctx = zmq.Context()
    subs = [ctx.socket(zmq.SUB) for _ in range(subscribers)]
    try:
        async with trizmq.XPub(sndhwm=0, xpub_verbose=True) as pub:
            for i, sub in enumerate(subs):
                sub.rcvtimeo = 10_000  # the threads below are bounded too
                sub.rcvhwm = 0
                sub.subscribe(b"")
                if pub_binds:
                    if i == 0:
                        bound = await pub.bind(endpoint(transport, tmp_path))
                    sub.connect(bound)
                else:
                    address = "tcp://127.0.0.1:*" if transport == "tcp" else f"ipc://{tmp_path}/s{i}"
                    sub.bind(address)
                    await pub.connect(sub.getsockopt_string(zmq.LAST_ENDPOINT))
            sent = [b"%d" % i for i in range(count)]
            got: list[list[bytes]] = []

            async def receive(sub: Any) -> None:
                # receiving also makes a bound libzmq SUB take its new connection
                # and send its subscription on it
                got.append(
                    await trio.to_thread.run_sync(lambda: [sub.recv() for _ in range(count)])
                )

            async with trio.open_nursery() as nursery:
                for sub in subs:
                    nursery.start_soon(receive, sub)
                for _ in subs:
                    assert await pub.recv() == b"\x01"
                for body in sent:
                    await pub.send(body)
            assert got == [sent] * subscribers
            assert pub.statistics()["dropped"] == 0
    finally:
        for sub in subs:
            sub.close(linger=0)
        ctx.term()
    # gathered: far fewer runs than messages, all of them queued
    assert sum(runs) == count
    assert len(runs) < count // 10


@pytest.mark.parametrize("subscribers", [1, 2])
async def test_a_lone_publish_goes_out_before_the_loop_waits(subscribers: int) -> None:
    # nothing else is sent: the message is routed as the loop is about to wait for
    # the subscribers' input
    async with trizmq_subscribers(subscribers) as (pub, subs):
        await pub.send(b"only")
        for sub in subs:
            assert await sub.recv() == b"only"


async def test_gathered_and_batched_publishes_keep_their_order() -> None:
    async with trizmq_subscribers(2) as (pub, subs):
        await pub.send(b"a")
        await pub.send(b"b")
        assert await pub.send_many([[b"c"], [b"d"]]) == 2
        await pub.send(b"e")
        pub.send_nowait(b"f")
        for sub in subs:
            assert [await sub.recv() for _ in range(6)] == [b"a", b"b", b"c", b"d", b"e", b"f"]


async def test_a_close_lingers_with_the_gathered_messages() -> None:
    sent = [b"%d" % i for i in range(300)]
    async with trizmq_subscribers(2) as (pub, subs):
        received: list[list[bytes]] = [[], []]

        async def receive(i: int) -> None:
            while len(received[i]) < len(sent):
                received[i].append(await subs[i].recv())

        async with trio.open_nursery() as nursery:
            for i in range(2):
                nursery.start_soon(receive, i)
            await trio.testing.wait_all_tasks_blocked()
            for body in sent:
                pub.send_nowait(body)  # no yield: all of them still gathered or queued
            await pub.aclose()
    assert received == [sent, sent]


async def test_the_statistics_count_what_the_marks_dropped_at_once() -> None:
    async with trizmq_subscribers(2, sndhwm=10) as (pub, _):
        for i in range(50):
            pub.send_nowait(b"%d" % i)  # no yield: nothing is written meanwhile
        stats = pub.statistics()
        assert stats["dropped"] == 2 * 40
        assert stats["queued_out"] == 2 * 10


async def test_without_the_fast_path_nothing_gathers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", False)
    async with trizmq_subscribers(2) as (pub, subs):
        assert pub._strategy.gather is None
        await pub.send(b"x")
        assert pub._strategy.gathered == []
        for sub in subs:
            assert await sub.recv() == b"x"


async def test_gathered_publishes_to_curve_subscribers(monkeypatch: pytest.MonkeyPatch) -> None:
    # an encrypted connection encodes (boxes) each message itself: gathered runs
    # reach each subscriber whole and in order all the same
    runs = count_runs(monkeypatch)
    public, secret = trizmq.curve_keypair()
    sent = [b"%d" % i for i in range(300)]
    async with trizmq.XPub(
        bind="tcp://127.0.0.1:0", xpub_verbose=True, security=trizmq.CurveServer(secret_key=secret)
    ) as pub:
        bound = pub.statistics()["bound"][0]
        async with AsyncExitStack() as stack:
            subs = []
            for _ in range(2):
                client_public, client_secret = trizmq.curve_keypair()
                security = trizmq.CurveClient(
                    server_key=public, public_key=client_public, secret_key=client_secret
                )
                subs.append(
                    await stack.enter_async_context(
                        trizmq.Sub(connect=bound, subscribe=b"", security=security)
                    )
                )
            for _ in subs:
                assert await pub.recv() == b"\x01"
            for body in sent:
                await pub.send(body)
            for sub in subs:
                assert [await sub.recv() for _ in sent] == sent
    assert sum(runs) == len(sent) and len(runs) < len(sent) // 10


async def test_gathered_publishes_over_websocket(monkeypatch: pytest.MonkeyPatch) -> None:
    # ws frames every message in its own WebSocket frame: no shared encoding either
    runs = count_runs(monkeypatch)
    sent = [b"%d" % i for i in range(300)]
    async with trizmq.XPub(bind="ws://127.0.0.1:0/feed", xpub_verbose=True) as pub:
        bound = pub.statistics()["bound"][0]
        async with trizmq.Sub(connect=bound, subscribe=b"") as a, trizmq.Sub(
            connect=bound, subscribe=b""
        ) as b:
            for _ in range(2):
                assert await pub.recv() == b"\x01"
            for body in sent:
                await pub.send(body)
            for sub in (a, b):
                assert [await sub.recv() for _ in sent] == sent
    assert sum(runs) == len(sent) and len(runs) < len(sent) // 10


async def test_a_gathering_send_skips_the_write_through_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # once a message is gathered the sends of the pass only gather: none of them
    # routes through FastPath.route (nothing to write through), until the gathered
    # run is routed and the socket may write through again
    routed: list[int] = []
    real = FastPath.route

    def counting(self: Any, send: Any, msg: Any) -> bool:
        routed.append(1)
        return real(self, send, msg)

    monkeypatch.setattr(FastPath, "route", counting)
    async with trizmq_subscribers(1) as (pub, subs):
        fast = pub._fast
        await trio.sleep(0)  # the writer parks: write-through is armed
        assert fast.write_through_ready
        for i in range(10):
            await pub.send(b"%d" % i)
        assert len(routed) == 1
        assert not fast.write_through_ready and len(pub._strategy.gathered) == 10
        assert [await subs[0].recv() for _ in range(10)] == [b"%d" % i for i in range(10)]
        assert pub._strategy.gathered == []
        assert fast.write_through_ready == (fast.write_through_allowed and fast.idle_writers > 0)
