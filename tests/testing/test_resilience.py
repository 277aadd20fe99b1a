"""Behaviour under faults, in virtual time: linger, shutdown, immediate, back-pressure."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trizmq
from trizmq.testing import SocketFactory, VirtualNetwork


async def test_linger_is_honoured_to_the_millisecond(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        # nothing listens: the queued message can never be flushed
        async with trizmq.Push(connect="tcp://127.0.0.1:9000", linger=0.25) as push:
            await push.send(b"undeliverable")
            start = trio.current_time()
        assert trio.current_time() - start == 0.25


async def test_linger_zero_and_flushed_queues_close_at_once(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        async with trizmq.Push(connect="tcp://127.0.0.1:9001", linger=0) as push:
            await push.send(b"dropped")
            start = trio.current_time()
        assert trio.current_time() == start
        async with trizmq.Pull(bind="tcp://127.0.0.1:9002") as pull:
            async with trizmq.Push(connect="tcp://127.0.0.1:9002", linger=30) as push:
                await push.send(b"delivered")
                start = trio.current_time()
            assert trio.current_time() - start < 0.01  # flushed: no need to wait for linger
            assert await pull.recv() == b"delivered"


async def test_linger_flushes_what_a_slow_link_still_carries(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        async with trizmq.Pull(bind="tcp://127.0.0.1:9003") as pull:
            # one second each way: the handshake (two round trips, its greeting in
            # stages) is still under way when the Push closes, and its messages after it
            virtual_network.delay("tcp://127.0.0.1:9003", 1.0)
            async with trizmq.Push(connect="tcp://127.0.0.1:9003", linger=10) as push:
                for i in range(100):
                    await push.send(b"%d" % i)
            got = [await pull.recv() for _ in range(100)]
            assert got == [b"%d" % i for i in range(100)]


async def test_closing_during_a_stalled_handshake_never_hangs(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        async with trizmq.Pull(bind="tcp://127.0.0.1:9010", handshake_ivl=None):
            virtual_network.stall("tcp://127.0.0.1:9010")
            async with trizmq.Push(
                connect="tcp://127.0.0.1:9010", linger=1.5, handshake_ivl=None
            ) as push:
                await push.send(b"never handshaken")
                await trio.sleep(5)
                start = trio.current_time()
            assert trio.current_time() - start == 1.5


async def test_closing_during_reconnect_back_off_never_hangs(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        async with trizmq.Push(reconnect_ivl=100, linger=0) as push:
            events = push.monitor()
            await push.connect("tcp://127.0.0.1:9020")
            async for event in events:
                if isinstance(event, trizmq.ConnectRetried):
                    break
            start = trio.current_time()
        assert trio.current_time() == start


async def test_close_wakes_a_blocked_sender_with_closed_resource_error(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        outcome: list[BaseException] = []
        async with trizmq.Push(linger=0) as push:  # no peer at all: send waits

            async def blocked() -> None:
                try:
                    await push.send(b"x")
                except trio.ClosedResourceError as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(blocked)
                await trio.sleep(1)
                await push.aclose()
        assert len(outcome) == 1


async def test_cancelling_the_owner_tears_the_socket_down_at_once(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        before = trio.lowlevel.current_statistics().tasks_living
        with trio.move_on_after(3):
            async with trizmq.Push(connect="tcp://127.0.0.1:9030", linger=None) as push:
                await push.send(b"stuck forever")  # queued; linger=None would wait forever
                await trio.sleep_forever()
        assert trio.current_time() == 3
        assert trio.lowlevel.current_statistics().tasks_living == before


async def test_immediate_queues_only_to_completed_connections(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        push = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:9040", immediate=True)
        # no completed connection: the PUSH has no peer to queue to, so it waits
        with trio.move_on_after(1) as timer:
            await push.send(b"would queue without immediate")
        assert timer.cancelled_caught
        with pytest.raises(trio.WouldBlock):
            push.send_nowait(b"x")
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:9040")
        await push.send(b"after the handshake")
        assert await pull.recv() == b"after the handshake"


async def test_a_stalled_subscriber_costs_the_publisher_at_most_its_hwm(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(600):
        pub = await zmq_sockets(trizmq.Pub, bind="tcp://127.0.0.1:9050", sndhwm=100)
        fast = await zmq_sockets(trizmq.Sub, connect="tcp://127.0.0.1:9050", subscribe=b"")
        await zmq_sockets(trizmq.Sub, connect="tcp://127.0.0.1:9050", subscribe=b"", rcvhwm=10)
        # wait until both subscriptions arrived
        while pub.statistics()["peers"] < 2:
            await trio.sleep(0.01)
        while True:
            await pub.send(b"probe")
            with trio.move_on_after(0.01):
                if await fast.recv() == b"probe":
                    break
        # stall every link into the second subscriber only: the links stay ordered
        stalled = virtual_network.links[-1]
        for direction in stalled.directions("in"):
            direction.stalled = True
        payload = b"m" * 64
        for _ in range(1_000_000):
            pub.send_nowait(payload)  # PUB never blocks
        runtime = pub._runtime
        assert runtime is not None
        biggest = max(len(p.out_pipe) for p in runtime.peers)
        assert biggest <= 100
        assert pub.statistics()["dropped"] > 900_000
        # the virtual link buffers at most its capacity
        assert stalled.into.buffered <= virtual_network.capacity + 64 * 1024 + 1024


async def test_a_connecting_side_keeps_its_queue_across_a_reconnect(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:9060")
        push = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:9060", reconnect_ivl=5)
        events = push.monitor()
        await push.send(b"first")
        assert await pull.recv() == b"first"
        virtual_network.cut("tcp://127.0.0.1:9060")
        async for event in events:
            if isinstance(event, trizmq.Disconnected):
                break
        # the link is down for 5 virtual seconds: these wait in the PUSH's queue
        for i in range(10):
            await push.send(b"%d" % i)
        assert [await pull.recv() for _ in range(10)] == [b"%d" % i for i in range(10)]


async def test_a_refused_handshake_is_not_retried_in_a_tight_loop(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(600):
        await zmq_sockets(trizmq.Pub, bind="tcp://127.0.0.1:9070")  # PUSH cannot talk to PUB
        push = await zmq_sockets(trizmq.Push, reconnect_ivl=0.1)
        events = push.monitor()
        await push.connect("tcp://127.0.0.1:9070")
        waits = []
        async for event in events:
            if isinstance(event, trizmq.ConnectRetried):
                waits.append(event.interval)
                if len(waits) == 5:
                    break
        # at least 1 s, doubling (with ±10 % jitter), not reconnect_ivl's 0.1 s
        for got, want in zip(waits, [1.0, 2.0, 4.0, 8.0, 16.0], strict=True):
            assert want * 0.9 <= got <= want * 1.1, waits


async def test_a_push_whose_peers_are_all_full_waits(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:9080", rcvhwm=10)
        push = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:9080", sndhwm=10)
        await push.send(b"hello")
        assert await pull.recv() == b"hello"
        sent = 0
        payload = b"p" * 1024
        with trio.move_on_after(5) as timer:
            while True:
                await push.send(payload)  # nobody reads: queues and buffers fill, then it waits
                sent += 1
        assert timer.cancelled_caught
        # bounded: both high-water marks, a read batch, and the link's buffer, not more
        capacity_messages = virtual_network.capacity // 1024 + 1
        assert sent <= 10 + 10 + 256 + capacity_messages + 10
        got = 0
        with trio.move_on_after(1):
            while True:
                await pull.recv()
                got += 1
        assert got == sent  # nothing lost: it all arrives once the reader reads
