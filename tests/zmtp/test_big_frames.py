"""Large message frames: their bodies are collected apart and joined once.

Whatever the split of the input, the events are those of feeding it in one
piece; limits still apply at the header; ``in_message`` holds while a large body
is arriving; errors after a large frame are the ones an unsplit feed raises.
"""

from __future__ import annotations

import copy
import itertools
import random
import tracemalloc
from collections.abc import Iterable

import pytest

from trizmq.zmtp import Connection, Ping, ProtocolError, Received, Subscribe

from .helpers import feed, handshaken, raw_command, raw_frame

KIB = 1024
MIB = 1024 * KIB


def body(size: int, seed: int) -> bytes:
    """``size`` bytes that differ from frame to frame, so a misplaced cut shows."""
    return random.Random(seed).randbytes(size)


def message(*frames: bytes) -> bytes:
    """The wire form of one message: MORE on every frame but the last."""
    last = len(frames) - 1
    return b"".join(raw_frame(0x01 if i < last else 0x00, f) for i, f in enumerate(frames))


BIG_64K = body(64 * KIB, 1)
BIG_1M = body(MIB, 2)
BIG_3M = body(3 * MIB, 3)
JUST_UNDER = body(64 * KIB - 1, 4)

#: a stream of small and large messages and commands, with the events it must give
PLAN: list[tuple[bytes, Received | None]] = [
    (message(b"hello"), [b"hello"]),
    (message(BIG_64K), [BIG_64K]),
    (message(JUST_UNDER), [JUST_UNDER]),
    (raw_command(b"PING", b"\x00\x0actx"), Ping(1.0, b"ctx")),
    (message(BIG_1M), [BIG_1M]),
    # a large frame, then small frames of the next messages in the same chunk
    (message(BIG_64K, b"tail"), [BIG_64K, b"tail"]),
    (message(b"x"), [b"x"]),
    (message(b"", b"y" * 300), [b"", b"y" * 300]),
    # large frames with MORE, a command between the frames of the message
    (raw_frame(0x01, BIG_3M) + raw_frame(0x01, BIG_1M), None),
    (raw_command(b"SUBSCRIBE", b"topic"), Subscribe(b"topic")),
    (raw_frame(0x01, b"mid") + raw_frame(0x00, BIG_64K), [BIG_3M, BIG_1M, b"mid", BIG_64K]),
    (message(b""), [b""]),
    (message(BIG_1M, BIG_1M, b"z"), [BIG_1M, BIG_1M, b"z"]),
]
STREAM = b"".join(wire for wire, _ in PLAN)
EXPECTED = [event for _, event in PLAN if event is not None]

#: only small and 64 KiB frames, with its events written out: a quick byte-by-byte case
SMALL_STREAM = b"".join(
    [
        message(b"a"),
        message(BIG_64K),
        raw_command(b"PING", b"\x00\x00"),
        message(BIG_64K, b"after", BIG_64K),
        message(b"b"),
    ]
)
SMALL_EXPECTED: list[Received] = [
    [b"a"],
    [BIG_64K],
    Ping(0.0, b""),
    [BIG_64K, b"after", BIG_64K],
    [b"b"],
]


def feed_pieces(conn: Connection, pieces: Iterable[bytes | bytearray]) -> list[Received]:
    """Feed each piece in turn; collect the output."""
    events: list[Received] = []
    for piece in pieces:
        events += conn.receive_data(piece)
    return events


def feed_traced(
    conn: Connection, pieces: Iterable[bytes | bytearray]
) -> tuple[list[Received], int]:
    """:func:`feed_pieces` under tracemalloc: the output and the peak bytes allocated."""
    tracemalloc.start()
    try:
        events = feed_pieces(conn, pieces)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return events, peak


def cut(data: bytes, points: Iterable[int]) -> list[bytes]:
    """``data`` cut at each of ``points``."""
    bounds = [0, *sorted(set(points)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def random_points(data: bytes, seed: int) -> list[int]:
    """Cuts at random places, pieces from 1 byte to a few hundred KiB."""
    rng = random.Random(seed)
    points: list[int] = []
    pos = 0
    while True:
        pos += rng.choice([1, 2, 9, 10, rng.randrange(1, 5000), rng.randrange(1, 400_000)])
        if pos >= len(data):
            return points
        points.append(pos)


def test_whole_stream_in_one_piece() -> None:
    assert handshaken().receive_data(STREAM) == EXPECTED


@pytest.mark.parametrize("chunk", [1, 9, 1000, 4095, 4096, 65535, 65536, 65537, 262144, 3 * MIB])
def test_same_events_whatever_the_chunk_size(chunk: int) -> None:
    conn = handshaken()
    assert feed(conn, STREAM, chunk) == EXPECTED
    assert not conn.in_message


def test_byte_by_byte() -> None:
    conn = handshaken()
    assert conn.receive_data(SMALL_STREAM) == SMALL_EXPECTED
    conn = handshaken()
    assert feed(conn, SMALL_STREAM, 1) == SMALL_EXPECTED
    assert not conn.in_message


@pytest.mark.parametrize("seed", range(8))
def test_random_splits(seed: int) -> None:
    conn = handshaken()
    assert feed_pieces(conn, cut(STREAM, random_points(STREAM, seed))) == EXPECTED
    assert not conn.in_message


def test_buffer_types_and_reused_buffers() -> None:
    # a reader that receives into one bytearray and hands over views of it
    conn = handshaken()
    scratch = bytearray(100_000)
    events: list[Received] = []
    for piece in cut(STREAM, range(100_000, len(STREAM), 100_000)):
        scratch[: len(piece)] = piece
        events += conn.receive_data(memoryview(scratch)[: len(piece)])
        scratch[:] = bytes(len(scratch))  # overwritten before the next read
    assert events == EXPECTED
    conn = handshaken()
    pieces = cut(STREAM, range(300_000, len(STREAM), 300_000))
    assert feed_pieces(conn, map(bytearray, pieces)) == EXPECTED


@pytest.mark.parametrize("size", [64 * KIB, MIB])
def test_frame_ending_on_a_chunk_boundary(size: int) -> None:
    big = body(size, 5)
    frame = raw_frame(0x00, big)
    nxt = message(b"next")
    conn = handshaken()
    assert conn.receive_data(frame[:5000]) == []
    assert conn.receive_data(frame[5000:-1000]) == []
    assert conn.in_message
    # the chunk ends exactly where the body does: the message is out, nothing is held
    assert conn.receive_data(frame[-1000:]) == [[big]]
    assert not conn.in_message
    assert conn.receive_data(nxt) == [[b"next"]]
    # and with nothing after the header in the first chunk
    conn = handshaken()
    assert conn.receive_data(frame[:9]) == []
    assert conn.in_message
    assert conn.receive_data(frame[9:]) == [[big]]
    assert not conn.in_message


@pytest.mark.parametrize("header_cut", range(1, 10))
def test_header_split_before_a_large_body(header_cut: int) -> None:
    big = body(200 * KIB, 6)
    data = message(b"s") + message(big, b"t")
    start = len(message(b"s"))
    conn = handshaken()
    pieces = cut(data, [start + header_cut, start + 9 + 70_000])
    assert feed_pieces(conn, pieces) == [[b"s"], [big, b"t"]]


def test_large_frame_followed_by_small_frames_in_the_last_chunk() -> None:
    big = body(MIB, 7)
    smalls = [message(bytes([i]) * i) for i in range(20)]
    data = raw_frame(0x00, big) + b"".join(smalls)
    conn = handshaken()
    assert conn.receive_data(data[:300_000]) == []
    events = conn.receive_data(data[300_000:])
    assert events == [[big]] + [[bytes([i]) * i] for i in range(20)]


@pytest.mark.parametrize("first", [0, 1, 4095, 4096, 50_000, 99_999, 150_000])
def test_large_frame_after_many_small_ones_in_a_chunk(first: int) -> None:
    # however much of the body comes with the small messages, the result is the same
    smalls = [message(b"%d" % i * 10) for i in range(5000)]
    big = body(300 * KIB, 17)
    data = b"".join(smalls) + raw_frame(0x01, big) + message(b"last")
    cut_at = len(data) - len(big) - len(message(b"last")) + first
    conn = handshaken()
    events = conn.receive_data(data[:cut_at])
    assert len(events) == 5000 and conn.in_message
    assert conn.receive_data(data[cut_at:]) == [[big, b"last"]]


def test_in_message_while_a_large_frame_is_half_received() -> None:
    big = body(MIB, 8)
    conn = handshaken()
    assert not conn.in_message
    frame = raw_frame(0x00, big)
    assert conn.receive_data(frame[: len(frame) // 2]) == []
    assert conn.in_message
    assert conn.receive_data(frame[len(frame) // 2 :]) == [[big]]
    assert not conn.in_message
    # a complete large frame with MORE leaves the message unfinished
    assert conn.receive_data(raw_frame(0x01, big)[:100_000]) == []
    assert conn.in_message
    assert conn.receive_data(raw_frame(0x01, big)[100_000:]) == []
    assert conn.in_message
    assert conn.receive_data(raw_frame(0x00, b"end")) == [[big, b"end"]]
    assert not conn.in_message


def test_maxmsgsize_refuses_a_large_frame_at_its_header() -> None:
    # maxmsgsize counts the wire size: a MIB body and its 9-byte header fit exactly
    conn = handshaken(maxmsgsize=MIB + 9)
    big = body(MIB, 9)
    assert feed(conn, raw_frame(0x00, big), 65536) == [[big]]
    header = raw_frame(0x00, body(MIB + 1, 9))[:9]
    assert conn.receive_data(header[:4]) == []
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(header[4:])  # header only: no body byte was sent
    assert conn.closed
    assert not conn.in_message
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(b"\x00\x00")


def test_maxmsgsize_checks_each_large_frame_of_a_message() -> None:
    # the whole message counts: two frames of 100 KiB and their headers fit exactly,
    # one byte more in the second is refused at its header
    conn = handshaken(maxmsgsize=2 * (100 * KIB + 9))
    ok = body(100 * KIB, 10)
    data = raw_frame(0x01, ok) + raw_frame(0x00, body(100 * KIB + 1, 10))
    assert conn.receive_data(data[:50_000]) == []
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(data[50_000 : len(ok) + 9 + 9])  # through the second header
    assert not conn.in_message


def test_error_after_a_large_frame_is_the_unsplit_one() -> None:
    big = body(MIB, 11)
    data = raw_frame(0x00, big) + b"\x08"  # a reserved flag bit
    with pytest.raises(ProtocolError, match="reserved") as whole:
        handshaken().receive_data(data)
    conn = handshaken()
    assert conn.receive_data(data[:500_000]) == []
    with pytest.raises(ProtocolError, match="reserved") as split:
        conn.receive_data(data[500_000:])
    assert split.value.reason == whole.value.reason
    assert conn.closed
    assert not conn.in_message
    with pytest.raises(ProtocolError, match="reserved"):
        conn.receive_data(b"")


def test_peer_error_after_a_large_frame() -> None:
    big = body(MIB, 12)
    data = raw_frame(0x00, big) + raw_command(b"ERROR", b"\x03bye") + message(b"ignored")
    whole = handshaken().receive_data(data)
    assert whole[0] == [big] and len(whole) == 2
    conn = handshaken()
    assert feed_pieces(conn, [data[:500_000], data[500_000:]]) == whole
    assert conn.closed


def test_commands_stay_on_the_buffered_path() -> None:
    topic = body(200 * KIB, 13)
    data = raw_command(b"SUBSCRIBE", topic) + message(b"m")
    conn = handshaken()
    assert feed(conn, data, 65536) == [Subscribe(topic), [b"m"]]


def test_deep_copy_while_a_large_frame_is_arriving() -> None:
    big = body(MIB, 14)
    data = message(b"a", big) + message(b"b")
    conn = handshaken()
    assert conn.receive_data(data[:300_000]) == []
    twin = copy.deepcopy(conn)
    assert conn.receive_data(data[300_000:]) == [[b"a", big], [b"b"]]
    assert twin.receive_data(data[300_000:]) == [[b"a", big], [b"b"]]


def test_a_large_body_is_copied_about_once() -> None:
    # inputs made before tracing: all the decoder allocates is the body and small change
    size = 4 * MIB
    big = body(size, 15)
    pieces = cut(raw_frame(0x00, big), range(262144, size + 9, 262144))
    events, peak = feed_traced(handshaken(), pieces)
    assert events == [[big]]
    assert peak < size + 64 * KIB  # buffered first, it was held twice at the peak


def test_trickled_bytes_cost_no_object_each() -> None:
    size = 200 * KIB
    frame = raw_frame(0x00, body(size, 16))
    pieces = [frame[:1000], *(frame[i : i + 1] for i in range(1000, len(frame)))]
    events, peak = feed_traced(handshaken(), pieces)
    assert events == [[frame[9:]]]
    assert peak < 3 * size
