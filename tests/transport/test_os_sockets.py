"""What the tcp, ipc and udp transports share: a socket closed when its setup fails
(the OSError saying what failed), and the listener around a trio SocketListener."""

from __future__ import annotations

import errno

import pytest
import trio

import trizmq
from trizmq._endpoint import parse_endpoint
from trizmq.transport import ipc, tcp
from trizmq.transport.os_sockets import SocketListenerBase, closed_on_error, rename_oserror


async def test_a_failed_setup_closes_the_socket_and_names_what_failed() -> None:
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    with (
        pytest.raises(ConnectionRefusedError) as caught,
        closed_on_error(sock, "cannot connect to tcp://127.0.0.1:1"),
    ):
        raise refused
    assert sock.fileno() == -1
    error = caught.value
    assert isinstance(error, trizmq.ZMQOSError) and error.errno == errno.ECONNREFUSED
    assert error.strerror == "cannot connect to tcp://127.0.0.1:1: Connection refused"
    assert error.__cause__ is refused


async def test_without_what_the_error_goes_on_as_it_is() -> None:
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
    original = OSError(errno.EADDRINUSE, "Address already in use")
    with pytest.raises(OSError) as caught, closed_on_error(sock):
        raise original
    assert caught.value is original and sock.fileno() == -1


async def test_cancellation_closes_the_socket_and_is_not_renamed() -> None:
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    with (
        trio.fail_after(10),
        trio.CancelScope() as scope,
        closed_on_error(sock, "cannot bind tcp://127.0.0.1:0"),
    ):
        scope.cancel()
        await trio.sleep_forever()
    assert scope.cancelled_caught and sock.fileno() == -1


async def test_a_setup_that_succeeds_keeps_its_socket() -> None:
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    try:
        with closed_on_error(sock, "cannot bind tcp://127.0.0.1:0"):
            sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        assert sock.fileno() != -1
    finally:
        sock.close()


def test_tcp_still_offers_rename_oserror() -> None:
    assert tcp.rename_oserror is rename_oserror


async def test_tcp_and_ipc_listeners_share_the_socket_listener() -> None:
    with trio.fail_after(10):
        tcp_listener = await tcp.listen_tcp(parse_endpoint("tcp://127.0.0.1:0", for_bind=True))
        ipc_listener = await ipc.listen_ipc(parse_endpoint("ipc://*", for_bind=True))
        for listener in (tcp_listener, ipc_listener):
            assert isinstance(listener, SocketListenerBase)
            assert listener.socket.fileno() != -1
            await listener.aclose()
            assert listener.socket.fileno() == -1
            await listener.aclose()  # idempotent
