"""``Connection.bare_messages``: a one-frame message comes as its bytes, whatever the
path that parsed it; messages of several frames and every command stay as they were.
And runs of one-frame messages alike (fixed-size records), which the parser takes in
one go, parse exactly as frame by frame would, in either form."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trizmq.zmtp import CurveServerMechanism, ProtocolError, Subscribe

from .helpers import connection, feed, handshaken, raw_command, raw_frame
from .test_curve import SERVER_SECRET, RawCurveClient, ready_server

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

    conn = connection("PULL")
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


def test_encrypted_one_frame_messages_keep_maxmsgsize() -> None:
    # maxmsgsize 12: a body of 10 and its 2-byte header fit, 11 does not, bare or not
    raw = RawCurveClient()
    conn = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET), maxmsgsize=12)
    conn.start()
    ready_server(raw, conn)
    conn.bare_messages = True
    data = raw.message(3, 0, b"x" * 10) + raw.message(4, 0, b"") + raw.message(5, 0, b"y" * 5)
    assert conn.receive_data(data) == [b"x" * 10, b"", b"y" * 5]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(raw.message(6, 0, b"x" * 11))


# -- runs of one-frame messages alike (fixed-size records) are taken in one go ----------

#: a stretch of traffic: a run of ``count`` one-frame messages of one body, or one
#: message of several frames, or a command
stretches = st.one_of(
    st.tuples(st.integers(1, 400), st.binary(max_size=255)).map(lambda t: [[t[1]]] * t[0]),
    st.lists(st.binary(max_size=300), min_size=2, max_size=3).map(lambda m: [m]),
    st.binary(max_size=8).map(lambda topic: [Subscribe(topic)]),
)


def wire(event: object) -> bytes:
    if isinstance(event, Subscribe):
        return raw_command(b"SUBSCRIBE", event.topic)
    assert isinstance(event, list)
    last = len(event) - 1
    return b"".join(raw_frame(MORE if i < last else 0, f) for i, f in enumerate(event))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(stretches, min_size=1, max_size=6),
    st.sampled_from([None, 1, 3, 64, 1000]),
    st.booleans(),
)
def test_runs_parse_as_frame_by_frame(
    plan: list[list[object]], chunk: int | None, bare: bool
) -> None:
    expected = [event for stretch in plan for event in stretch]
    conn = handshaken(socket_type="XPUB", peer_type=b"XSUB")
    conn.bare_messages = bare
    got = feed(conn, b"".join(wire(e) for e in expected), chunk)
    assert got == (bared(expected) if bare else expected)


def test_a_run_over_the_limit_is_refused() -> None:
    conn = handshaken(socket_type="PULL", peer_type=b"PUSH", maxmsgsize=10)
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(raw_frame(0, b"x" * 20) * 50)
    assert conn.closed


def test_a_run_stops_at_the_first_frame_unlike_it() -> None:
    conn = handshaken(socket_type="PULL", peer_type=b"PUSH")
    conn.bare_messages = True
    data = raw_frame(0, b"a" * 5) * 20 + raw_frame(0, b"b" * 6) + raw_frame(0, b"c" * 5) * 20
    data += raw_frame(MORE, b"d" * 5) + raw_frame(0, b"e" * 5)
    assert conn.receive_data(data) == [b"aaaaa"] * 20 + [b"bbbbbb"] + [b"ccccc"] * 20 + [
        [b"ddddd", b"eeeee"]
    ]
