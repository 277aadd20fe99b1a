"""Frames after the handshake: encoding boundaries, decoding, splits, atomicity, limits."""

from __future__ import annotations

import tracemalloc

import pytest

from trizmq.zmtp import Connection, Ping, ProtocolError, Subscribe

from .helpers import connection, feed, handshaken, raw_command, raw_frame, raw_greeting, raw_ready


@pytest.fixture
def conn() -> Connection:
    return handshaken()


@pytest.mark.parametrize(
    ("size", "header"),
    [
        (0, b"\x00\x00"),
        (1, b"\x00\x01"),
        (255, b"\x00\xff"),
        (256, b"\x02\x00\x00\x00\x00\x00\x00\x01\x00"),
        (70000, b"\x02\x00\x00\x00\x00\x00\x01\x11\x70"),
    ],
)
def test_single_frame_boundaries(conn: Connection, size: int, header: bytes) -> None:
    body = b"z" * size
    assert conn.encode_message([body]) == header + body


def test_multipart_flags(conn: Connection) -> None:
    big = b"b" * 256
    assert conn.encode_message([b"a", big, b"", b"c" * 255]) == (
        b"\x01\x01a"
        + b"\x03\x00\x00\x00\x00\x00\x00\x01\x00"
        + big
        + b"\x01\x00"
        + b"\x00\xff"
        + b"c" * 255
    )


def test_buffer_types_accepted(conn: Connection) -> None:
    frames: list[bytes | bytearray | memoryview] = [bytearray(b"ab"), memoryview(b"cd"), b"ef"]
    assert conn.encode_message(frames) == b"\x01\x02ab\x01\x02cd\x00\x02ef"


def test_empty_message_is_a_local_error(conn: Connection) -> None:
    with pytest.raises(ValueError):
        conn.encode_message([])


def test_batch_encoders_match_single(conn: Connection) -> None:
    messages = [[b"x"], [b"", b"y" * 300], [b"a", b"b", b"c"]]
    out = bytearray(b"prefix")
    conn.encode_messages_into(out, messages)
    expected = b"prefix" + b"".join(conn.encode_message(m) for m in messages)
    assert out == expected
    one_by_one = bytearray(b"prefix")
    for message in messages:
        conn.encode_message_into(one_by_one, message)
    assert one_by_one == expected


def test_decode_round_trip(conn: Connection) -> None:
    messages = [[b"x"], [b"", b"y" * 300], [b"a", b"b", b"c"], [b""]]
    data = b"".join(conn.encode_message(m) for m in messages)
    assert conn.receive_data(data) == messages


def test_accepts_buffer_types(conn: Connection) -> None:
    assert conn.receive_data(bytearray(b"\x00\x01a")) == [[b"a"]]
    assert conn.receive_data(memoryview(b"\x00\x01b")) == [[b"b"]]


def test_long_form_for_small_frame_accepted(conn: Connection) -> None:
    assert conn.receive_data(raw_frame(0x00, b"tiny", long=True)) == [[b"tiny"]]
    assert conn.receive_data(raw_command(b"SUBSCRIBE", b"t", long=True)) == [Subscribe(b"t")]


def test_multipart_atomicity(conn: Connection) -> None:
    assert conn.receive_data(raw_frame(0x01, b"one")) == []
    assert conn.receive_data(raw_frame(0x01, b"two")) == []
    # a command between the frames of a message is reported at once
    assert conn.receive_data(raw_command(b"PING", b"\x00\x00")) == [Ping(0.0, b"")]
    assert conn.receive_data(raw_frame(0x00, b"three") + raw_frame(0x01, b"next")) == [
        [b"one", b"two", b"three"]
    ]
    assert conn.receive_data(raw_frame(0x00, b"")) == [[b"next", b""]]


def _stream() -> bytes:
    """A whole session from a ROUTER peer: greeting, READY, then mixed traffic."""
    return (
        raw_greeting()
        + raw_ready((b"Socket-Type", b"ROUTER"), (b"X-Pad", b"p" * 40))
        + raw_frame(0x01, b"")
        + raw_frame(0x00, b"hello")
        + raw_command(b"PING", b"\x00\x0actx")
        + raw_frame(0x01, b"m" * 300)
        + raw_command(b"SUBSCRIBE", b"topic", long=True)
        + raw_frame(0x00, b"end")
        + raw_frame(0x00, b"", long=True)
        + raw_command(b"PONG")
    )


def _parse_in_pieces(*pieces: bytes) -> list[object]:
    conn = connection("DEALER")
    conn.start()
    events: list[object] = []
    for piece in pieces:
        events += conn.receive_data(piece)
    return events


def test_split_at_every_byte_boundary() -> None:
    data = _stream()
    whole = _parse_in_pieces(data)
    assert len(whole) == 7
    assert whole[1] == [b"", b"hello"]
    assert whole[2] == Ping(1.0, b"ctx")
    for cut in range(1, len(data)):
        assert _parse_in_pieces(data[:cut], data[cut:]) == whole, cut


def test_split_three_ways_and_byte_by_byte() -> None:
    data = _stream()
    whole = _parse_in_pieces(data)
    for cut in range(64, len(data), 13):
        for second in range(cut, len(data), 17):
            pieces = (data[:cut], data[cut:second], data[second:])
            assert _parse_in_pieces(*pieces) == whole, (cut, second)
    conn = connection("DEALER")
    conn.start()
    assert feed(conn, data, chunk=1) == whole


def test_large_frame_in_many_chunks(conn: Connection) -> None:
    body = bytes(range(256)) * 4000
    data = conn.encode_message([body, b"tail"])
    events = feed(conn, data, chunk=4096)
    assert events == [[body, b"tail"]]


@pytest.mark.parametrize("flags", [0x08, 0x10, 0x20, 0x40, 0x80, 0x09])
def test_reserved_flag_bits_refused(conn: Connection, flags: int) -> None:
    with pytest.raises(ProtocolError, match="reserved"):
        conn.receive_data(bytes((flags,)))
    with pytest.raises(ProtocolError):
        conn.receive_data(b"\x00\x00")


@pytest.mark.parametrize("flags", [0x05, 0x07])
def test_command_with_more_refused(conn: Connection, flags: int) -> None:
    with pytest.raises(ProtocolError, match="MORE"):
        conn.receive_data(bytes((flags, 5)) + b"\x04PING")


def test_oversize_short_frame_refused_on_header() -> None:
    # maxmsgsize counts the wire size: 10 bytes and their 2-byte header
    conn = handshaken(maxmsgsize=12)
    assert conn.receive_data(b"\x00\x0a" + b"x" * 10) == [[b"x" * 10]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x01\x0b")  # header only: no body byte was sent


def test_oversize_long_frame_refused_as_soon_as_header_is_whole() -> None:
    conn = handshaken(maxmsgsize=1000)
    header = b"\x02" + (1 << 40).to_bytes(8, "big")
    assert conn.receive_data(header[:5]) == []
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(header[5:])


def test_maxmsgsize_applies_to_commands_after_handshake() -> None:
    conn = handshaken(maxmsgsize=10)
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(raw_command(b"SUBSCRIBE", b"toolong"))


def test_size_beyond_grammar_refused(conn: Connection) -> None:
    with pytest.raises(ProtocolError, match="2\\^63"):
        conn.receive_data(b"\x02" + b"\xff" * 8)


def test_declared_size_is_never_preallocated(conn: Connection) -> None:
    tracemalloc.start()
    try:
        assert conn.receive_data(b"\x02" + (1 << 50).to_bytes(8, "big") + b"abc") == []
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000


def test_message_before_version_3_1_subscribe_is_plain_data() -> None:
    # the legacy \x01topic form is ordinary data: the socket layer interprets it
    conn = handshaken("XPUB", b"SUB")
    assert conn.receive_data(raw_frame(0x00, b"\x01topic")) == [[b"\x01topic"]]
