"""``Connection.bare_messages``: a one-frame message comes as its bytes, whatever the
path that parsed it; messages of several frames and every command stay as they were."""

from __future__ import annotations

import pytest

from trizmq.zmtp import Connection, Subscribe

from .helpers import feed, handshaken, raw_command, raw_frame
from .test_curve import RawCurveClient, ready_server

MORE = 0x01


def stream() -> tuple[bytes, list[object]]:
    """Wire bytes covering every framing path, and the messages they carry as lists."""
    big = b"B" * (200 * 1024)  # collected piece by piece (the big-frame path)
    parts = [
        (raw_frame(0, b"short"), [b"short"]),
        (raw_frame(0, b"L" * 300), [b"L" * 300]),  # long header
        (raw_frame(0, b""), [b""]),
        (raw_frame(MORE, b"a") + raw_frame(0, b"b"), [b"a", b"b"]),
        (raw_command(b"SUBSCRIBE", b"topic"), Subscribe(b"topic")),
        (raw_frame(0, big), [big]),
        (raw_frame(MORE, b"head") + raw_frame(0, big), [b"head", big]),
        (raw_frame(0, b"last"), [b"last"]),
    ]
    return b"".join(wire for wire, _ in parts), [event for _, event in parts]


def bared(events: list[object]) -> list[object]:
    """``events`` as a connection with bare_messages returns them."""
    return [e[0] if isinstance(e, list) and len(e) == 1 else e for e in events]


def test_lists_unless_asked() -> None:
    conn = handshaken(socket_type="XPUB", peer_type=b"XSUB")
    data, expected = stream()
    assert not conn.bare_messages
    assert feed(conn, data) == expected


@pytest.mark.parametrize("chunk", [None, 1, 7, 4096, 65536])
def test_one_frame_messages_come_bare(chunk: int | None) -> None:
    conn = handshaken(socket_type="XPUB", peer_type=b"XSUB")
    conn.bare_messages = True
    data, expected = stream()
    got = feed(conn, data, chunk)
    assert got == bared(expected)
    assert [type(e) for e in got] == [type(e) for e in bared(expected)]


def test_leftovers_of_the_handshake_come_bare() -> None:
    from .helpers import raw_greeting, raw_ready

    conn = Connection("PULL")
    conn.bare_messages = True
    conn.start()
    events = conn.receive_data(
        raw_greeting(3, 1) + raw_ready((b"Socket-Type", b"PUSH")) + raw_frame(0, b"early")
    )
    assert conn.handshake_complete
    assert events[-1] == b"early"


def test_encrypted_one_frame_messages_come_bare() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    conn.bare_messages = True
    data = raw.message(3, 0, b"one") + raw.message(4, MORE, b"a") + raw.message(5, 0, b"b")
    assert conn.receive_data(data) == [b"one", [b"a", b"b"]]
