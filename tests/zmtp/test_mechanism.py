"""The mechanism plug-in seams: frame wrapping (as CURVE will use) and the ZAP pause."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from trizmq._errors import StateError
from trizmq.zmtp import (
    Command,
    HandshakeComplete,
    Mechanism,
    NullMechanism,
    PeerError,
    Ping,
    ProtocolError,
    Subscribe,
    ZapReply,
    ZapRequest,
    decode_metadata,
    encode_metadata,
)
from trizmq.zmtp.frames import encode_frame

from .helpers import ConnectionPair, connection, past_greeting, raw_command, raw_frame, raw_greeting


class Wrapping(Mechanism):
    """A toy encrypting mechanism: each frame becomes a message frame ``flags | body``."""

    name = b"WRAP-TEST"
    handshake_commands = frozenset({b"READY"})
    encrypts = True
    overhead = 1

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        return [(b"READY", encode_metadata(local_metadata))]

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        if name != b"READY":
            raise ProtocolError("unexpected command")
        self.peer_metadata = decode_metadata(body)
        self.complete = True
        return []

    def encode_frame(self, flags: int, body: bytes | bytearray | memoryview) -> bytes:
        return encode_frame(0, bytes((flags,)) + bytes(body))

    def decode_frame(self, body: bytes) -> tuple[int, bytes]:
        return body[0], body[1:]


class ZapServer(Mechanism):
    """A toy server that asks ZAP about the client's HELLO before sending READY."""

    name = b"ZAP-TEST"
    handshake_commands = frozenset({b"HELLO", b"READY"})

    def __init__(self) -> None:
        super().__init__(as_server=True)
        self.local = b""

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self.local = encode_metadata(local_metadata)
        return []

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        self.peer_metadata = decode_metadata(body)
        self.pending_zap = ZapRequest(self.name, (body,))
        return []

    def on_zap_reply(self, reply: ZapReply) -> list[Command]:
        self.pending_zap = None
        if reply.status_code != "200":
            return [(b"ERROR", b"\x03" + reply.status_code.encode())]
        self.complete = True
        return [(b"READY", self.local)]


class ZapClient(Mechanism):
    name = b"ZAP-TEST"
    handshake_commands = frozenset({b"HELLO", b"READY"})

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        return [(b"HELLO", encode_metadata(local_metadata))]

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        self.peer_metadata = decode_metadata(body)
        self.complete = True
        return []


def test_null_mechanism_defaults() -> None:
    mechanism = NullMechanism()
    assert mechanism.name == b"NULL"
    assert mechanism.as_server is False
    assert not mechanism.encrypts
    assert connection("PAIR").mechanism.name == b"NULL"


def test_greeting_carries_mechanism_and_as_server() -> None:
    greeting = connection("PAIR", mechanism=ZapServer()).start(staged=False)
    assert greeting[12:32] == b"ZAP-TEST".ljust(20, b"\x00")
    assert greeting[32] == 1


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_wrapped_traffic_end_to_end(chunk: int | None) -> None:
    pair = ConnectionPair(
        connection("SUB", mechanism=Wrapping()),
        connection("PUB", mechanism=Wrapping()),
        chunk=chunk,
    ).handshake()
    sub, pub = pair.a, pair.b
    subscribe = sub.encode_subscribe(b"t")
    assert subscribe == raw_frame(0x00, b"\x04\x09SUBSCRIBEt")  # wrapped, outer flags 00
    pair.a_sends(subscribe + sub.encode_ping(1.0))
    out = bytearray()
    pub.encode_messages_into(out, [[b"t", b"body" * 100], [b"t2"]])
    pair.b_sends(bytes(out) + pub.encode_message([b"last"]))
    a_new, b_new = pair.pump()
    assert b_new == [Subscribe(b"t"), Ping(1.0, b"")]
    assert a_new == [[b"t", b"body" * 100], [b"t2"], [b"last"]]


def test_wrapped_inner_flags_checked() -> None:
    conn = connection("PAIR", mechanism=Wrapping())
    conn.start()
    conn.receive_data(raw_greeting(mechanism=b"WRAP-TEST") + raw_command(b"READY"))
    assert conn.handshake_complete
    with pytest.raises(ProtocolError, match="inner"):
        conn.receive_data(raw_frame(0x00, b"\x05\x04PING\x00\x00"))


def test_wrapped_maxmsgsize_counts_the_overhead() -> None:
    # the plaintext counts with its header: 4 bytes and a 2-byte header
    conn = connection("PAIR", mechanism=Wrapping(), maxmsgsize=6)
    conn.start()
    conn.receive_data(raw_greeting(mechanism=b"WRAP-TEST") + raw_command(b"READY"))
    assert conn.receive_data(raw_frame(0x00, b"\x00abcd")) == [[b"abcd"]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x00\x06")


def test_zap_pause_and_resume() -> None:
    server = connection("ROUTER", mechanism=ZapServer())
    server.start()
    hello = raw_command(b"HELLO", encode_metadata({"Socket-Type": b"DEALER"}))
    # the client's first message arrives with the HELLO: it must wait for the verdict
    events = server.receive_data(raw_greeting(mechanism=b"ZAP-TEST") + hello + b"\x00\x02hi")
    assert events == []
    assert server.pending_zap == ZapRequest(b"ZAP-TEST", (hello[8:],))
    assert server.receive_data(b"\x00\x01!") == []
    events = server.zap_reply(ZapReply("200", "OK"))
    assert isinstance(events[0], HandshakeComplete)
    assert events[1:] == [[b"hi"], [b"!"]]
    assert past_greeting(server, server.data_to_send()).startswith(b"\x04\x29\x05READY")
    with pytest.raises(StateError):
        server.zap_reply(ZapReply("200"))


def test_zap_end_to_end_and_rejection() -> None:
    pair = ConnectionPair(
        connection("DEALER", mechanism=ZapClient()), connection("ROUTER", mechanism=ZapServer())
    )
    pair.pump()
    assert pair.b.pending_zap is not None
    (done,) = pair.b.zap_reply(ZapReply("200"))
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == "DEALER"
    pair.b_sends(pair.b.data_to_send())
    pair.handshake()
    assert pair.a.peer_socket_type == "ROUTER"

    pair = ConnectionPair(
        connection("DEALER", mechanism=ZapClient()), connection("ROUTER", mechanism=ZapServer())
    )
    pair.pump()
    assert pair.b.zap_reply(ZapReply("400")) == []
    pair.b_sends(pair.b.data_to_send())
    a_new, _ = pair.pump()
    assert a_new == [PeerError("400")]


def test_flood_while_zap_pending_refused() -> None:
    server = connection("ROUTER", mechanism=ZapServer())
    server.start()
    hello = raw_command(b"HELLO", encode_metadata({"Socket-Type": b"DEALER"}))
    server.receive_data(raw_greeting(mechanism=b"ZAP-TEST") + hello)
    with pytest.raises(ProtocolError, match="pending"):
        server.receive_data(bytes(70_000))
