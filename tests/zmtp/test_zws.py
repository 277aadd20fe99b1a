"""The ZWS 2.0 codec, sans I/O: two codecs (or a codec and a raw wsproto peer) pumped
into each other, and hostile input handed to a server."""

from __future__ import annotations

import itertools
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.events import Ping as WsPing
from wsproto.frame_protocol import FrameProtocol, Opcode

from trizmq.zmtp import ProtocolError
from trizmq.zmtp.events import Cancel, HandshakeComplete, Ping, Subscribe, SubscriptionRefused
from trizmq.zmtp.plain import PlainClientMechanism, PlainServerMechanism
from trizmq.zmtp.zws import MAX_HTTP_HEAD, ZwsConnection, offered_protocols

from .helpers import zws_connection


def pair(
    client_type: str = "DEALER", server_type: str = "ROUTER", **server_kw: object
) -> tuple[ZwsConnection, ZwsConnection, list[object], list[object]]:
    client = zws_connection(client_type, client=True, host="h:1", path="/zmq", identity=b"me")
    server = zws_connection(server_type, client=False, host="h:1", path="/zmq", **server_kw)  # type: ignore[arg-type]
    got_client: list[object] = []
    got_server: list[object] = []
    got_server += server.receive_data(client.start()) if server.start() == b"" else []
    pump(client, server, got_client, got_server)
    return client, server, got_client, got_server


def pump(
    client: ZwsConnection,
    server: ZwsConnection,
    got_client: list[object],
    got_server: list[object],
) -> None:
    for _ in range(10):
        to_client = server.data_to_send()
        if to_client:
            got_client += client.receive_data(to_client)
        to_server = client.data_to_send()
        if to_server:
            got_server += server.receive_data(to_server)
        if not to_client and not to_server:
            return


def encoded(codec: ZwsConnection, frames: list[bytes]) -> bytes:
    out = bytearray()
    codec.message_encoder()(out, frames)
    return bytes(out)


def test_null_handshake_chooses_zws_null_and_exchanges_messages() -> None:
    client, server, _, got_server = pair()
    assert client.protocol == server.protocol == "ZWS2.0/NULL"
    assert client.handshake_complete and server.handshake_complete
    [done] = [e for e in got_server if isinstance(e, HandshakeComplete)]
    assert done.socket_type == "DEALER" and done.identity == b"me"
    assert server.receive_data(encoded(client, [b"a", b"", b"x" * 70_000])) == [
        [b"a", b"", b"x" * 70_000]
    ]
    assert client.receive_data(encoded(server, [b"me", b"reply"])) == [[b"me", b"reply"]]


def test_each_frame_is_one_binary_message_with_its_flag_byte() -> None:
    client, _, _, _ = pair()
    peer = FrameProtocol(client=False, extensions=[])
    peer.receive_bytes(encoded(client, [b"one", b"two"]))
    frames = list(peer.received_frames())
    assert [(f.opcode, bytes(f.payload)) for f in frames] == [
        (Opcode.BINARY, b"\x01one"),
        (Opcode.BINARY, b"\x00two"),
    ]


def test_subscriptions_are_legacy_messages_as_libzmq_sends_them() -> None:
    client, server, _, _ = pair("SUB", "PUB")
    assert server.receive_data(client.encode_subscribe(b"topic")) == [[b"\x01topic"]]
    assert server.receive_data(client.encode_cancel(b"topic")) == [[b"\x00topic"]]


def test_websocket_ping_is_a_ping_event_answered_by_a_pong_frame() -> None:
    client, server, _, _ = pair()
    assert server.receive_data(client.encode_ping(1.0, b"ctx")) == [Ping(0.0, b"ctx")]
    peer = FrameProtocol(client=True, extensions=[])
    peer.receive_bytes(server.encode_pong(b"ctx"))
    [frame] = list(peer.received_frames())
    assert frame.opcode is Opcode.PONG and bytes(frame.payload) == b"ctx"


def test_plain_over_zws() -> None:
    client = zws_connection(
        "PUSH",
        client=True,
        host="h:1",
        path="/",
        mechanism=PlainClientMechanism(b"admin", b"secret"),
    )
    server = zws_connection(
        "PULL", client=False, host="h:1", path="/", mechanism=PlainServerMechanism()
    )
    server.start()
    got_server = server.receive_data(client.start())
    got_client: list[object] = []
    pump(client, server, got_client, got_server)
    assert client.protocol == "ZWS2.0/PLAIN"
    assert server.pending_zap is not None
    assert server.pending_zap.credentials == (b"admin", b"secret")


def raw_client(protocols: list[str], path: str = "/zmq") -> tuple[WSConnection, bytes]:
    ws = WSConnection(ConnectionType.CLIENT)
    return ws, ws.send(Request(host="h:1", target=path, subprotocols=protocols))


def test_no_mechanism_zws20_exchanges_routing_ids() -> None:
    """What a browser's small client offers: ZWS2.0, each side's first message its id."""
    server = zws_connection("ROUTER", client=False, host="h:1", path="/zmq", identity=b"srv")
    ws, request = raw_client(["ZWS2.0"])
    assert server.receive_data(request) == []
    assert server.protocol == "ZWS2.0"
    ws.receive_data(server.data_to_send())
    events = list(ws.events())
    assert isinstance(events[0], AcceptConnection) and events[0].subprotocol == "ZWS2.0"
    # the server's routing id, and no READY
    assert [bytes(e.data) for e in events[1:]] == [b"\x00srv"]
    got = server.receive_data(
        ws.send(BytesMessage(data=b"\x00browser")) + ws.send(BytesMessage(data=b"\x00hello"))
    )
    assert isinstance(got[0], HandshakeComplete)
    assert got[0].identity == b"browser" and got[0].socket_type == ""
    assert got[1:] == [[b"hello"]]
    assert server.data_to_send() == b""


def test_server_takes_the_clients_first_fitting_offer() -> None:
    server = zws_connection("PULL", client=False, host="h:1", path="/zmq")
    _, request = raw_client(["ZWS2.0/PLAIN", "ZWS2.0", "ZWS2.0/NULL"])
    server.receive_data(request)
    assert server.protocol == "ZWS2.0"


def test_no_fitting_protocol_is_refused_with_400() -> None:
    server = zws_connection(
        "PULL", client=False, host="h:1", path="/zmq", mechanism=PlainServerMechanism()
    )
    ws, request = raw_client(offered_protocols(b"NULL"))
    with pytest.raises(ProtocolError, match=r"no ZWS 2\.0 protocol fits"):
        server.receive_data(request)
    ws.receive_data(server.data_to_send())
    [reject] = [e for e in ws.events() if isinstance(e, RejectConnection)]
    assert reject.status_code == 400


def test_another_path_is_refused_with_404() -> None:
    server = zws_connection("PULL", client=False, host="h:1", path="/zmq")
    ws, request = raw_client(["ZWS2.0/NULL"], path="/other")
    with pytest.raises(ProtocolError, match="'/other'"):
        server.receive_data(request)
    ws.receive_data(server.data_to_send())
    assert [e.status_code for e in ws.events() if isinstance(e, RejectConnection)] == [404]


def test_client_refused_by_the_server_says_so() -> None:
    client = zws_connection("PUSH", client=True, host="h:1", path="/zmq")
    ws = WSConnection(ConnectionType.SERVER)
    ws.receive_data(client.start())
    list(ws.events())
    with pytest.raises(ProtocolError, match="refused the WebSocket upgrade"):
        client.receive_data(ws.send(RejectConnection(status_code=403)))


# -- hostile input ---------------------------------------------------------------------------


def open_server(
    socket_type: str = "PULL", peer_type: bytes = b"PUSH", **kw: object
) -> tuple[ZwsConnection, WSConnection]:
    """A server past the upgrade and the NULL handshake, and the raw client talking to it."""
    server = zws_connection(socket_type, client=False, host="h:1", path="/zmq", **kw)  # type: ignore[arg-type]
    ws, request = raw_client(["ZWS2.0/NULL"])
    server.receive_data(request)
    ws.receive_data(server.data_to_send())
    list(ws.events())
    ready = b"\x02\x05READY\x0bSocket-Type" + len(peer_type).to_bytes(4, "big") + peer_type
    [done] = server.receive_data(ws.send(BytesMessage(data=ready)))
    assert isinstance(done, HandshakeComplete)
    return server, ws


def test_a_text_message_is_refused() -> None:
    server, ws = open_server()
    with pytest.raises(ProtocolError, match="text message"):
        server.receive_data(ws.send(TextMessage(data="hello")))


def test_an_unmasked_client_frame_is_refused() -> None:
    server, _ = open_server()
    unmasked = FrameProtocol(client=False, extensions=[]).send_data(b"\x00hello")
    with pytest.raises(ProtocolError, match="1002"):
        server.receive_data(unmasked)


def test_an_oversized_message_is_refused_before_it_is_buffered() -> None:
    server, ws = open_server(maxmsgsize=1000)
    frame = ws.send(BytesMessage(data=b"\x00" + bytes(10_000_000)))
    # the header and the first 64 kB: refused without waiting for the rest
    with pytest.raises(ProtocolError, match="exceeds the 1000-byte limit"):
        server.receive_data(frame[:65536])


def test_a_declared_length_over_the_limit_is_refused_from_the_header_alone() -> None:
    server, _ = open_server(maxmsgsize=1000)
    # a masked binary frame declaring 50 MB (zero mask key), nothing of its body yet
    header = b"\x82\xff" + (50_000_000).to_bytes(8, "big") + bytes(4)
    with pytest.raises(ProtocolError, match="declaring 50000000 bytes"):
        server.receive_data(header)


def test_a_message_within_the_limit_passes_in_pieces() -> None:
    server, ws = open_server(maxmsgsize=1000)
    # counted as on tcp: the body and its ZMTP header (9 bytes for a body over 255)
    frame = ws.send(BytesMessage(data=b"\x00" + b"y" * 991))
    got: list[object] = []
    for i in range(0, len(frame), 7):
        got += server.receive_data(frame[i : i + 7])
    assert got == [[b"y" * 991]]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"", "empty WebSocket message"),
        (b"\x04x", "reserved bits"),
        (b"\x03\x04PING", "MORE flag"),
    ],
)
def test_malformed_zws_messages_are_refused(payload: bytes, reason: str) -> None:
    server, ws = open_server()
    with pytest.raises(ProtocolError, match=reason):
        server.receive_data(ws.send(BytesMessage(data=payload)))


def test_an_endless_http_head_is_refused() -> None:
    server = zws_connection("PULL", client=False, host="h:1", path="/zmq")
    head = b"GET /zmq HTTP/1.1\r\nHost: h\r\nX-Junk: " + b"a" * (MAX_HTTP_HEAD + 10)
    with pytest.raises(ProtocolError, match="bad WebSocket upgrade"):
        for i in range(0, len(head), 4096):
            server.receive_data(head[i : i + 4096])


def test_a_normal_close_ends_the_connection_after_its_messages() -> None:
    server, ws = open_server()
    data = ws.send(BytesMessage(data=b"\x00last")) + ws.send(CloseConnection(code=1000))
    assert server.receive_data(data) == [[b"last"]]
    with pytest.raises(ConnectionResetError, match="closed the WebSocket"):
        server.receive_data(b"")
    # the close was answered
    ws.receive_data(server.data_to_send())
    assert any(isinstance(e, CloseConnection) for e in ws.events())


def test_nothing_is_encoded_once_the_peer_closed() -> None:
    """A CLOSE answered: the codec says closed, and encoding gives nothing (never an
    exception in a writer: a browser tab closing must not take the socket down)."""
    server, ws = open_server()
    with pytest.raises(ConnectionResetError):
        server.receive_data(ws.send(CloseConnection(code=1001)))
    assert server.closed
    assert encoded(server, [b"late"]) == b""
    assert server.encode_ping(1.0) == b"" and server.encode_subscribe(b"t") == b""


def test_an_abnormal_close_is_a_protocol_error() -> None:
    server, ws = open_server()
    with pytest.raises(ProtocolError, match="1011"):
        server.receive_data(ws.send(CloseConnection(code=1011, reason="oops")))


def test_a_pong_is_only_bytes_heard() -> None:
    server, ws = open_server()
    ws.send(BytesMessage(data=b"\x00x"))
    assert server.receive_data(ws.send(Pong(payload=b"c"))) == []


# -- a subscription over the bound -------------------------------------------------------


def frames_of(ws: WSConnection, payload: bytes, *, pieces: int = 1) -> bytes:
    """``payload`` as one binary WebSocket message of ``pieces`` frames."""
    step = -(-len(payload) // pieces)
    out = b""
    for start in range(0, len(payload), step):
        last = start + step >= len(payload)
        out += ws.send(BytesMessage(data=payload[start : start + step], message_finished=last))
    return out


@pytest.mark.parametrize("socket_type", ["PUB", "XPUB"])
@pytest.mark.parametrize(
    ("payload", "refused", "kept"),
    [
        (b"\x00\x01" + b"t" * 5000, SubscriptionRefused(5000), [b"\x01" + b"t" * 1000]),
        (
            b"\x02\x09SUBSCRIBE" + b"t" * 5000,
            SubscriptionRefused(5000),
            Subscribe(b"t" * 1000),
        ),
    ],
    ids=["message", "command"],
)
@pytest.mark.parametrize("pieces", [1, 3])
@pytest.mark.parametrize("chunk", [5, 1000, 4096])
def test_a_long_subscription_is_refused_before_it_is_kept(
    socket_type: str, payload: bytes, refused: object, kept: object, pieces: int, chunk: int
) -> None:
    server, ws = open_server(socket_type, b"SUB", max_subscription=1000)
    head = payload[: len(payload) - 5000]
    wire = (
        frames_of(ws, payload, pieces=pieces)
        + ws.send(BytesMessage(data=head + b"t" * 1000))  # at the bound: kept
        + ws.send(BytesMessage(data=b"\x00\x01after"))
    )
    got: list[object] = []
    held = 0
    for i in range(0, len(wire), chunk):
        got += server.receive_data(wire[i : i + chunk])
        held = max(held, sum(len(p) for p in server._partial))
    assert got == [refused, kept, [b"\x01after"]]
    # refused as soon as its head and its declared length tell it: only the message at
    # the bound was ever held, in part
    assert held <= len(head) + 1000


def test_a_huge_subscription_is_never_kept() -> None:
    server, ws = open_server("PUB", b"SUB", max_subscription=4 * 1024 * 1024)
    wire = ws.send(BytesMessage(data=b"\x00\x01" + bytes(20 * 1024 * 1024)))
    commands = server.commands_parsed
    for i in range(0, len(wire) - 65536, 65536):
        assert server.receive_data(wire[i : i + 65536]) == []
        assert not server._partial and not server.in_message
    assert server.receive_data(wire[i + 65536 :]) == [SubscriptionRefused(20 * 1024 * 1024)]
    assert server.commands_parsed > commands  # the runtime looks at the events


def test_a_multipart_frame_is_not_refused() -> None:
    server, ws = open_server("XPUB", b"SUB", max_subscription=10)
    topic = b"t" * 3000
    wire = (
        ws.send(BytesMessage(data=b"\x01head"))
        + ws.send(BytesMessage(data=b"\x00\x01" + topic))
        + ws.send(BytesMessage(data=b"\x01\x00" + topic))
        + ws.send(BytesMessage(data=b"\x00end"))
    )
    got: list[object] = []
    for i in range(0, len(wire), 100):
        got += server.receive_data(wire[i : i + 100])
    assert got == [[b"head", b"\x01" + topic], [b"\x00" + topic, b"end"]]


@pytest.mark.parametrize("socket_type", ["PUB", "XPUB"])
@pytest.mark.parametrize(
    ("payload", "kept"),
    [
        (b"\x00\x00" + b"t" * 5000, [b"\x00" + b"t" * 1000]),
        (b"\x02\x06CANCEL" + b"t" * 5000, Cancel(b"t" * 1000)),
    ],
    ids=["message", "command"],
)
@pytest.mark.parametrize("pieces", [1, 3])
@pytest.mark.parametrize("chunk", [5, 1000, 4096])
def test_a_long_cancel_is_dropped_before_it_is_kept(
    socket_type: str, payload: bytes, kept: object, pieces: int, chunk: int
) -> None:
    server, ws = open_server(socket_type, b"SUB", max_subscription=1000)
    head = payload[: len(payload) - 5000]
    wire = (
        frames_of(ws, payload, pieces=pieces)
        + ws.send(BytesMessage(data=head + b"t" * 1000))  # at the bound: kept
        + ws.send(BytesMessage(data=b"\x00\x01after"))
    )
    commands = server.commands_parsed
    got: list[object] = []
    held = 0
    for i in range(0, len(wire), chunk):
        got += server.receive_data(wire[i : i + chunk])
        held = max(held, sum(len(p) for p in server._partial))
    # dropped unreported: it could cancel nothing held
    assert got == [kept, [b"\x01after"]]
    assert server.commands_parsed - commands == (not isinstance(kept, list))
    assert held <= len(head) + 1000


def test_a_huge_cancel_is_never_kept() -> None:
    """100 MiB declared, fed in 64 KiB pieces: nothing is held, nothing reported, and
    the next subscription and cancel come as usual."""
    server, ws = open_server("PUB", b"SUB", max_subscription=4 * 1024 * 1024)
    topic = 100 * 1024 * 1024
    head = b"\x00\x00"
    # one binary WebSocket frame, masked with a zero key: its payload goes as it is
    header = b"\x82\xff" + (len(head) + topic).to_bytes(8, "big") + bytes(4) + head
    piece = b"t" * 65536
    tracemalloc.start()
    try:
        assert server.receive_data(header + piece) == []
        base = tracemalloc.get_traced_memory()[0]
        sent = len(piece)
        while sent + len(piece) < topic:
            assert server.receive_data(piece) == []
            assert not server._partial and not server.in_message
            sent += len(piece)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held - base < 16 * 1024, held - base
    assert peak - base < 512 * 1024, peak - base
    rest = (
        b"t" * (topic - sent)
        + ws.send(BytesMessage(data=b"\x00\x01news"))
        + ws.send(BytesMessage(data=b"\x00\x00news"))
    )
    assert server.receive_data(rest) == [[b"\x01news"], [b"\x00news"]]


def test_other_types_over_ws_ignore_the_bound() -> None:
    server, ws = open_server("PULL", b"PUSH", max_subscription=10)
    wire = ws.send(BytesMessage(data=b"\x00\x01" + b"t" * 3000))
    got: list[object] = []
    for i in range(0, len(wire), 100):
        got += server.receive_data(wire[i : i + 100])
    assert got == [[b"\x01" + b"t" * 3000]]


# -- the frame codec under ZWS, against wsproto ------------------------------------------------


def open_client(socket_type: str = "DEALER") -> tuple[ZwsConnection, WSConnection]:
    """A client past the upgrade and the NULL handshake, and the raw server talking to it."""
    client = zws_connection(socket_type, client=True, host="h:1", path="/zmq")
    ws = WSConnection(ConnectionType.SERVER)
    ws.receive_data(client.start())
    list(ws.events())
    ready = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x06ROUTER"
    reply = ws.send(AcceptConnection(subprotocol="ZWS2.0/NULL"))
    # the 101 and the first frame in one read: wsproto is handed the head only
    [done] = client.receive_data(reply + ws.send(BytesMessage(data=ready)))
    assert isinstance(done, HandshakeComplete) and done.socket_type == "ROUTER"
    ws.receive_data(client.data_to_send())
    [ours] = [bytes(e.data) for e in ws.events()]  # type: ignore[attr-defined]
    assert ours.startswith(b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER")
    return client, ws


def test_frames_after_the_request_in_the_same_read_are_read() -> None:
    server = zws_connection("PULL", client=False, host="h:1", path="/zmq")
    ws, request = raw_client(["ZWS2.0/NULL"])
    ready = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"
    # (a client waits for the 101 before it sends: this one did not)
    fake = WSConnection(ConnectionType.SERVER)
    fake.receive_data(request)
    list(fake.events())
    ws.receive_data(fake.send(AcceptConnection(subprotocol="ZWS2.0/NULL")))
    list(ws.events())
    wire = request + ws.send(BytesMessage(data=ready)) + ws.send(BytesMessage(data=b"\x00hi"))
    for cut in (len(request) - 1, len(request), len(request) + 3):
        server = zws_connection("PULL", client=False, host="h:1", path="/zmq")
        got = server.receive_data(wire[:cut]) + server.receive_data(wire[cut:])
        assert isinstance(got[0], HandshakeComplete) and got[1:] == [[b"hi"]]


ZMTP_SIZES = st.one_of(
    st.integers(0, 124),
    st.integers(125, 65534),
    st.integers(65535, 1024 * 1024),
    st.sampled_from([0, 124, 125, 126, 65534, 65535, 1024 * 1024]),
)


@pytest.mark.parametrize("side", ["client", "server"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(
        st.lists(st.tuples(ZMTP_SIZES, st.integers(0, 255)), min_size=1, max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_what_zws_writes_wsproto_reads_as_the_same_messages(
    side: str, messages: list[list[tuple[int, int]]]
) -> None:
    """Each ZMTP frame one binary WebSocket message: its flag byte and its body, every
    length form, masked from a client, unmasked from a server."""
    codec, ws = open_client() if side == "client" else open_server("PUSH", b"PULL")
    encode = codec.message_encoder()
    wire = bytearray()
    expected: list[bytes] = []
    for message in messages:
        frames = [bytes([fill]) * size for size, fill in message]
        encode(wire, frames)
        expected += [
            (b"\x01" if i < len(frames) - 1 else b"\x00") + f for i, f in enumerate(frames)
        ]
    ws.receive_data(bytes(wire))
    got = list(ws.events())
    assert all(isinstance(e, BytesMessage) and e.message_finished for e in got)
    assert [bytes(e.data) for e in got] == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("side", ["client", "server"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(
        st.tuples(
            st.lists(ZMTP_SIZES, min_size=1, max_size=3),
            st.lists(st.integers(0, 1024 * 1024), max_size=3),  # fragment boundaries
            st.lists(st.binary(max_size=125), max_size=2),  # PINGs and PONGs inside
        ),
        max_size=4,
    ),
    close=st.none()
    | st.tuples(st.sampled_from([1000, 1001, 1008, 1011, 4000]), st.text(max_size=12)),
    points=st.lists(st.integers(0, 4 * 1024 * 1024), max_size=8),
)
def test_what_wsproto_writes_zws_reads_as_the_same_messages_and_events(
    side: str,
    messages: list[tuple[list[int], list[int], list[bytes]]],
    close: tuple[int, str] | None,
    points: list[int],
) -> None:
    codec, ws = open_client() if side == "client" else open_server("PULL", b"PUSH")
    wire = bytearray()
    expected: list[object] = []
    for sizes, bounds, controls in messages:
        frames = [bytes([i % 256]) * size for i, size in enumerate(sizes)]
        for i, frame in enumerate(frames):
            payload = (b"\x01" if i < len(frames) - 1 else b"\x00") + frame
            marks = sorted({b % (len(payload) + 1) for b in bounds})
            pieces = [payload[a:b] for a, b in itertools.pairwise([0, *marks, len(payload)])]
            for j, piece in enumerate(pieces):
                wire += ws.send(BytesMessage(data=piece, message_finished=j == len(pieces) - 1))
                inside = i < len(frames) - 1 or j < len(pieces) - 1
                if j < len(controls) and i == 0 and inside:
                    # a PING inside the message is answered (a PONG is only bytes heard)
                    wire += ws.send(
                        WsPing(payload=controls[j]) if j % 2 == 0 else Pong(payload=controls[j])
                    )
                    if j % 2 == 0:
                        expected.append(Ping(0.0, controls[j]))
        expected.append(frames)
    if close is not None:
        wire += ws.send(CloseConnection(code=close[0], reason=close[1]))
    wire = bytes(wire)
    marks = sorted({p % (len(wire) + 1) for p in points})
    got: list[object] = []
    ended: BaseException | None = None
    try:
        for a, b in itertools.pairwise([0, *marks, len(wire)]):
            got += codec.receive_data(wire[a:b])
        codec.receive_data(b"")
    except (ProtocolError, ConnectionResetError) as exc:
        ended = exc
    # the messages in order, each PING where it came (before its message's end); a
    # CLOSE with an error code drops what came with it in its read
    if close is None or close[0] in (1000, 1001):
        assert got == expected
    else:
        assert got == expected[: len(got)]
    if close is None:
        assert ended is None
    elif close[0] in (1000, 1001):
        assert isinstance(ended, ConnectionResetError) and f"({close[0]})" in str(ended)
        ws.receive_data(codec.data_to_send())  # the CLOSE was answered, by wsproto
        assert [e.code for e in ws.events() if isinstance(e, CloseConnection)] == [close[0]]
    else:
        assert isinstance(ended, ProtocolError)
        assert f"code {close[0]}" in str(ended) and close[1] in str(ended)


def test_a_masked_server_frame_is_refused() -> None:
    client, _ = open_client()
    masked = FrameProtocol(client=True, extensions=[]).send_data(b"\x00hello")
    with pytest.raises(ProtocolError, match=r"server frame that is masked.*1002"):
        client.receive_data(masked)


def raw_frame(b0: int, payload: bytes, *, length: bytes | None = None) -> bytes:
    """A client frame made by hand (masked with a zero key)."""
    if length is None:
        length = bytes((len(payload),))
    return bytes((b0, length[0] | 0x80)) + length[1:] + bytes(4) + payload


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (raw_frame(0xC2, b"\x00x"), "reserved bits 0x40"),
        (raw_frame(0x83, b""), "reserved opcode 0x3"),
        (raw_frame(0x09, b"ping"), "fragmented ping"),
        (raw_frame(0x89, bytes(126), length=b"\x7e\x00\x7e"), "ping frame of 126 bytes"),
        (raw_frame(0x80, b"\x00x"), "continuation frame with no message open"),
        (raw_frame(0x02, b"\x00x") + raw_frame(0x82, b"\x00y"), "inside a fragmented message"),
    ],
    ids=["rsv", "opcode", "fragmented-control", "long-control", "continuation", "interleaved"],
)
def test_frames_breaking_rfc_6455_are_refused(frame: bytes, reason: str) -> None:
    server, _ = open_server()
    with pytest.raises(ProtocolError, match=rf"{reason}.*1002"):
        server.receive_data(frame)


def test_a_ping_in_a_read_of_messages_counts_among_the_commands() -> None:
    """The runtime looks at each event of a read only when the count moved."""
    server, ws = open_server()
    commands = server.commands_parsed
    got = server.receive_data(ws.send(BytesMessage(data=b"\x00a")) + ws.send(WsPing(payload=b"p")))
    assert got == [[b"a"], Ping(0.0, b"p")]
    assert server.commands_parsed == commands + 1


def test_a_fragmented_message_over_the_limit_is_refused_at_the_header_that_breaks_it() -> None:
    server, ws = open_server(maxmsgsize=1000)
    first = ws.send(BytesMessage(data=b"\x00" + bytes(600), message_finished=False))
    second = ws.send(BytesMessage(data=bytes(600)))
    assert server.receive_data(first) == []
    with pytest.raises(ProtocolError, match="after 601 bytes of its message exceeds"):
        server.receive_data(second[:14])
