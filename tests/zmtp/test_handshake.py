"""The NULL handshake: READY bytes, end-to-end pairs, and every refusal."""

from __future__ import annotations

import pytest

from trizmq._errors import StateError
from trizmq.zmtp import (
    HANDSHAKE_FRAME_LIMIT,
    Cancel,
    Connection,
    HandshakeComplete,
    PeerError,
    ProtocolError,
    Subscribe,
)

from .helpers import (
    ConnectionPair,
    connection,
    past_greeting,
    raw_command,
    raw_frame,
    raw_greeting,
    raw_ready,
)

# libzmq-wire-notes §2.2, byte for byte
DEALER_READY = b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00"
SUB_READY = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB"


def _ready_of(socket_type: str, **kwargs: object) -> bytes:
    conn = connection(socket_type, **kwargs)  # type: ignore[arg-type]
    conn.start()
    conn.receive_data(raw_greeting())
    return past_greeting(conn, conn.data_to_send())


def test_dealer_ready_bytes() -> None:
    assert _ready_of("DEALER") == DEALER_READY


def test_sub_ready_bytes() -> None:
    assert _ready_of("SUB") == SUB_READY


def test_identity_and_application_metadata_order() -> None:
    ready = _ready_of("REQ", identity=b"me", metadata={"X-App": b"v1"})
    assert ready == raw_ready((b"Socket-Type", b"REQ"), (b"Identity", b"me"), (b"X-App", b"v1"))


def test_identity_only_sent_by_req_dealer_router() -> None:
    assert b"Identity" in _ready_of("ROUTER")
    assert b"Identity" not in _ready_of("PAIR", identity=b"ignored")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"identity": b"x" * 256},
        {"metadata": {"Foo": b""}},
        {"metadata": {"X-": b""}},
        {"maxmsgsize": -2},
    ],
)
def test_constructor_rejects_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        connection("DEALER", **kwargs)  # type: ignore[arg-type]


def test_constructor_rejects_unknown_socket_type() -> None:
    # a type the table does not hold has no row to tell the connection its peers
    with pytest.raises(KeyError, match="DGRAM"):
        connection("DGRAM")
    # and the connection itself takes only a Socket-Type it can announce
    for name in ("", "DÉALER"):
        with pytest.raises(ValueError, match="socket type"):
            Connection(name, peers=())


def test_dealer_router_with_identity() -> None:
    pair = ConnectionPair(connection("DEALER", identity=b"worker-1"), connection("ROUTER"))
    pair.handshake()
    (a_done,) = pair.a_events
    (b_done,) = pair.b_events
    assert b_done == HandshakeComplete(
        "DEALER", b"worker-1", {"Socket-Type": b"DEALER", "Identity": b"worker-1"}, (3, 1)
    )
    assert a_done == HandshakeComplete(
        "ROUTER", b"", {"Socket-Type": b"ROUTER", "Identity": b""}, (3, 1)
    )
    assert pair.b.peer_identity == b"worker-1"
    assert pair.b.peer_socket_type == "DEALER"
    assert pair.b.peer_metadata == b_done.metadata
    assert pair.a.peer_version == (3, 1)

    pair.a_sends(pair.a.encode_message([b"", b"request"]))
    pair.b_sends(pair.b.encode_message([b"", b"reply", b"x" * 1000]))
    a_new, b_new = pair.pump()
    assert b_new == [[b"", b"request"]]
    assert a_new == [[b"", b"reply", b"x" * 1000]]


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
def test_pub_sub_end_to_end(chunk: int | None) -> None:
    pair = ConnectionPair(
        connection("SUB", metadata={"X-Name": b"sub"}), connection("XPUB"), chunk=chunk
    )
    pair.handshake()
    assert pair.b.peer_metadata == {"Socket-Type": b"SUB", "X-Name": b"sub"}
    assert pair.a.peer_identity == b""
    pair.a_sends(pair.a.encode_subscribe(b"weather"))
    pair.b_sends(pair.b.encode_message([b"weather", b"sunny"]))
    pair.a_sends(pair.a.encode_cancel(b"weather"))
    a_new, b_new = pair.pump()
    assert a_new == [[b"weather", b"sunny"]]
    assert b_new == [Subscribe(b"weather"), Cancel(b"weather")]


def test_missing_socket_type_is_tolerated() -> None:
    conn = connection("PUSH")
    conn.start()
    (event,) = conn.receive_data(raw_greeting() + raw_ready((b"X-Other", b"1")))
    assert isinstance(event, HandshakeComplete)
    assert event.socket_type == ""
    assert conn.peer_socket_type == ""


def test_socket_type_is_matched_case_sensitively_by_name() -> None:
    # a "socket-type" property is just metadata: not checked, not the Socket-Type
    conn = connection("PUSH")
    conn.start()
    (event,) = conn.receive_data(raw_greeting() + raw_ready((b"socket-type", b"PUB")))
    assert isinstance(event, HandshakeComplete)
    assert event.socket_type == ""
    assert event.metadata == {"socket-type": b"PUB"}


def _refused(data: bytes, socket_type: str = "PUSH", **kwargs: object) -> str:
    conn = connection(socket_type, **kwargs)  # type: ignore[arg-type]
    conn.start()
    with pytest.raises(ProtocolError) as info:
        conn.receive_data(data)
    with pytest.raises(ProtocolError):
        conn.receive_data(b"\x00\x00")
    assert conn.closed
    return info.value.reason


def test_incompatible_socket_type() -> None:
    reason = _refused(raw_greeting() + raw_ready((b"Socket-Type", b"PUB")))
    assert reason == "incompatible socket type: PUSH cannot talk to PUB"


def test_unknown_socket_type_is_incompatible() -> None:
    reason = _refused(raw_greeting() + raw_ready((b"Socket-Type", b"push")))
    assert "PUSH cannot talk to push" in reason


def test_socket_type_check_can_be_disabled() -> None:
    conn = connection("PUSH", peers=None)  # a test's raw peer: any type
    conn.start()
    (event,) = conn.receive_data(raw_greeting() + raw_ready((b"Socket-Type", b"PUB")))
    assert isinstance(event, HandshakeComplete)
    assert event.socket_type == "PUB"


def test_identity_longer_than_255_refused() -> None:
    reason = _refused(
        raw_greeting() + raw_ready((b"Socket-Type", b"DEALER"), (b"Identity", b"i" * 256)),
        "ROUTER",
    )
    assert "identity" in reason


@pytest.mark.parametrize(
    "body",
    [
        b"\x0bSocket-Type\x00\x00\x00\x04PULL\x00",  # stray trailing byte
        b"\x0bSocket-Type\x00\x00\x00\x05PULL",  # value runs past the end
        b"\x0bSocket-Type\x00\x00",  # truncated value size
        b"\x0bSocket",  # truncated name
    ],
)
def test_truncated_metadata_refused(body: bytes) -> None:
    reason = _refused(raw_greeting() + raw_command(b"READY", body))
    assert "malformed metadata" in reason


def test_second_ready_refused_in_same_chunk() -> None:
    ready = raw_ready((b"Socket-Type", b"PULL"))
    reason = _refused(raw_greeting() + ready + ready)
    assert "READY" in reason


def test_second_ready_refused_later() -> None:
    conn = connection("PUSH")
    conn.start()
    ready = raw_ready((b"Socket-Type", b"PULL"))
    conn.receive_data(raw_greeting() + ready)
    assert conn.handshake_complete
    with pytest.raises(ProtocolError, match="READY"):
        conn.receive_data(ready)


@pytest.mark.parametrize("name", [b"HELLO", b"PING", b"SUBSCRIBE"])
def test_other_command_during_handshake_refused(name: bytes) -> None:
    reason = _refused(raw_greeting() + raw_command(name, b"\x00\x00"))
    assert name.decode() in reason


def test_message_frame_before_handshake_refused_on_header() -> None:
    # only the 2-byte header: refused before any of the body is kept
    reason = _refused(raw_greeting() + b"\x00\x05")
    assert "before the handshake" in reason
    _refused(raw_greeting() + b"\x02" + (10**12).to_bytes(8, "big"))


def test_handshake_command_cap() -> None:
    conn = connection("PUSH")
    conn.start()
    at_cap = b"\x06" + HANDSHAKE_FRAME_LIMIT.to_bytes(8, "big")
    assert conn.receive_data(raw_greeting() + at_cap) == []  # waits for the body
    reason = _refused(raw_greeting() + b"\x06" + (HANDSHAKE_FRAME_LIMIT + 1).to_bytes(8, "big"))
    assert "limit" in reason


def test_handshake_cap_ignores_maxmsgsize() -> None:
    # a tiny maxmsgsize must not break the READY exchange
    conn = connection("PUSH", maxmsgsize=4)
    conn.start()
    conn.receive_data(raw_greeting() + raw_ready((b"Socket-Type", b"PULL")))
    assert conn.handshake_complete


@pytest.mark.parametrize("flags", [0x08, 0x10, 0x80, 0x0C, 0xFF])
def test_reserved_flags_refused_during_handshake(flags: int) -> None:
    reason = _refused(raw_greeting() + bytes((flags,)))
    assert "reserved" in reason


@pytest.mark.parametrize("flags", [0x05, 0x07])
def test_command_with_more_refused_during_handshake(flags: int) -> None:
    reason = _refused(raw_greeting() + bytes((flags,)))
    assert "MORE" in reason


@pytest.mark.parametrize("body", [b"", b"\x00READY", b"\x09READY"])
def test_malformed_command_name_refused(body: bytes) -> None:
    _refused(raw_greeting() + raw_frame(0x04, body))


def test_peer_error_during_handshake_finishes_connection() -> None:
    conn = connection("PUSH")
    conn.start()
    events = conn.receive_data(
        raw_greeting() + raw_command(b"ERROR", b"\x0cno thank you") + b"garbage"
    )
    assert events == [PeerError("no thank you")]
    assert conn.closed
    assert not conn.handshake_complete
    with pytest.raises(ProtocolError, match="ERROR"):
        conn.receive_data(b"")


def test_peer_error_with_inconsistent_length_is_still_reported() -> None:
    conn = connection("PUSH")
    conn.start()
    assert conn.receive_data(raw_greeting() + raw_command(b"ERROR", b"oops")) == [PeerError("oops")]


def test_encoders_need_a_complete_handshake() -> None:
    conn = connection("SUB")
    conn.start()
    for call in (
        lambda: conn.encode_message([b"x"]),
        lambda: conn.encode_messages_into(bytearray(), [[b"x"]]),
        lambda: conn.encode_message_into(bytearray(), [b"x"]),
        lambda: conn.encode_subscribe(b""),
        lambda: conn.encode_cancel(b""),
        lambda: conn.encode_ping(1.0),
        lambda: conn.encode_pong(b""),
        lambda: conn.encode_join(b"g"),
        lambda: conn.encode_leave(b"g"),
    ):
        with pytest.raises(StateError):
            call()
    # ERROR is the one command meant for the handshake
    assert conn.encode_error("go away") == b"\x04\x0e\x05ERROR\x07go away"


def test_handshake_commands_received_counts_the_peer_commands_only() -> None:
    """What a server reads to tell a peer that greeted from one that only connected."""
    conn = connection("PULL")
    conn.start()
    greeting = raw_greeting()
    conn.receive_data(greeting[:40])
    assert (conn.peer_version, conn.handshake_commands_received) == ((0, 0), 0)
    conn.receive_data(greeting[40:])
    assert (conn.peer_version, conn.handshake_commands_received) == ((3, 1), 0)
    ready = raw_ready((b"Socket-Type", b"PUSH"))
    conn.receive_data(ready[:5])
    assert conn.handshake_commands_received == 0  # a partial command does not count
    conn.receive_data(ready[5:])
    assert conn.handshake_commands_received == 1
    assert conn.handshake_complete
