"""STREAM (ZMQ_STREAM): raw TCP peers by routing id, with plain sockets on the other
end (an HTTP exchange) and with libzmq's own STREAM socket, both roles."""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq


async def notice(sock: trizmq.Stream) -> bytes:
    rid, data = await sock.recv_multipart()
    assert data == b"", data
    return rid


async def test_an_http_exchange_with_a_plain_tcp_client() -> None:
    with trio.fail_after(10):
        async with trizmq.Stream(bind="tcp://127.0.0.1:0") as server:
            host, _, port = server.statistics()["bound"][0][6:].rpartition(":")
            client = await trio.open_tcp_stream(host, int(port))
            async with client:
                rid = await notice(server)  # the connection opened
                assert rid[:1] == b"\x00" and len(rid) == 5
                await client.send_all(b"GET / HTTP/1.0\r\n\r\n")
                got = b""
                while not got.endswith(b"\r\n\r\n"):
                    peer, data = await server.recv_multipart()
                    assert peer == rid
                    got += data
                assert got == b"GET / HTTP/1.0\r\n\r\n"
                body = b"hello" * 200_000  # 1 MB: more than one write
                await server.send_multipart([rid, b"HTTP/1.0 200 OK\r\n\r\n"])
                await server.send_multipart([rid, body])
                await server.send_multipart([rid, b""])  # close it, once that is written
                response = b""
                while chunk := await client.receive_some(65536):
                    response += chunk
                assert response == b"HTTP/1.0 200 OK\r\n\r\n" + body
                assert await notice(server) == rid  # and its end is announced


async def test_a_client_that_hangs_up_is_announced() -> None:
    with trio.fail_after(10):
        async with trizmq.Stream(bind="tcp://127.0.0.1:0") as server:
            host, _, port = server.statistics()["bound"][0][6:].rpartition(":")
            first = await trio.open_tcp_stream(host, int(port))
            second = await trio.open_tcp_stream(host, int(port))
            a, b = await notice(server), await notice(server)
            assert a != b
            await first.aclose()
            assert await notice(server) in (a, b)
            # the other connection is untouched
            await second.send_all(b"still here")
            peer, data = await server.recv_multipart()
            assert data == b"still here" and peer in (a, b)
            await second.aclose()


async def test_libzmq_stream_connects_to_trizmq_stream(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    theirs = zmq_ctx.socket(zmq.STREAM)
    theirs.linger = 0
    with trio.fail_after(10):
        async with trizmq.Stream(bind="tcp://127.0.0.1:0") as ours:
            theirs.connect(ours.statistics()["bound"][0])
            our_id = await notice(ours)
            their_id, empty = await trio.to_thread.run_sync(theirs.recv_multipart)
            assert empty == b""  # libzmq's own notice (ZMQ_STREAM_NOTIFY)
            theirs.send_multipart([their_id, b"raw bytes from libzmq"])
            assert await ours.recv_multipart() == [our_id, b"raw bytes from libzmq"]
            await ours.send_multipart([our_id, b"raw bytes from trizmq"])
            assert await trio.to_thread.run_sync(theirs.recv_multipart) == [
                their_id,
                b"raw bytes from trizmq",
            ]
    theirs.close()


async def test_trizmq_stream_connects_to_libzmq_stream(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    theirs = zmq_ctx.socket(zmq.STREAM)
    theirs.linger = 0
    port = theirs.bind_to_random_port("tcp://127.0.0.1")
    with trio.fail_after(10):
        async with trizmq.Stream(connect=f"tcp://127.0.0.1:{port}") as ours:
            our_id = await notice(ours)
            their_id, empty = await trio.to_thread.run_sync(theirs.recv_multipart)
            assert empty == b""
            await ours.send_multipart([our_id, b"ping"])
            assert await trio.to_thread.run_sync(theirs.recv_multipart) == [their_id, b"ping"]
            theirs.send_multipart([their_id, b"pong"])
            assert await ours.recv_multipart() == [our_id, b"pong"]
    theirs.close()


async def test_stream_takes_tcp_only() -> None:
    with pytest.raises(trizmq.EndpointError, match="tcp:// endpoints only"):
        trizmq.Stream(bind="ipc:///tmp/x")
    async with trizmq.Stream() as stream:
        with pytest.raises(trizmq.EndpointError, match="tcp:// endpoints only"):
            await stream.connect("inproc://x")
