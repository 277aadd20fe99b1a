"""Hostile WebSocket peers: each loses only its own connection, with a logged reason,
while a good ws peer goes on (the harness of ``test_hostile_peers.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
from test_hostile_peers import Harness, run_case, send, wait_closed_by_server
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, Request, TextMessage
from wsproto.frame_protocol import FrameProtocol

# -- hostile peers -------------------------------------------------------------------------------


def upgrade(protocols: list[str] | None = None) -> tuple[WSConnection, bytes]:
    ws = WSConnection(ConnectionType.CLIENT)
    request = Request(host="h", target="/zmq", subprotocols=protocols or ["ZWS2.0/NULL"])
    return ws, ws.send(request)


READY_PUSH = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"


async def upgraded(h: Harness, stream: trio.abc.Stream) -> WSConnection:
    """Upgrade, handshake as a PUSH, wait for trizmq to count it."""
    ws, request = upgrade()
    await send(stream, request)
    await accepted(ws, stream)
    await send(stream, ws.send(BytesMessage(data=READY_PUSH)))
    await h.handshaken(2)  # the good peer's, then ours
    return ws


async def accepted(ws: WSConnection, stream: trio.abc.Stream) -> None:
    """Read until the server's 101 has arrived."""
    while True:
        ws.receive_data(await stream.receive_some(65536))
        if any(isinstance(event, AcceptConnection) for event in ws.events()):
            return


def hostile_cases() -> Iterator[tuple[str, object, str]]:
    async def text_message(h: Harness, stream: trio.abc.Stream) -> None:
        ws = await upgraded(h, stream)
        await send(stream, ws.send(TextMessage(data="hello")))
        await wait_closed_by_server(stream)

    async def unmasked_frame(h: Harness, stream: trio.abc.Stream) -> None:
        await upgraded(h, stream)
        await send(stream, FrameProtocol(client=False, extensions=[]).send_data(b"\x00x"))
        await wait_closed_by_server(stream)

    async def oversized(h: Harness, stream: trio.abc.Stream) -> None:
        await upgraded(h, stream)
        # a binary frame declaring 50 MB (masked with a zero key), and its first 200 kB
        header = b"\x82\xff" + (50_000_000).to_bytes(8, "big") + bytes(4)
        await send(stream, header + bytes(200_000))  # refused long before the rest
        await wait_closed_by_server(stream)

    def broken_frame(frame: bytes) -> object:
        async def send_it(h: Harness, stream: trio.abc.Stream) -> None:
            await upgraded(h, stream)
            await send(stream, frame)
            await wait_closed_by_server(stream)

        return send_it

    async def endless_header(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, b"GET /zmq HTTP/1.1\r\nHost: h\r\nX-Junk: ")
        for _ in range(40):
            await send(stream, b"a" * 1024)
        await wait_closed_by_server(stream)

    async def no_fitting_protocol(h: Harness, stream: trio.abc.Stream) -> None:
        _, request = upgrade(["ZWS2.0/CURVE", "mqtt"])
        await send(stream, request)
        assert b"400" in (await wait_closed_by_server(stream))[:40]

    async def zmtp_instead_of_http(h: Harness, stream: trio.abc.Stream) -> None:
        await send(stream, b"\xff" + bytes(8) + b"\x01\x7f\x03\x01NULL" + bytes(48))
        await wait_closed_by_server(stream)

    yield "text-message", text_message, "text message"
    yield "unmasked-frame", unmasked_frame, "1002"
    yield "oversized", oversized, "exceeds the 1000000-byte limit"
    # RFC 6455's rules, each broken in a client frame (masked with a zero key)
    zero_key = bytes(4)
    yield "rsv-bits", broken_frame(b"\xc2\x82" + zero_key + b"\x00x"), "reserved bits 0x40"
    yield "reserved-opcode", broken_frame(b"\x83\x80" + zero_key), "reserved opcode 0x3"
    yield (
        "fragmented-ping",
        broken_frame(b"\x09\x80" + zero_key),
        "a fragmented ping frame (WebSocket close code 1002)",
    )
    yield (
        "long-ping",
        broken_frame(b"\x89\xfe\x00\x7e" + zero_key + bytes(126)),
        "ping frame of 126 bytes",
    )
    yield (
        "continuation-alone",
        broken_frame(b"\x80\x82" + zero_key + b"\x00x"),
        "continuation frame with no message open",
    )
    yield "endless-http-header", endless_header, "bad WebSocket upgrade"
    yield "no-fitting-protocol", no_fitting_protocol, "no ZWS 2.0 protocol fits"
    yield "zmtp-instead-of-http", zmtp_instead_of_http, "not an HTTP request"


@pytest.mark.parametrize(("case", "hostile", "reason"), list(hostile_cases()))
async def test_a_hostile_websocket_peer_loses_only_its_connection(
    caplog: pytest.LogCaptureFixture, case: str, hostile: object, reason: str
) -> None:
    # run_case checks that the good peer is the one live peer, before and after
    await run_case(caplog, "ws", hostile, reason, maxmsgsize=1_000_000)  # type: ignore[arg-type]
