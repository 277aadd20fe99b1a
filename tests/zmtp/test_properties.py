"""Property tests: how input is split never matters, and bad input only raises ProtocolError.

For any byte sequence fed to a Connection (NULL, PLAIN server, CURVE server; fresh
or already handshaken), delivering it in arbitrary pieces gives exactly the events
of delivering it at once, or both ways raise :class:`ProtocolError`; nothing else
is ever raised. A pending ZAP request is answered with 200 as soon as it appears.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trizmq.zmtp import (
    Connection,
    CurveClientMechanism,
    CurveServerMechanism,
    PlainClientMechanism,
    PlainServerMechanism,
    ProtocolError,
    Received,
    ZapReply,
    curve_keypair,
)

from .helpers import ConnectionPair, connection, raw_command, raw_frame, raw_greeting, raw_ready

SERVER_PUBLIC, SERVER_SECRET = curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = curve_keypair()


def _valid_hello() -> bytes:
    client = connection(
        "DEALER", mechanism=CurveClientMechanism(SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET)
    )
    client.start()
    client.receive_data(raw_greeting(mechanism=b"CURVE", as_server=1))
    return client.data_to_send()


#: a genuine CURVE HELLO to SERVER_PUBLIC, so that WELCOME and INITIATE get reached
VALID_HELLO = _valid_hello()

FRESH: dict[str, Callable[[], Connection]] = {
    "NULL": lambda: connection("DEALER"),
    "PLAIN": lambda: connection("ROUTER", mechanism=PlainServerMechanism()),
    "CURVE": lambda: connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET)),
}

COMMAND_NAMES = [
    b"READY",
    b"HELLO",
    b"WELCOME",
    b"INITIATE",
    b"ERROR",
    b"PING",
    b"PONG",
    b"SUBSCRIBE",
    b"CANCEL",
    b"MESSAGE",
    b"X",
]

frames = st.one_of(
    st.builds(
        raw_frame,
        st.sampled_from([0x00, 0x01, 0x04, 0x05, 0x08, 0x41]),
        st.binary(max_size=300),
        long=st.sampled_from([None, True]),
    ),
    st.builds(raw_command, st.sampled_from(COMMAND_NAMES), st.binary(max_size=300)),
    # handshake commands of the sizes that get past the length checks
    st.builds(
        lambda tail: raw_command(b"HELLO", b"\x01\x00" + tail),
        st.binary(min_size=192, max_size=192),
    ),
    st.builds(lambda tail: raw_command(b"INITIATE", tail), st.binary(min_size=248, max_size=300)),
    st.builds(
        lambda user, pw: raw_command(b"HELLO", user + pw),
        st.binary(min_size=1, max_size=4),
        st.binary(min_size=1, max_size=4),
    ),
    st.just(VALID_HELLO),
    st.just(raw_ready((b"Socket-Type", b"ROUTER"))),
    st.just(raw_ready((b"Socket-Type", b"DEALER"), (b"Identity", b"id"))),
)


def fresh_input(mechanism: bytes) -> st.SearchStrategy[bytes]:
    greeting = st.sampled_from(
        [raw_greeting(mechanism=mechanism), raw_greeting(3, 0, mechanism), raw_greeting()]
    )
    return st.one_of(
        st.binary(max_size=200),
        st.builds(lambda g, fs: g + b"".join(fs), greeting, st.lists(frames, max_size=6)),
        st.builds(
            lambda g, fs, junk: g + b"".join(fs) + junk,
            greeting,
            st.lists(frames, max_size=3),
            st.binary(max_size=20),
        ),
    )


def run(conn: Connection, pieces: list[bytes]) -> tuple[list[Received], bool]:
    """(events, whether a ProtocolError ended it); anything else propagates."""
    events: list[Received] = []
    try:
        for piece in pieces:
            events += conn.receive_data(piece)
            if conn.closed:  # the peer sent ERROR: a driver stops reading here
                break
            while conn.pending_zap is not None:
                events += conn.zap_reply(ZapReply("200"))
    except ProtocolError:
        return events, True
    return events, False


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def check_split_invariant(make: Callable[[], Connection], data: bytes, cuts: list[int]) -> None:
    whole_events, whole_failed = run(make(), [data])
    split_events, split_failed = run(make(), split(data, cuts))
    assert whole_failed == split_failed
    if not whole_failed:
        assert split_events == whole_events


def started(make: Callable[[], Connection]) -> Callable[[], Connection]:
    def build() -> Connection:
        conn = make()
        conn.start()
        return conn

    return build


SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    st.sampled_from(sorted(FRESH)).flatmap(
        lambda name: st.tuples(st.just(name), fresh_input(name.encode()))
    ),
    st.lists(st.integers(0, 10_000), max_size=8),
)
def test_fresh_connection_split_anywhere(case: tuple[str, bytes], cuts: list[int]) -> None:
    name, data = case
    check_split_invariant(started(FRESH[name]), data, cuts)


# ------------------------------------------------------------- after the handshake


def handshaken_pair(name: str) -> ConnectionPair:
    if name == "NULL":
        client, server = connection("DEALER"), connection("ROUTER")
    elif name == "PLAIN":
        client = connection("DEALER", mechanism=PlainClientMechanism(b"u", b"p"))
        server = connection("ROUTER", mechanism=PlainServerMechanism())
    else:
        client = connection(
            "DEALER",
            mechanism=CurveClientMechanism(SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET),
        )
        server = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET))
    pair = ConnectionPair(client, server)
    for _ in range(3):
        pair.pump()
        if server.pending_zap is not None:
            server.zap_reply(ZapReply("200"))
            pair.b_sends(server.data_to_send())
    pair.handshake()
    return pair


PAIRS = {name: handshaken_pair(name) for name in FRESH}

# a piece of traffic: a valid message or command from the client, or garbage
pieces = st.one_of(
    st.lists(st.binary(max_size=300), min_size=1, max_size=3).map(lambda m: ("message", m)),
    st.binary(max_size=16).map(lambda t: ("subscribe", t)),
    st.just(("ping", b"")),
    frames.map(lambda f: ("raw", f)),
    st.binary(max_size=40).map(lambda b: ("raw", b)),
)


@SETTINGS
@given(
    st.sampled_from(sorted(PAIRS)),
    st.lists(pieces, max_size=6),
    st.lists(st.integers(0, 10_000), max_size=8),
)
def test_traffic_split_anywhere(name: str, plan: list[tuple[str, object]], cuts: list[int]) -> None:
    pair = PAIRS[name]
    # copies, so every example starts from the same handshaken state
    client = copy.deepcopy(pair.a)
    server = copy.deepcopy(pair.b)
    data = bytearray()
    for kind, value in plan:
        if kind == "message":
            assert isinstance(value, list)
            data += client.encode_message(value)
        elif kind == "subscribe":
            assert isinstance(value, bytes)
            data += client.encode_subscribe(value)
        elif kind == "ping":
            data += client.encode_ping(1.0)
        else:
            assert isinstance(value, bytes)
            data += value
    valid_only = all(kind != "raw" for kind, _ in plan)
    copies = [copy.deepcopy(server), copy.deepcopy(server)]
    whole_events, whole_failed = run(copies[0], [bytes(data)])
    split_events, split_failed = run(copies[1], split(bytes(data), cuts))
    assert whole_failed == split_failed
    if not whole_failed:
        assert split_events == whole_events
    if valid_only:
        assert not whole_failed
        assert len(whole_events) == len(plan)
