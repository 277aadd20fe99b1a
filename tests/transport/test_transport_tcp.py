"""Tests of the tcp:// transport: bind/connect, wildcards, IPv6, host names, errors."""

from __future__ import annotations

import errno
import re
import socket

import pytest
import trio
from trio.testing import check_half_closeable_stream, wait_all_tasks_blocked

from trizmq._endpoint import parse_endpoint
from trizmq._errors import EndpointError
from trizmq.transport import Listener, TCPListener, connect, listen


def _has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


needs_ipv6 = pytest.mark.skipif(
    not _has_ipv6_loopback(),
    reason="this machine has no IPv6 loopback (::1), so an IPv6 bind cannot be tested",
)


async def _listen(text: str) -> Listener:
    return await listen(parse_endpoint(text, for_bind=True))


async def _pair(
    listener: Listener, connect_to: str
) -> tuple[trio.SocketStream, trio.SocketStream, str]:
    # connect() completes through the listen backlog, so no task needs to accept
    # concurrently.
    client = await connect(parse_endpoint(connect_to, for_bind=False))
    server, peer = await listener.accept()
    assert isinstance(client, trio.SocketStream)
    assert isinstance(server, trio.SocketStream)
    return client, server, peer


async def _exchange(a: trio.abc.Stream, b: trio.abc.Stream) -> None:
    await a.send_all(b"ping")
    assert await b.receive_some(100) == b"ping"
    await b.send_all(b"pong")
    assert await a.receive_some(100) == b"pong"


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


async def test_bind_port_zero_connect_and_talk_both_ways() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        try:
            assert isinstance(listener, TCPListener)
            assert re.fullmatch(r"tcp://127\.0\.0\.1:\d+", listener.endpoint)
            assert _port(listener.endpoint) != 0
            client, server, peer = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
                host, port = client.socket.getsockname()
                assert peer == f"{host}:{port}"
        finally:
            await listener.aclose()


async def test_nodelay_on_both_ends() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:*")
        try:
            client, server, _ = await _pair(listener, listener.endpoint)
            async with client, server:
                for stream in (client, server):
                    opt = stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                    assert opt != 0
        finally:
            await listener.aclose()


@pytest.mark.parametrize("text", ["tcp://*:0", "tcp://*:*"])
async def test_wildcard_host_binds_ipv4_any(text: str) -> None:
    with trio.fail_after(10):
        listener = await _listen(text)
        try:
            assert re.fullmatch(r"tcp://0\.0\.0\.0:\d+", listener.endpoint)
            port = _port(listener.endpoint)
            assert port != 0
            client, server, _ = await _pair(listener, f"tcp://127.0.0.1:{port}")
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()


@needs_ipv6
async def test_ipv6_loopback() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://[::1]:0")
        try:
            assert re.fullmatch(r"tcp://\[::1\]:\d+", listener.endpoint)
            assert parse_endpoint(listener.endpoint, for_bind=False).host == "::1"
            client, server, peer = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
                assert peer == f"[::1]:{client.socket.getsockname()[1]}"
        finally:
            await listener.aclose()


async def test_hostname_localhost() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://localhost:0")
        try:
            # Bound to one resolved address, reported as that address.
            assert re.fullmatch(r"tcp://(127\.0\.0\.1|\[::1\]):\d+", listener.endpoint)
            port = _port(listener.endpoint)
            client, server, _ = await _pair(listener, f"tcp://localhost:{port}")
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()


async def test_second_bind_same_port_is_eaddrinuse() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        try:
            with pytest.raises(OSError) as info:
                await _listen(listener.endpoint)
            assert info.value.errno == errno.EADDRINUSE
            assert listener.endpoint in str(info.value)
            # The first listener is unharmed.
            client, server, _ = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()


async def test_connect_refused_is_oserror() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        endpoint = listener.endpoint
        await listener.aclose()
        with pytest.raises(OSError) as info:
            await connect(parse_endpoint(endpoint, for_bind=False))
        assert info.value.errno == errno.ECONNREFUSED
        assert isinstance(info.value, ConnectionRefusedError)
        assert endpoint in str(info.value)


async def test_unresolvable_host() -> None:
    with trio.fail_after(10):
        # RFC 6761 reserves .invalid: it never resolves.
        with pytest.raises(EndpointError, match=r"tcp://no-such-host\.invalid:0"):
            await _listen("tcp://no-such-host.invalid:0")
        with pytest.raises(OSError, match=r"tcp://no-such-host\.invalid:5555") as info:
            await connect(parse_endpoint("tcp://no-such-host.invalid:5555", for_bind=False))
        assert not isinstance(info.value, EndpointError)


async def test_aclose_is_idempotent_and_stops_accept() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        await listener.aclose()
        await listener.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await listener.accept()


async def test_aclose_wakes_a_pending_accept() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        failed = trio.Event()

        async def acceptor() -> None:
            with pytest.raises(trio.ClosedResourceError):
                await listener.accept()
            failed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(acceptor)
            await wait_all_tasks_blocked()
            await listener.aclose()
        assert failed.is_set()


async def test_rebind_after_close() -> None:
    with trio.fail_after(10):
        listener = await _listen("tcp://127.0.0.1:0")
        client, server, _ = await _pair(listener, listener.endpoint)
        await client.aclose()
        await server.aclose()
        await listener.aclose()
        # SO_REUSEADDR: connections in TIME_WAIT must not block a restarted server.
        again = await _listen(listener.endpoint)
        try:
            assert again.endpoint == listener.endpoint
        finally:
            await again.aclose()


async def test_non_stream_transport_is_rejected() -> None:
    with trio.fail_after(10):
        with pytest.raises(EndpointError, match="inproc://x"):
            await listen(parse_endpoint("inproc://x", for_bind=True))
        with pytest.raises(EndpointError, match=r"udp://127\.0\.0\.1:5"):
            await connect(parse_endpoint("udp://127.0.0.1:5", for_bind=False))


async def _fill_stream(stream: trio.SocketStream) -> None:
    async def sender() -> None:
        while True:
            await stream.send_all(b"x" * 10000)

    async def stop_when_blocked(nursery: trio.Nursery) -> None:
        await wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        nursery.start_soon(stop_when_blocked, nursery)


async def test_tcp_stream_conformance() -> None:
    async def stream_maker() -> tuple[trio.SocketStream, trio.SocketStream]:
        listener = await _listen("tcp://127.0.0.1:0")
        try:
            client, server, _ = await _pair(listener, listener.endpoint)
        finally:
            await listener.aclose()
        return client, server

    async def clogged_stream_maker() -> tuple[trio.SocketStream, trio.SocketStream]:
        left, right = await stream_maker()
        await _fill_stream(left)
        await _fill_stream(right)
        return left, right

    with trio.fail_after(10):
        await check_half_closeable_stream(stream_maker, clogged_stream_maker)
