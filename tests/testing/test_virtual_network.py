"""The virtual network: trizmq sockets over in-memory links, faults, virtual time."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trizmq
from trizmq.testing import SocketFactory, VirtualNetwork


async def test_push_pull_over_virtual_tcp(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(5):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:0")
        endpoint = pull.statistics()["bound"][0]
        push = await zmq_sockets(trizmq.Push, connect=endpoint)
        await push.send_multipart([b"a", b"b"])
        assert await pull.recv_multipart() == [b"a", b"b"]
        assert virtual_network.link_count(endpoint) == 1


async def test_cut_makes_the_connecter_reconnect_after_its_interval(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5555")
        push = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:5555", reconnect_ivl=2.0)
        events = push.monitor()
        await push.send(b"before")
        assert await pull.recv() == b"before"
        assert virtual_network.cut("tcp://127.0.0.1:5555") == 1
        lost_at = trio.current_time()
        async for event in events:
            if isinstance(event, trizmq.HandshakeSucceeded) and trio.current_time() > lost_at:
                break
        # reconnect_ivl 2.0 with ±10 % jitter, in virtual time
        assert 1.8 <= trio.current_time() - lost_at <= 2.2 + 0.01
        await push.send(b"after")
        assert await pull.recv() == b"after"


async def test_refused_connects_back_off_exponentially(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(600):
        async with trizmq.Push(reconnect_ivl=1.0, reconnect_ivl_max=8.0) as push:
            events = push.monitor()
            await push.connect("tcp://127.0.0.1:6000")
            intervals = []
            async for event in events:
                if isinstance(event, trizmq.ConnectRetried):
                    intervals.append(event.interval)
                    if len(intervals) == 6:
                        break
        expected = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
        for got, want in zip(intervals, expected, strict=True):
            assert want * 0.9 <= got <= want * 1.1, (intervals, expected)


async def test_heartbeat_timeout_drops_a_silent_peer(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:7000")
        push = await zmq_sockets(
            trizmq.Push,
            connect="tcp://127.0.0.1:7000",
            heartbeat_ivl=1.0,
            heartbeat_timeout=3.0,
            reconnect_ivl=0.5,
        )
        events = push.monitor()
        await push.send(b"x")
        assert await pull.recv() == b"x"
        virtual_network.stall("tcp://127.0.0.1:7000", "in")  # the PULL's bytes stop arriving
        stalled_at = trio.current_time()
        async for event in events:
            if isinstance(event, trizmq.Disconnected):
                break
        assert 3.0 <= trio.current_time() - stalled_at <= 4.01
        assert "heartbeat timeout" in caplog.text


async def test_peer_ttl_drops_a_connection_when_the_pinger_falls_silent(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:7100")
        events = pull.monitor()
        # the PUSH pings every second and asks the PULL to give up after 5 s of silence
        await zmq_sockets(
            trizmq.Push, connect="tcp://127.0.0.1:7100", heartbeat_ivl=1.0, heartbeat_ttl=5.0
        )
        async for event in events:
            if isinstance(event, trizmq.HandshakeSucceeded):
                break
        await trio.sleep(10)  # virtual: pings keep the link alive
        assert virtual_network.link_count("tcp://127.0.0.1:7100") == 1
        virtual_network.stall("tcp://127.0.0.1:7100", "out")  # the pings stop arriving
        stalled_at = trio.current_time()
        async for event in events:
            if isinstance(event, trizmq.Disconnected):
                break
        assert 4.0 <= trio.current_time() - stalled_at <= 6.01
        assert "heartbeat TTL" in caplog.text


async def test_pings_are_answered_so_a_quiet_link_survives(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(120):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:7200")
        push = await zmq_sockets(
            trizmq.Push, connect="tcp://127.0.0.1:7200", heartbeat_ivl=1.0, heartbeat_timeout=2.5
        )
        events = push.monitor()
        await push.send(b"first")
        assert await pull.recv() == b"first"
        await trio.sleep(60)  # virtual: only PING/PONG cross the link meanwhile
        await push.send(b"still here")
        assert await pull.recv() == b"still here"
        events.close()
        seen = [event async for event in events]
        assert not any(isinstance(e, trizmq.Disconnected) for e in seen), seen
