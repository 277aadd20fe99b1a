"""The ws:// and wss:// transports in the runtime: endpoints, TLS (certificates made by
trustme), paths, heartbeats, and hostile WebSocket peers (in
``tests/nursery/test_hostile_websocket.py``). Interop with libzmq's ws transport is in
``tests/interop/test_node_ws.py``; the codec alone in ``tests/zmtp/test_zws.py``."""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trustme
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, Ping, Pong, Request

import trizmq
from trizmq._errors import EndpointError


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


@pytest.fixture(scope="module")
def client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def outcome(events: trizmq.Monitor) -> trizmq.MonitorEvent:
    async for event in events:
        if isinstance(event, (trizmq.HandshakeSucceeded, trizmq.HandshakeFailed)):
            return event
    raise AssertionError("the monitor ended first")


# -- endpoints and options -------------------------------------------------------------------


async def test_bind_resolves_the_port_and_keeps_the_path() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull() as pull:
            bound = await pull.bind("ws://127.0.0.1:0/feeds/a")
            assert bound.startswith("ws://127.0.0.1:") and bound.endswith("/feeds/a")
            assert int(bound.split(":")[2].partition("/")[0]) > 0
            plain = await pull.bind("ws://127.0.0.1:*")
            assert plain.endswith("/")


async def test_wss_bind_without_ssl_context_names_the_option() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull() as pull:
            with pytest.raises(EndpointError, match="ssl_context"):
                await pull.bind("wss://127.0.0.1:0/")


def test_ssl_context_option_is_checked() -> None:
    with pytest.raises(ValueError, match="ssl_context"):
        trizmq.Pull(ssl_context="yes")  # type: ignore[arg-type]


# -- wss ---------------------------------------------------------------------------------------


async def test_wss_push_pull_and_req_rep(
    server_context: ssl.SSLContext, client_context: ssl.SSLContext
) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(bind="wss://127.0.0.1:0/in", ssl_context=server_context) as pull:
            endpoint = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=endpoint, ssl_context=client_context) as push:
                await push.send_multipart([b"secret", b"x" * 200_000])
                assert await pull.recv_multipart() == [b"secret", b"x" * 200_000]
        async with trizmq.Rep(bind="wss://localhost:0/rpc", ssl_context=server_context) as rep:
            endpoint = rep.statistics()["bound"][0]
            async with trizmq.Req(connect=endpoint, ssl_context=client_context) as req:
                for i in range(3):
                    await req.send(b"q%d" % i)
                    await rep.send(await rep.recv() + b"!")
                    assert await req.recv() == b"q%d!" % i


async def test_wss_curve_inside_tls(
    server_context: ssl.SSLContext, client_context: ssl.SSLContext
) -> None:
    public, secret = trizmq.curve_keypair()
    with trio.fail_after(10):
        async with trizmq.Pull(
            bind="wss://127.0.0.1:0/",
            ssl_context=server_context,
            security=trizmq.CurveServer(secret_key=secret),
        ) as pull:
            endpoint = pull.statistics()["bound"][0]
            mine, my_secret = trizmq.curve_keypair()
            client = trizmq.CurveClient(server_key=public, public_key=mine, secret_key=my_secret)
            async with trizmq.Push(
                connect=endpoint, ssl_context=client_context, security=client
            ) as push:
                await push.send(b"twice wrapped")
                assert await pull.recv() == b"twice wrapped"


async def test_wss_checks_the_server_certificate(server_context: ssl.SSLContext) -> None:
    """Without a context trusting the test CA, the default context refuses the server."""
    with trio.fail_after(10):
        async with trizmq.Pull(bind="wss://127.0.0.1:0/", ssl_context=server_context) as pull:
            endpoint = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=endpoint, linger=0) as push, push.monitor() as events:
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        break
                    assert not isinstance(event, trizmq.HandshakeSucceeded)
                assert pull.statistics()["live_peers"] == 0


async def test_wss_checks_the_host_name(ca: trustme.CA) -> None:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    # a certificate of the trusted CA, for another host name
    wrong = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("elsewhere.example").configure_cert(wrong)
    with trio.fail_after(10):
        async with trizmq.Pull(bind="wss://127.0.0.1:0/", ssl_context=wrong) as pull:
            endpoint = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=endpoint, ssl_context=context, linger=0) as push:
                async with push.monitor() as events:
                    event = await outcome(events)
                assert isinstance(event, trizmq.HandshakeFailed)


# -- paths ---------------------------------------------------------------------------------------


async def test_another_path_is_refused_and_retried_with_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(10):
        async with trizmq.Pull(bind="ws://127.0.0.1:0/right") as pull:
            endpoint = pull.statistics()["bound"][0].replace("/right", "/wrong")
            async with trizmq.Push(connect=endpoint, linger=0) as push, push.monitor() as events:
                event = await outcome(events)
                assert isinstance(event, trizmq.HandshakeFailed)
                assert "404" in event.reason
    assert any("'/wrong'" in r.getMessage() for r in caplog.records)


# -- heartbeats --------------------------------------------------------------------------------


async def test_quiet_ws_peers_stay_connected_over_heartbeats() -> None:
    options = {"heartbeat_ivl": 0.05, "heartbeat_timeout": 0.15}
    with trio.fail_after(10):
        async with trizmq.Pull(bind="ws://127.0.0.1:0/", **options) as pull:
            endpoint = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=endpoint, **options) as push, pull.monitor() as events:
                await push.send(b"before")
                assert await pull.recv() == b"before"
                with trio.move_on_after(1.0):  # twenty heartbeat intervals of silence
                    async for event in events:
                        dropped = isinstance(event, (trizmq.Disconnected, trizmq.HandshakeFailed))
                        assert not dropped, f"a quiet peer was dropped: {event}"
                await push.send(b"after")
                assert await pull.recv() == b"after"


@asynccontextmanager
async def raw_ws_push(
    pull: trizmq.Pull,
) -> AsyncIterator[tuple[trio.SocketStream, WSConnection]]:
    """A hand-driven ws:// PUSH peer of ``pull``'s first endpoint, upgraded and past
    its READY: the stream and wsproto's connection, for frames of the test's own."""
    endpoint = pull.statistics()["bound"][0]
    address = endpoint.partition("://")[2].partition("/")[0]
    host, _, port = address.rpartition(":")
    async with await trio.open_tcp_stream(host, int(port)) as stream:
        ws = WSConnection(ConnectionType.CLIENT)
        request = Request(host=address, target="/", subprotocols=["ZWS2.0/NULL"])
        await stream.send_all(ws.send(request))
        while not any(isinstance(e, AcceptConnection) for e in ws.events()):
            ws.receive_data(await stream.receive_some(65536))
        ready = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"
        await stream.send_all(ws.send(BytesMessage(data=ready)))
        yield stream, ws


async def test_a_ws_peer_that_stops_answering_pings_is_dropped() -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pull(
                bind="ws://127.0.0.1:0/", heartbeat_ivl=0.05, heartbeat_timeout=0.2
            ) as pull,
            pull.monitor() as events,
            raw_ws_push(pull),
        ):
            # never read again: PINGs go unanswered
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            assert pull.statistics()["live_peers"] == 0


@pytest.mark.parametrize("with_message", [False, True], ids=["ping-alone", "ping-and-message"])
async def test_a_websocket_ping_from_the_peer_is_answered_and_never_delivered(
    with_message: bool,
) -> None:
    """A peer's WebSocket PING gets a PONG with its payload, whether it arrives alone in
    a read or beside a message, and never reaches the application as a message."""
    with trio.fail_after(10):
        async with (
            trizmq.Pull(bind="ws://127.0.0.1:0/") as pull,
            raw_ws_push(pull) as (stream, ws),
        ):
            await stream.send_all(ws.send(BytesMessage(data=b"\x00first")))
            assert await pull.recv() == b"first"
            ping = ws.send(Ping(payload=b"hb-1"))
            if with_message:
                ping += ws.send(BytesMessage(data=b"\x00second"))
            await stream.send_all(ping)
            pongs: list[bytes] = []
            while not pongs:
                ws.receive_data(await stream.receive_some(65536))
                pongs += [bytes(e.payload) for e in ws.events() if isinstance(e, Pong)]
            assert pongs == [b"hb-1"]
            await stream.send_all(ws.send(BytesMessage(data=b"\x00last")))
            if with_message:
                assert await pull.recv() == b"second"
            assert await pull.recv() == b"last"


async def test_a_server_that_masks_its_frames_loses_its_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """RFC 6455: a server's frames are not masked. A trizmq client reading one drops
    the connection with the reason logged (and retries, as after any refusal)."""
    caplog.set_level(logging.WARNING, logger="trizmq")
    accepted = trio.Event()

    async def hostile_server(stream: trio.SocketStream) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        while not any(isinstance(e, Request) for e in ws.events()):
            ws.receive_data(await stream.receive_some(65536))
        ready = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PULL"
        # a READY as a client would frame it: masked (zero key)
        masked = bytes((0x82, 0x80 | len(ready))) + bytes(4) + ready
        await stream.send_all(ws.send(AcceptConnection(subprotocol="ZWS2.0/NULL")) + masked)
        accepted.set()
        with trio.move_on_after(5):
            while await stream.receive_some(65536):
                pass

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            [listener] = await nursery.start(
                functools.partial(trio.serve_tcp, hostile_server, 0, host="127.0.0.1")
            )
            port = listener.socket.getsockname()[1]
            async with trizmq.Push(connect=f"ws://127.0.0.1:{port}/") as push:
                await accepted.wait()
                reason = "server frame that is masked"
                while not any(reason in r.getMessage() for r in caplog.records):
                    await trio.sleep(0.01)
                assert push.statistics()["live_peers"] == 0
            nursery.cancel_scope.cancel()
