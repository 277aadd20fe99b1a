"""The codec of lz4+tcp:// and zstd+tcp:// (``CompressedConnection``), sans I/O.

Two codecs wired together in memory: the handshake is ZMTP's, a dictionary given
to the socket is shipped as it ends, messages are compressed between the message
and the ZMTP frame (so CURVE encrypts the compressed part), commands are not, and a
violation kills the connection for good.
"""

from __future__ import annotations

from typing import Any

import pytest

from trizmq.zmtp import (
    CurveClientMechanism,
    CurveServerMechanism,
    HandshakeComplete,
    ProtocolError,
    Subscribe,
    ZapReply,
    curve_keypair,
)
from trizmq.zmtp.compressed import WIRE_SLACK, CompressedConnection, wire_limit
from trizmq.zmtp.compression import DEFAULT_LIMIT

from .helpers import ConnectionPair, connection, raw_frame, raw_greeting, raw_ready
from .omq_vectors import LZ4_DICT, TEXT, ZSTD_DICT

SCHEMES = ["lz4+tcp", "zstd+tcp"]


def compressed(socket_type: str, **kw: Any) -> CompressedConnection:
    """A codec told its socket type's row of the table, as the runtime tells it."""
    maxmsgsize = kw.pop("maxmsgsize", -1)
    transform = ("scheme", "level", "dictionary", "auto_train")
    outer = {key: kw.pop(key) for key in transform if key in kw}
    inner = connection(socket_type, maxmsgsize=wire_limit(maxmsgsize), **kw)
    return CompressedConnection(inner, maxmsgsize=maxmsgsize, **outer)


def _pair(scheme: str, a_type: str = "PUSH", b_type: str = "PULL", **kw: Any) -> ConnectionPair:
    a = compressed(a_type, scheme=scheme, **kw)
    b = compressed(b_type, scheme=scheme)
    return ConnectionPair(a, b).handshake()  # type: ignore[arg-type]


def _send(pair: ConnectionPair, frames: list[bytes]) -> bytes:
    out = bytearray()
    pair.a.message_encoder()(out, frames)
    return bytes(out)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("chunk", [None, 7])
def test_messages_cross_compressed(scheme: str, chunk: int | None) -> None:
    pair = _pair(scheme)
    pair.chunk = chunk
    messages = [[b"hi"], [TEXT], [b"a", TEXT * 3, b""]]
    wire = b"".join(_send(pair, m) for m in messages)
    assert len(wire) < sum(len(p) for m in messages for p in m) // 5
    pair.a_sends(wire)
    _, received = pair.pump()
    assert ConnectionPair.messages(received) == messages
    b = pair.b
    assert b.received_bytes == sum(len(p) for m in messages for p in m)
    counts = b.part_counts  # type: ignore[attr-defined]
    assert counts.wire_received < b.received_bytes
    assert pair.a.part_counts.wire_sent == counts.wire_received  # type: ignore[attr-defined]


@pytest.mark.parametrize(("scheme", "dictionary"), [("lz4+tcp", LZ4_DICT), ("zstd+tcp", ZSTD_DICT)])
def test_a_dictionary_is_shipped_as_the_handshake_ends(scheme: str, dictionary: bytes) -> None:
    a = compressed("DEALER", scheme=scheme, dictionary=dictionary)
    b = compressed("ROUTER", scheme=scheme)
    pair = ConnectionPair(a, b).handshake()  # type: ignore[arg-type]
    # nothing reached the application: the shipment was consumed
    assert ConnectionPair.messages(pair.b_events) == []
    assert b.transform.peer_dictionary == dictionary
    assert a.transform.shipment() is None  # taken by data_to_send()
    pair.a_sends(_send(pair, [TEXT[:200]]))
    _, received = pair.pump()
    assert ConnectionPair.messages(received) == [[TEXT[:200]]]
    assert a.part_counts.wire_sent == b.part_counts.wire_received  # shipment counted


@pytest.mark.parametrize("scheme", SCHEMES)
def test_curve_encrypts_the_compressed_parts(scheme: str) -> None:
    server_public, server_secret = curve_keypair()
    client_public, client_secret = curve_keypair()
    a = compressed(
        "PUSH",
        scheme=scheme,
        mechanism=CurveClientMechanism(server_public, client_public, client_secret),
        dictionary=LZ4_DICT if scheme == "lz4+tcp" else ZSTD_DICT,
    )
    b = compressed("PULL", scheme=scheme, mechanism=CurveServerMechanism(server_secret))
    pair = ConnectionPair(a, b)  # type: ignore[arg-type]
    pair.pump()
    assert b.pending_zap is not None  # the runtime asks ZAP: admit
    pair.b_events += b.zap_reply(ZapReply("200", "OK"))
    pair.b_sends(b.data_to_send())
    pair.pump()
    assert a.handshake_complete and b.handshake_complete
    wire = _send(pair, [TEXT * 4])
    assert TEXT[:40] not in wire and len(wire) < 300  # compressed, then boxed
    pair.a_sends(wire)
    _, received = pair.pump()
    assert ConnectionPair.messages(received) == [[TEXT * 4]]


def test_commands_are_not_compressed() -> None:
    pair = _pair("zstd+tcp", "SUB", "PUB")
    pair.a_sends(pair.a.encode_subscribe(b"topic"))
    _, received = pair.pump()
    assert received == [Subscribe(b"topic")]


def test_bare_one_frame_messages() -> None:
    pair = _pair("lz4+tcp")
    pair.b.bare_messages = True
    pair.a_sends(_send(pair, [TEXT]) + _send(pair, [b"x", b"y"]))
    _, received = pair.pump()
    assert received == [TEXT, [b"x", b"y"]]


def test_a_zmtp_30_peer_is_refused() -> None:
    conn = compressed("PULL", scheme="lz4+tcp")
    conn.start()
    with pytest.raises(ProtocolError, match=r"needs a ZMTP 3\.1 peer, not 3\.0"):
        conn.receive_data(raw_greeting(3, 0) + raw_ready((b"Socket-Type", b"PUSH")))


def _handshaken(scheme: str = "lz4+tcp", **kw: Any) -> CompressedConnection:
    conn = compressed("PULL", scheme=scheme, **kw)
    conn.start()
    events = conn.receive_data(raw_greeting() + raw_ready((b"Socket-Type", b"PUSH")))
    assert isinstance(events[0], HandshakeComplete)
    conn.data_to_send()
    return conn


def test_a_violation_kills_the_connection() -> None:
    conn = _handshaken()
    with pytest.raises(ProtocolError, match="unknown lz4 sentinel"):
        conn.receive_data(raw_frame(0, b"NOPE-payload"))
    assert conn.closed
    with pytest.raises(ProtocolError, match="unknown lz4 sentinel"):
        conn.receive_data(raw_frame(0, b"\x00\x00\x00\x00ok"))


def test_the_limits() -> None:
    conn = _handshaken(maxmsgsize=1000)
    assert conn.receive_data(raw_frame(0, b"\x00" * 4 + b"x" * 1000)) == [[b"x" * 1000]]
    with pytest.raises(ProtocolError, match="exceeds the 1000-byte limit") as caught:
        conn.receive_data(raw_frame(0, b"\x00" * 4 + b"x" * 1001))
    assert caught.value.cause == "limit"
    # on the wire: the limit and the slack, refused at the frame's header
    conn = _handshaken(maxmsgsize=1000)
    header = b"\x02" + (1000 + WIRE_SLACK + 1).to_bytes(8, "big")
    with pytest.raises(ProtocolError, match="exceeds maxmsgsize") as caught:
        conn.receive_data(header)
    assert caught.value.cause == "limit"
    unset = _handshaken()
    assert unset.transform.limit == DEFAULT_LIMIT
