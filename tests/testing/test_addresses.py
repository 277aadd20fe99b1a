"""Addresses on the virtual network behave as on one machine, and faults take any spelling."""

from __future__ import annotations

import errno

import pytest
import trio
import trio.testing

import trizmq
from trizmq._endpoint import parse_endpoint
from trizmq.testing import SocketFactory, VirtualNetwork


async def roundtrip(push: trizmq.Push, pull: trizmq.Pull, payload: bytes) -> None:
    await push.send(payload)
    assert await pull.recv() == payload


@pytest.mark.parametrize("bind", ["tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://[::]:5555"])
@pytest.mark.parametrize("connect", ["tcp://127.0.0.1:5555", "tcp://localhost:5555"])
async def test_a_wildcard_bind_is_reached_by_loopback_and_localhost(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
    bind: str,
    connect: str,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind=bind)
        push = await zmq_sockets(trizmq.Push, connect=connect)
        await roundtrip(push, pull, b"reached")
        assert virtual_network.link_count() == 1


@pytest.mark.parametrize(
    ("bind", "connect", "bound"),
    [
        ("tcp://127.0.0.1:5556", "tcp://localhost:5556", "tcp://127.0.0.1:5556"),
        ("tcp://localhost:5556", "tcp://127.0.0.1:5556", "tcp://127.0.0.1:5556"),
        ("tcp://LocalHost:5556", "tcp://localhost:5556", "tcp://127.0.0.1:5556"),
        ("tcp://[::1]:5556", "tcp://[0:0::1]:5556", "tcp://[::1]:5556"),
    ],
)
async def test_localhost_is_the_loopback_address(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
    bind: str,
    connect: str,
    bound: str,
) -> None:
    with trio.fail_after(60):
        pull = await zmq_sockets(trizmq.Pull, bind=bind)
        assert pull.statistics()["bound"] == [bound]
        push = await zmq_sockets(trizmq.Push, connect=connect)
        await roundtrip(push, pull, b"loopback")


async def test_every_spelling_of_a_listener_names_it_in_every_fault(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    spellings = [
        "tcp://127.0.0.1:5557",
        "tcp://localhost:5557",
        "tcp://*:5557",
        "tcp://0.0.0.0:5557",
    ]
    with trio.fail_after(600):
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://*:5557")
        push = await zmq_sockets(
            trizmq.Push, connect="tcp://127.0.0.1:5557", reconnect_ivl=1.0, linger=0
        )
        events = push.monitor()
        await roundtrip(push, pull, b"first")
        for spelling in spellings:
            assert virtual_network.link_count(spelling) == 1
        assert virtual_network.link_count("tcp://127.0.0.1:5558") == 0
        assert virtual_network.link_count("tcp://10.0.0.1:5557") == 1  # a wildcard takes all

        for stall, resume in zip(spellings, reversed(spellings), strict=True):
            virtual_network.stall(stall)
            await push.send(b"held")
            with trio.move_on_after(5) as timer:
                await pull.recv()
            assert timer.cancelled_caught, f"stall({stall!r}) let a message through"
            virtual_network.resume(resume)
            assert await pull.recv() == b"held"

        for spelling in spellings:
            assert virtual_network.cut(spelling) == 1
            cut_at = trio.current_time()
            async for event in events:
                if isinstance(event, trizmq.HandshakeSucceeded) and trio.current_time() > cut_at:
                    break
            await roundtrip(push, pull, b"after the cut")


async def test_refuse_and_admit_take_any_spelling(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    with trio.fail_after(60):
        listener = await virtual_network.listen(parse_endpoint("tcp://*:5559", for_bind=True))
        virtual_network.refuse("tcp://localhost:5559")
        for spelling in ("tcp://127.0.0.1:5559", "tcp://localhost:5559", "tcp://host.test:5559"):
            with pytest.raises(ConnectionRefusedError):
                await virtual_network.connect(parse_endpoint(spelling, for_bind=False))
        virtual_network.admit("tcp://0.0.0.0:5559")
        endpoint = parse_endpoint("tcp://127.0.0.1:5559", for_bind=False)
        stream = await virtual_network.connect(endpoint)
        await stream.aclose()
        await listener.aclose()


async def test_overlapping_binds_conflict_as_on_a_real_machine(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        await zmq_sockets(trizmq.Pull, bind="tcp://*:5560")
        for taken in ("tcp://127.0.0.1:5560", "tcp://localhost:5560", "tcp://0.0.0.0:5560"):
            with pytest.raises(OSError) as caught:
                await zmq_sockets(trizmq.Pull, bind=taken)
            assert caught.value.errno == errno.EADDRINUSE
        await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5561")
        with pytest.raises(OSError):
            await zmq_sockets(trizmq.Pull, bind="tcp://*:5561")
        # two hosts, one port: two listeners, each reached by its own name
        first = await zmq_sockets(trizmq.Pull, bind="tcp://10.0.0.1:5562")
        second = await zmq_sockets(trizmq.Pull, bind="tcp://10.0.0.2:5562")
        push = await zmq_sockets(trizmq.Push, connect="tcp://10.0.0.2:5562")
        await roundtrip(push, second, b"to the second host")
        assert virtual_network.link_count("tcp://10.0.0.1:5562") == 0
        assert first.statistics()["bound"] == ["tcp://10.0.0.1:5562"]


async def test_port_zero_skips_ports_already_bound(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        await zmq_sockets(trizmq.Pull, bind="tcp://*:40001")
        pull = await zmq_sockets(trizmq.Pull)
        endpoint = await pull.bind("tcp://127.0.0.1:0")
        assert endpoint == "tcp://127.0.0.1:40002"


async def test_a_connect_nobody_listens_for_is_refused_and_backs_off(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(60):
        with pytest.raises(ConnectionRefusedError):
            await virtual_network.connect(parse_endpoint("tcp://localhost:6001", for_bind=False))
        push = await zmq_sockets(trizmq.Push, reconnect_ivl=1.0, linger=0)
        events = push.monitor()
        await push.connect("tcp://localhost:6001")
        failures = []
        with trio.move_on_after(10):
            async for event in events:
                if isinstance(event, trizmq.ConnectDelayed):
                    failures.append(trio.current_time())
                    assert "refused" in event.reason
        # one attempt per reconnect_ivl (±10 % jitter), not a spin
        assert 9 <= len(failures) <= 12, failures
        # and once something listens, the next attempt gets through
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:6001")
        await roundtrip(push, pull, b"finally")
