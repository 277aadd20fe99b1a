"""ZMTP 2.0 peers (RFC 15) driven byte by byte: the staged greeting that tells them
apart, their socket-type byte and identity frame, their traffic, and every refusal.

The peer's bytes are written here from RFC 15's grammar, independently of
``trizmq.zmtp.zmtp2``: signature, revision 1, socket type, an identity frame, then
frames whose flags are MORE and LONG only.
"""

from __future__ import annotations

import struct

import pytest

from trizmq._errors import StateError
from trizmq.zmtp import (
    Connection,
    CurveClientMechanism,
    CurveServerMechanism,
    HandshakeComplete,
    PlainClientMechanism,
    PlainServerMechanism,
    ProtocolError,
    SubscriptionRefused,
    curve_keypair,
)

from .helpers import connection, feed

#: every versioned greeting's first 10 bytes (ours: padding 00..01)
SIGNATURE = bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f")
#: RFC 15's socket-type numbers, and libzmq's for XPUB and XSUB
RFC15_TYPES = {
    "PAIR": 0,
    "PUB": 1,
    "SUB": 2,
    "REQ": 3,
    "REP": 4,
    "DEALER": 5,
    "ROUTER": 6,
    "PULL": 7,
    "PUSH": 8,
}
LIBZMQ_TYPES = {**RFC15_TYPES, "XPUB": 9, "XSUB": 10}
#: a peer of each type that may talk to it, for the types that speak ZMTP 2.0
PARTNER = {
    "PAIR": "PAIR",
    "PUB": "SUB",
    "SUB": "PUB",
    "REQ": "REP",
    "REP": "REQ",
    "DEALER": "ROUTER",
    "ROUTER": "DEALER",
    "PULL": "PUSH",
    "PUSH": "PULL",
    "XPUB": "SUB",
    "XSUB": "PUB",
}
DRAFT_TYPES = ["SERVER", "CLIENT", "RADIO", "DISH", "SCATTER", "GATHER", "PEER", "CHANNEL"]


def peer_greeting(socket_type: str, padding: bytes = b"\x00" * 7 + b"\x01") -> bytes:
    """A ZMTP 2.0 peer's 12-byte greeting (a libzmq 3 or JeroMQ peer with an identity
    of n bytes puts n + 1 in the padding; nobody may read it)."""
    return b"\xff" + padding + b"\x7f" + b"\x01" + bytes((LIBZMQ_TYPES[socket_type],))


def short(body: bytes, more: bool = False) -> bytes:
    return bytes((0x01 if more else 0x00, len(body))) + body


def long(body: bytes, more: bool = False) -> bytes:
    return bytes((0x03 if more else 0x02,)) + struct.pack(">Q", len(body)) + body


def handshaken(socket_type: str, peer: str, identity: bytes = b"", **kwargs: object) -> Connection:
    """Our Connection of ``socket_type`` through its handshake with a 2.0 ``peer``."""
    conn = connection(socket_type, **kwargs)  # type: ignore[arg-type]
    conn.start()
    (done,) = conn.receive_data(peer_greeting(peer) + short(identity))
    assert isinstance(done, HandshakeComplete)
    conn.data_to_send()
    return conn


# -- the greeting, in stages ------------------------------------------------------------


def test_greeting_in_stages_answers_a_revision_one_peer_in_zmtp_2() -> None:
    conn = connection("PULL")
    assert conn.start() == SIGNATURE
    peer = peer_greeting("PUSH")
    for i in range(9):
        assert conn.receive_data(peer[i : i + 1]) == []
        assert conn.data_to_send() == b"", i
    # its signature is in: our major version (3, as libzmq sends to every peer)
    assert conn.receive_data(peer[9:10]) == []
    assert conn.data_to_send() == b"\x03"
    # its revision is 1: our socket type, and no mechanism or rest of a ZMTP 3 greeting
    assert conn.receive_data(peer[10:11]) == []
    assert conn.data_to_send() == bytes((RFC15_TYPES["PULL"],))
    assert conn.peer_version == (0, 0)
    # its socket type is in: our identity frame (empty for a PULL)
    assert conn.receive_data(peer[11:12]) == []
    assert conn.data_to_send() == b"\x00\x00"
    assert conn.peer_version == (2, 0)
    assert not conn.handshake_complete
    # its identity frame ends the handshake
    assert conn.receive_data(b"\x00") == []
    (done,) = conn.receive_data(b"\x00")
    assert done == HandshakeComplete("PUSH", b"", {}, (2, 0))
    assert conn.handshake_complete
    assert conn.peer_socket_type == "PUSH"
    assert conn.peer_metadata == {}
    assert conn.data_to_send() == b""


def test_whole_greeting_identity_and_messages_in_one_read() -> None:
    conn = connection("PULL")
    conn.start()
    data = peer_greeting("PUSH") + short(b"") + short(b"a", more=True) + short(b"b") + long(b"c")
    done, first, second = conn.receive_data(data)
    assert isinstance(done, HandshakeComplete) and done.version == (2, 0)
    assert (first, second) == ([b"a", b"b"], [b"c"])
    # every stage of ours, in order, in one flush
    assert conn.data_to_send() == b"\x03" + bytes((RFC15_TYPES["PULL"],)) + b"\x00\x00"


@pytest.mark.parametrize("chunk", [1, 2, 5, 13])
def test_handshake_and_traffic_split_anywhere(chunk: int) -> None:
    conn = connection("PULL")
    conn.start()
    body = b"x" * 300
    data = peer_greeting("PUSH") + long(b"id") + short(b"a", more=True) + long(body) + short(b"")
    events = feed(conn, data, chunk)
    assert events[0] == HandshakeComplete("PUSH", b"id", {}, (2, 0))
    assert events[1:] == [[b"a", body], [b""]]


def test_padding_of_a_peer_with_an_identity_is_not_read() -> None:
    conn = connection("ROUTER")
    conn.start()
    greeting = peer_greeting("DEALER", padding=b"\x00" * 7 + b"\x06")  # identity 5 bytes + 1
    (done,) = conn.receive_data(greeting + short(b"peer1"))
    assert isinstance(done, HandshakeComplete)
    assert conn.peer_identity == b"peer1"


def test_a_greeting_sent_whole_cannot_downgrade() -> None:
    conn = connection("PULL")
    conn.start(staged=False)
    with pytest.raises(ProtocolError, match=r"ZMTP 2\.0"):
        conn.receive_data(peer_greeting("PUSH"))


# -- socket types --------------------------------------------------------------------------


@pytest.mark.parametrize("ours", sorted(PARTNER))
def test_our_socket_type_byte(ours: str) -> None:
    conn = connection(ours)
    conn.start()
    conn.receive_data(peer_greeting(PARTNER[ours])[:11])
    # RFC 15: XPUB and XSUB are PUB and SUB on the wire
    expected = RFC15_TYPES[ours.removeprefix("X")]
    assert conn.data_to_send() == b"\x03" + bytes((expected,))


@pytest.mark.parametrize("theirs", sorted(LIBZMQ_TYPES))
def test_every_peer_socket_type_byte(theirs: str) -> None:
    ours = PARTNER[theirs]
    conn = connection(ours)
    conn.start()
    (done,) = conn.receive_data(peer_greeting(theirs) + short(b""))
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == theirs == conn.peer_socket_type


@pytest.mark.parametrize(
    ("ours", "theirs"), [("PULL", "PULL"), ("PUB", "PUB"), ("REQ", "DEALER"), ("SUB", "XSUB")]
)
def test_incompatible_peer_socket_type_refused_at_its_byte(ours: str, theirs: str) -> None:
    conn = connection(ours)
    conn.start()
    with pytest.raises(ProtocolError, match="incompatible socket type") as info:
        conn.receive_data(peer_greeting(theirs))
    assert info.value.cause == "socket_type"
    assert conn.closed


def test_socket_type_check_is_off_without_a_set_of_peers() -> None:
    conn = connection("PULL", peers=None)
    conn.start()
    (done,) = conn.receive_data(peer_greeting("PULL") + short(b""))
    assert isinstance(done, HandshakeComplete) and done.socket_type == "PULL"


@pytest.mark.parametrize("code", [11, 12, 0x7F, 0xFF])
def test_unknown_socket_type_byte_refused(code: int) -> None:
    conn = connection("PULL", peers=None)
    conn.start()
    with pytest.raises(ProtocolError, match=f"socket type {code}") as info:
        conn.receive_data(SIGNATURE + b"\x01" + bytes((code,)))
    assert info.value.cause == "socket_type"


@pytest.mark.parametrize("ours", DRAFT_TYPES)
def test_a_type_zmtp_2_has_no_number_for_is_refused_before_it_answers(ours: str) -> None:
    conn = connection(ours)
    conn.start()
    with pytest.raises(ProtocolError, match=f"no {ours} socket type") as info:
        conn.receive_data(SIGNATURE + b"\x01")
    assert info.value.cause == "socket_type"
    assert conn.data_to_send() == b"\x03"  # the major version went, nothing after it


# -- identity ------------------------------------------------------------------------------


@pytest.mark.parametrize("ours", ["REQ", "DEALER", "ROUTER"])
def test_our_identity_frame(ours: str) -> None:
    conn = connection(ours, identity=b"me")
    conn.start()
    conn.receive_data(peer_greeting(PARTNER[ours]))
    assert conn.data_to_send().endswith(b"\x00\x02me")


def test_types_without_an_identity_send_an_empty_frame() -> None:
    conn = connection("PAIR", identity=b"ignored")
    conn.start()
    conn.receive_data(peer_greeting("PAIR"))
    assert conn.data_to_send() == b"\x03" + bytes((RFC15_TYPES["PAIR"],)) + b"\x00\x00"


@pytest.mark.parametrize("frame", [short(b"i" * 255), long(b"i" * 255), long(b"")])
def test_identity_up_to_255_bytes_in_either_form(frame: bytes) -> None:
    conn = connection("ROUTER")
    conn.start()
    (done,) = conn.receive_data(peer_greeting("DEALER") + frame)
    assert isinstance(done, HandshakeComplete)
    expected = frame[9:] if frame[0] == 0x02 else frame[2:]
    assert done.identity == conn.peer_identity == expected


def test_oversize_identity_refused_at_its_header() -> None:
    conn = connection("ROUTER")
    conn.start()
    conn.receive_data(peer_greeting("DEALER"))
    # a long header declaring 256 bytes (or 2^40): refused before any body comes
    with pytest.raises(ProtocolError, match="identity of 256 bytes exceeds 255"):
        conn.receive_data(b"\x02" + struct.pack(">Q", 256))
    conn = connection("ROUTER")
    conn.start()
    with pytest.raises(ProtocolError, match="exceeds 255"):
        conn.receive_data(peer_greeting("DEALER") + b"\x02" + struct.pack(">Q", 2**40))


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (0x01, "MORE flag"),
        (0x03, "MORE flag"),
        (0x04, "COMMAND frame from a ZMTP 2.0 peer"),
        (0x06, "COMMAND frame"),
        (0x80, "reserved frame flag bits"),
    ],
)
def test_identity_frame_flags_checked(flags: int, reason: str) -> None:
    conn = connection("ROUTER")
    conn.start()
    with pytest.raises(ProtocolError, match=reason):
        conn.receive_data(peer_greeting("DEALER") + bytes((flags,)))
    assert conn.closed


def test_zmtp3_identity_bound_unchanged_for_ours() -> None:
    with pytest.raises(ValueError, match="255"):
        connection("DEALER", identity=b"x" * 256)


# -- traffic -------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [0x04, 0x05, 0x06, 0x07])
def test_a_command_flag_in_traffic_is_a_protocol_error(flags: int) -> None:
    conn = handshaken("PULL", "PUSH")
    with pytest.raises(ProtocolError, match=r"COMMAND frame from a ZMTP 2\.0 peer"):
        conn.receive_data(short(b"ok") + bytes((flags, 6)) + b"\x04PING")
    assert conn.closed
    with pytest.raises(ProtocolError):
        conn.receive_data(b"")


def test_a_command_flag_after_part_of_a_message_is_refused_too() -> None:
    conn = handshaken("PULL", "PUSH")
    assert conn.receive_data(short(b"part", more=True)) == []
    with pytest.raises(ProtocolError, match="COMMAND frame"):
        conn.receive_data(b"\x04\x05READY")


def test_reserved_flag_bits_in_traffic_refused() -> None:
    conn = handshaken("PULL", "PUSH")
    with pytest.raises(ProtocolError, match="reserved frame flag bits set"):
        conn.receive_data(b"\x10\x00")


def test_messages_encode_as_zmtp3_messages_do() -> None:
    conn = handshaken("PUSH", "PULL")
    big = b"y" * 256
    assert conn.encode_message([b"a", big]) == short(b"a", more=True) + long(big)


def test_maxmsgsize_and_max_frames_hold() -> None:
    conn = handshaken("PULL", "PUSH", maxmsgsize=10)
    with pytest.raises(ProtocolError, match="maxmsgsize") as info:
        conn.receive_data(b"\x02" + struct.pack(">Q", 2**40))
    assert info.value.cause == "limit"
    conn = handshaken("PULL", "PUSH", max_frames=2)
    assert conn.receive_data(short(b"1", more=True) + short(b"2")) == [[b"1", b"2"]]
    with pytest.raises(ProtocolError, match="max_frames"):
        conn.receive_data(short(b"1", more=True) + short(b"2", more=True) + short(b"3"))


def test_no_commands_go_to_a_zmtp_2_peer() -> None:
    conn = handshaken("DEALER", "ROUTER")
    with pytest.raises(StateError, match="no commands"):
        conn.encode_ping(1.0)
    with pytest.raises(StateError, match="no commands"):
        conn.encode_pong(b"")
    # a refusal has no ERROR to say it with: the connection only closes
    assert conn.encode_error("400") == b""


# -- subscriptions as data frames ----------------------------------------------------------


def test_sub_subscribes_and_cancels_with_data_frames() -> None:
    conn = handshaken("SUB", "PUB")
    assert conn.encode_subscribe(b"topic") == b"\x00\x06\x01topic"
    assert conn.encode_cancel(b"topic") == b"\x00\x06\x00topic"
    assert conn.encode_subscribe(b"") == b"\x00\x01\x01"


@pytest.mark.parametrize("ours", ["PUB", "XPUB"])
def test_publisher_reads_subscriptions_as_data_frames(ours: str) -> None:
    conn = handshaken(ours, "SUB")
    events = conn.receive_data(short(b"\x01news") + short(b"\x00news"))
    assert events == [[b"\x01news"], [b"\x00news"]]
    assert conn.commands_parsed == 0  # messages, for the strategy to read


def test_subscription_over_the_bound_is_refused_at_its_header() -> None:
    conn = handshaken("PUB", "SUB", max_subscription=4)
    # a 1 MiB topic: refused from its first bytes, the rest counted off, never kept
    topic = b"t" * (1 << 20)
    frame = long(b"\x01" + topic)
    assert conn.receive_data(frame[:20]) == []
    assert conn.receive_data(frame[20:-1]) == []
    assert conn.receive_data(frame[-1:] + short(b"\x01ok")) == [
        SubscriptionRefused(len(topic)),
        [b"\x01ok"],
    ]


# -- NULL only -----------------------------------------------------------------------------


def _plain_client() -> Connection:
    return connection("DEALER", mechanism=PlainClientMechanism(b"u", b"p"))


def _plain_server() -> Connection:
    return connection("ROUTER", mechanism=PlainServerMechanism())


def _curve_client() -> Connection:
    server_public, _ = curve_keypair()
    public, secret = curve_keypair()
    return connection("DEALER", mechanism=CurveClientMechanism(server_public, public, secret))


def _curve_server() -> Connection:
    return connection("ROUTER", mechanism=CurveServerMechanism(curve_keypair()[1]))


@pytest.mark.parametrize("make", [_plain_client, _plain_server, _curve_client, _curve_server])
def test_plain_and_curve_refuse_a_zmtp_2_peer(make: object) -> None:
    conn = make()  # type: ignore[operator]
    conn.start()
    peer = peer_greeting("ROUTER" if conn.socket_type == "DEALER" else "DEALER")
    assert conn.receive_data(peer[:10]) == []
    with pytest.raises(ProtocolError, match="no security mechanism") as info:
        conn.receive_data(peer[10:] + short(b""))
    assert info.value.cause == "downgrade"
    assert conn.closed
    # nothing went out after the major version: no socket type, no identity
    assert conn.data_to_send() == b"\x03"
