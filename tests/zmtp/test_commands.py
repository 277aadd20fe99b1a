"""Traffic commands: exact bytes out (wire notes §4.1, §5.1, §6.1) and events in."""

from __future__ import annotations

import pytest

from trizmq.zmtp import (
    Cancel,
    Connection,
    Join,
    Leave,
    PeerError,
    Ping,
    Pong,
    ProtocolError,
    Subscribe,
    UnknownCommand,
)

from .helpers import handshaken, raw_command, raw_frame


@pytest.fixture
def conn() -> Connection:
    return handshaken("SUB", b"PUB")


def test_subscribe_cancel_to_3_1_peer_are_commands(conn: Connection) -> None:
    assert conn.encode_subscribe(b"topic") == b"\x04\x0f\x09SUBSCRIBE" + b"topic"
    assert conn.encode_cancel(b"topic") == b"\x04\x0c\x06CANCEL" + b"topic"
    assert conn.encode_subscribe(b"") == b"\x04\x0a\x09SUBSCRIBE"


@pytest.mark.parametrize("version", [(3, 2), (4, 0)])
def test_higher_versions_get_commands(version: tuple[int, int]) -> None:
    conn = handshaken("SUB", b"PUB", version=version)
    assert conn.encode_subscribe(b"t") == b"\x04\x0b\x09SUBSCRIBE" + b"t"


def test_subscribe_cancel_to_3_0_peer_are_legacy_messages() -> None:
    conn = handshaken("SUB", b"PUB", version=(3, 0))
    assert conn.peer_version == (3, 0)
    assert conn.encode_subscribe(b"topic") == b"\x00\x06\x01topic"
    assert conn.encode_cancel(b"topic") == b"\x00\x06\x00topic"


def test_long_subscribe_forms() -> None:
    topic = b"t" * 300
    new = handshaken("SUB", b"PUB")
    assert (
        new.encode_subscribe(topic) == b"\x06" + (310).to_bytes(8, "big") + b"\x09SUBSCRIBE" + topic
    )
    old = handshaken("SUB", b"PUB", version=(3, 0))
    assert old.encode_cancel(topic) == b"\x02" + (301).to_bytes(8, "big") + b"\x00" + topic


def test_ping_bytes(conn: Connection) -> None:
    assert conn.encode_ping(0) == b"\x04\x07\x04PING\x00\x00"
    assert conn.encode_ping(1.5) == b"\x04\x07\x04PING\x00\x0f"
    assert conn.encode_ping(1.5, b"ctx") == b"\x04\x0a\x04PING\x00\x0fctx"


@pytest.mark.parametrize(
    ("ttl", "wire"), [(-3.0, 0), (0.04, 0), (0.06, 1), (6553.5, 65535), (1e9, 65535)]
)
def test_ping_ttl_clamped(conn: Connection, ttl: float, wire: int) -> None:
    assert conn.encode_ping(ttl)[-2:] == wire.to_bytes(2, "big")


def test_ping_context_limit(conn: Connection) -> None:
    assert conn.encode_ping(0, b"c" * 16).endswith(b"c" * 16)
    with pytest.raises(ValueError):
        conn.encode_ping(0, b"c" * 17)


def test_pong_bytes(conn: Connection) -> None:
    assert conn.encode_pong(b"") == b"\x04\x05\x04PONG"
    assert conn.encode_pong(b"ctx") == b"\x04\x08\x04PONGctx"
    with pytest.raises(ValueError):
        conn.encode_pong(b"c" * 17)


def test_join_leave_bytes() -> None:
    dish = handshaken("DISH", b"RADIO")
    assert dish.encode_join(b"grp") == bytes.fromhex("04 08 04 4A 4F 49 4E 67 72 70")
    assert dish.encode_leave(b"grp") == bytes.fromhex("04 09 05 4C 45 41 56 45 67 72 70")
    with pytest.raises(ValueError):
        dish.encode_join(b"g" * 256)
    with pytest.raises(ValueError):
        dish.encode_leave(b"g" * 256)


def test_error_bytes_and_truncation(conn: Connection) -> None:
    assert conn.encode_error("") == b"\x04\x07\x05ERROR\x00"
    long = conn.encode_error("e" * 300)
    assert long[:2] == b"\x06\x00" and long[9:16] == b"\x05ERROR\xff"
    assert long[16:] == b"e" * 255
    # never cut inside a UTF-8 character
    accented = conn.encode_error("e" * 254 + "\u00e9")
    assert accented[15:] == b"\xfe" + b"e" * 254


@pytest.mark.parametrize(
    ("frame", "event"),
    [
        (raw_command(b"SUBSCRIBE", b"abc"), Subscribe(b"abc")),
        (raw_command(b"SUBSCRIBE"), Subscribe(b"")),
        (raw_command(b"CANCEL", b"abc"), Cancel(b"abc")),
        (raw_command(b"PING", b"\x00\x00"), Ping(0.0, b"")),
        (raw_command(b"PING", b"\x01\x00hello"), Ping(25.6, b"hello")),
        (raw_command(b"PING", b"\x00\x01" + b"c" * 20), Ping(0.1, b"c" * 16)),
        (raw_command(b"PONG", b"hello"), Pong(b"hello")),
        (raw_command(b"PONG"), Pong(b"")),
        (raw_command(b"JOIN", b"grp"), Join(b"grp")),
        (raw_command(b"LEAVE", b"grp"), Leave(b"grp")),
        (raw_command(b"HELLO", b"\x00\x01"), UnknownCommand(b"HELLO", b"\x00\x01")),
        (raw_command(b"subscribe", b"x"), UnknownCommand(b"subscribe", b"x")),
    ],
)
def test_command_events(conn: Connection, frame: bytes, event: object) -> None:
    assert conn.receive_data(frame) == [event]


def test_commands_round_trip_between_encoders_and_decoder(conn: Connection) -> None:
    peer = handshaken("PUB", b"SUB")
    data = (
        conn.encode_subscribe(b"a")
        + conn.encode_cancel(b"a")
        + conn.encode_ping(2.5, b"xy")
        + conn.encode_pong(b"xy")
    )
    assert peer.receive_data(data) == [Subscribe(b"a"), Cancel(b"a"), Ping(2.5, b"xy"), Pong(b"xy")]


@pytest.mark.parametrize("data", [b"", b"\x00"])
def test_short_ping_refused(conn: Connection, data: bytes) -> None:
    with pytest.raises(ProtocolError, match="TTL"):
        conn.receive_data(raw_command(b"PING", data))


@pytest.mark.parametrize("body", [b"", b"\x00", b"\x05PING"])
def test_malformed_command_refused(conn: Connection, body: bytes) -> None:
    with pytest.raises(ProtocolError):
        conn.receive_data(raw_frame(0x04, body))


def test_error_after_handshake_finishes_connection(conn: Connection) -> None:
    events = conn.receive_data(
        raw_frame(0x00, b"before") + raw_command(b"ERROR", b"\x03bye") + raw_frame(0x00, b"after")
    )
    assert events == [[b"before"], PeerError("bye")]
    assert conn.closed
    assert conn.handshake_complete
    with pytest.raises(ProtocolError):
        conn.receive_data(b"")
