"""CURVE (RFC 25/26): byte-level handshake checks, the MESSAGE box, and libzmq as the peer.

:class:`RawCurveClient` is an independent client written with ``nacl.public.Box``
straight from RFC 26, used to drive and attack the server byte by byte; the
interop tests put libzmq (pyzmq) on the other end of a real TCP connection.
"""

from __future__ import annotations

import copy
import socket
from typing import Any

import pytest
import zmq
import zmq.auth.thread
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.public import Box, PrivateKey, PublicKey

from trizmq._security import CurveClient, CurveServer, PlainClient, PlainServer
from trizmq.zmtp import (
    Connection,
    CookieKeys,
    CurveClientMechanism,
    CurveServerMechanism,
    HandshakeComplete,
    PeerError,
    Ping,
    ProtocolError,
    Subscribe,
    ZapReply,
    ZapRequest,
    curve_keypair,
    decode_metadata,
    z85_decode,
)
from trizmq.zmtp.plain import PlainClientMechanism, PlainServerMechanism

from .helpers import ConnectionPair, connection, past_greeting, raw_command, raw_frame, raw_greeting
from .test_plain import (
    RawPeer,
    accept_from,
    connect_raw,
    handshake_failure,
    metadata,
    tcp_listener,  # noqa: F401 (the "listener" fixture)
    watch,
    zap_handshake,
    zmq_context,  # noqa: F401 (the "ctx" fixture)
    zmq_socket,
)

SERVER_PUBLIC, SERVER_SECRET = curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = curve_keypair()
OK = ZapReply("200", "OK")

pytestmark = pytest.mark.skipif(not zmq.has("curve"), reason="libzmq built without CURVE")


def curve_pair(
    server_key: bytes = SERVER_PUBLIC,
    chunk: int | None = None,
    client_type: str = "DEALER",
    server_type: str = "ROUTER",
) -> ConnectionPair:
    return ConnectionPair(
        connection(
            client_type,
            mechanism=CurveClientMechanism(server_key, CLIENT_PUBLIC, CLIENT_SECRET),
        ),
        connection(server_type, mechanism=CurveServerMechanism(SERVER_SECRET)),
        chunk=chunk,
    )


def short_nonce(n: int) -> bytes:
    return n.to_bytes(8, "big")


class RawCurveClient:
    """RFC 26's client side, command by command, with nothing shared with trizmq."""

    def __init__(self, server_public: bytes = SERVER_PUBLIC) -> None:
        self.server = PublicKey(z85_decode(server_public))
        self.long = PrivateKey(z85_decode(CLIENT_SECRET))
        self.short = PrivateKey.generate()
        self.server_short: PublicKey | None = None
        self.cookie = b""

    def hello(self, nonce: int = 1, version: bytes = b"\x01\x00", pad: int = 72) -> bytes:
        box = Box(self.short, self.server).encrypt(
            bytes(64), b"CurveZMQHELLO---" + short_nonce(nonce)
        )
        body = (
            version
            + bytes(pad)
            + bytes(self.short.public_key)
            + short_nonce(nonce)
            + box.ciphertext
        )
        return raw_command(b"HELLO", body)

    def read_welcome(self, frame: bytes) -> None:
        assert frame[:10] == b"\x04\xa8\x07WELCOME"  # 168-byte command
        body = frame[10:]
        plain = Box(self.short, self.server).decrypt(body[16:], b"WELCOME-" + body[:16])
        self.server_short = PublicKey(plain[:32])
        self.cookie = plain[32:]
        assert len(self.cookie) == 96

    def initiate(
        self,
        properties: bytes = metadata((b"Socket-Type", b"DEALER"), (b"Identity", b"")),
        nonce: int = 2,
        vouch_text: bytes | None = None,
        cookie: bytes | None = None,
    ) -> bytes:
        assert self.server_short is not None
        if vouch_text is None:
            vouch_text = bytes(self.short.public_key) + bytes(self.server)
        vouch = Box(self.long, self.server_short).encrypt(vouch_text, b"VOUCH---" + bytes(16))
        inner = bytes(self.long.public_key) + vouch.nonce[8:] + vouch.ciphertext + properties
        box = Box(self.short, self.server_short).encrypt(
            inner, b"CurveZMQINITIATE" + short_nonce(nonce)
        )
        body = (cookie if cookie is not None else self.cookie) + short_nonce(nonce)
        return raw_command(b"INITIATE", body + box.ciphertext)

    def read_ready(self, frame: bytes) -> dict[str, bytes]:
        assert self.server_short is not None
        assert frame[0] == 0x04 and frame[2:8] == b"\x05READY"
        body = frame[8:]
        assert body[:8] == short_nonce(1)
        plain = Box(self.short, self.server_short).decrypt(body[8:], b"CurveZMQREADY---" + body[:8])
        return decode_metadata(plain)

    def message(self, nonce: int, inner_flags: int, data: bytes) -> bytes:
        assert self.server_short is not None
        box = Box(self.short, self.server_short).encrypt(
            bytes((inner_flags,)) + data, b"CurveZMQMESSAGEC" + short_nonce(nonce)
        )
        return raw_frame(0x00, b"\x07MESSAGE" + short_nonce(nonce) + box.ciphertext)

    def open_message(self, frame: bytes) -> tuple[int, bytes]:
        assert self.server_short is not None
        body = frame[2:] if frame[0] in (0x00, 0x01) else frame[9:]
        assert body[:8] == b"\x07MESSAGE"
        plain = Box(self.short, self.server_short).decrypt(
            body[16:], b"CurveZMQMESSAGES" + body[8:16]
        )
        return plain[0], plain[1:]


def server_conn(**kwargs: Any) -> Connection:
    conn = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET, **kwargs))
    conn.start()
    return conn


def ready_server(raw: RawCurveClient, conn: Connection | None = None) -> Connection:
    """A server Connection handshaken with ``raw`` (ZAP answered 200)."""
    conn = conn or server_conn()
    conn.receive_data(raw_greeting(mechanism=b"CURVE") + raw.hello())
    raw.read_welcome(past_greeting(conn, conn.data_to_send()))
    assert conn.receive_data(raw.initiate()) == []
    assert conn.pending_zap == ZapRequest(b"CURVE", (z85_decode(CLIENT_PUBLIC),))
    (done,) = conn.zap_reply(OK)
    assert isinstance(done, HandshakeComplete)
    raw.read_ready(conn.data_to_send())
    return conn


# --------------------------------------------------------------------- client bytes


def test_client_hello_bytes() -> None:
    conn = connection(
        "DEALER", mechanism=CurveClientMechanism(SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET)
    )
    greeting = conn.start(staged=False)
    assert greeting[12:17] == b"CURVE" and greeting[32] == 0
    conn.receive_data(raw_greeting(mechanism=b"CURVE", as_server=1))
    hello = conn.data_to_send()
    assert len(hello) == 2 + 200
    assert hello[:8] == b"\x04\xc8\x05HELLO"
    body = hello[8:]
    assert body[:2] == b"\x01\x00" and body[2:74] == bytes(72)
    client_short = PublicKey(body[74:106])
    assert body[106:114] == short_nonce(1)
    server = PrivateKey(z85_decode(SERVER_SECRET))
    assert Box(server, client_short).decrypt(body[114:], b"CurveZMQHELLO---" + body[106:114]) == (
        bytes(64)
    )


def test_server_greeting_and_welcome_bytes() -> None:
    conn = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET))
    assert conn.start(staged=False)[32] == 1
    raw = RawCurveClient()
    assert conn.receive_data(raw_greeting(mechanism=b"CURVE") + raw.hello()) == []
    raw.read_welcome(conn.data_to_send())  # checks size and opens the box


def test_server_handshake_with_independent_client() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    assert conn.peer_socket_type == "DEALER"
    # client -> server: inner flags MORE, then last; then a SUBSCRIBE-like command
    events = conn.receive_data(
        raw.message(3, 0x01, b"part1")
        + raw.message(4, 0x00, b"part2")
        + raw.message(5, 0x02, b"\x04PING\x00\x0ahi")
    )
    assert events == [[b"part1", b"part2"], Ping(1.0, b"hi")]
    # server -> client: outer flags are a plain message frame, inner carry MORE/COMMAND
    out = conn.encode_message([b"a", b"b"])
    first_len = 2 + 8 + 8 + 16 + 1 + 1
    assert out[0] == 0x00 and out[first_len] == 0x00
    assert raw.open_message(out[:first_len]) == (0x01, b"a")
    assert raw.open_message(out[first_len:]) == (0x00, b"b")
    assert raw.open_message(conn.encode_ping(1.0)) == (0x02, b"\x04PING\x00\x0a")
    big = conn.encode_message([b"x" * 300])
    assert big[0] == 0x02  # long outer message frame
    assert raw.open_message(big) == (0x00, b"x" * 300)


# --------------------------------------------------------------------- server refusals


def hello_body(raw_frame_bytes: bytes) -> bytes:
    return raw_frame_bytes[2 + 6 :]


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        (lambda raw: raw.hello(pad=70), "HELLO of 192 bytes"),
        (lambda raw: raw.hello(pad=73), "HELLO of 195 bytes"),
        (lambda raw: raw.hello(version=b"\x02\x00"), "version 2.0"),
        (lambda raw: raw.hello(version=b"\x01\x01"), "version 1.1"),
        (lambda raw: raw.hello(nonce=0), "nonce 0"),
    ],
)
def test_bad_hello(hello: Any, message: str) -> None:
    conn = server_conn()
    with pytest.raises(ProtocolError, match=message):
        conn.receive_data(raw_greeting(mechanism=b"CURVE") + hello(RawCurveClient()))
    assert conn.closed


def test_hello_for_another_server_or_tampered() -> None:
    other_public, _ = curve_keypair()
    with pytest.raises(ProtocolError, match="HELLO: the box does not open"):
        server_conn().receive_data(
            raw_greeting(mechanism=b"CURVE") + RawCurveClient(other_public).hello()
        )
    hello = bytearray(RawCurveClient().hello())
    hello[-1] ^= 1
    with pytest.raises(ProtocolError, match="HELLO: the box does not open"):
        server_conn().receive_data(raw_greeting(mechanism=b"CURVE") + bytes(hello))


def welcomed(raw: RawCurveClient, conn: Connection | None = None) -> Connection:
    conn = conn or server_conn()
    conn.receive_data(raw_greeting(mechanism=b"CURVE") + raw.hello())
    raw.read_welcome(past_greeting(conn, conn.data_to_send()))
    return conn


def test_bad_cookie_refused() -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    forged = bytearray(raw.cookie)
    forged[40] ^= 1
    with pytest.raises(ProtocolError, match="cookie"):
        conn.receive_data(raw.initiate(cookie=bytes(forged)))
    assert conn.closed


def test_cookie_from_another_connection_refused() -> None:
    keys = CookieKeys()
    first, second = RawCurveClient(), RawCurveClient()
    welcomed(first, server_conn(cookie_keys=keys))
    conn = welcomed(second, server_conn(cookie_keys=keys))
    # a valid cookie of the same server, but not the one this connection issued
    with pytest.raises(ProtocolError, match="not the one we sent"):
        conn.receive_data(second.initiate(cookie=first.cookie))


def test_cookie_keys_rotate() -> None:
    keys = CookieKeys(rotate_after=2)
    cookie = keys.seal(b"x" * 64)
    assert keys.open(cookie) == b"x" * 64
    keys.rotate()
    assert keys.open(cookie) == b"x" * 64  # the previous key still opens
    keys.rotate()
    assert keys.open(cookie) is None
    sealed = [keys.seal(b"y" * 64) for _ in range(5)]  # rotates by count
    assert keys.open(sealed[0]) is None
    assert keys.open(sealed[-1]) == b"y" * 64
    with pytest.raises(ValueError, match="rotate_after"):
        CookieKeys(rotate_after=0)


def test_expired_cookie_refused() -> None:
    keys = CookieKeys()
    raw = RawCurveClient()
    conn = welcomed(raw, server_conn(cookie_keys=keys))
    keys.rotate()
    keys.rotate()
    with pytest.raises(ProtocolError, match="expired"):
        conn.receive_data(raw.initiate())


@pytest.mark.parametrize(
    ("vouch", "message"),
    [
        (lambda raw: bytes(64), "vouch does not name"),
        (lambda raw: bytes(raw.short.public_key) + bytes(32), "vouch does not name"),
        (lambda raw: bytes(PrivateKey.generate().public_key) + bytes(raw.server), "vouch"),
        (lambda raw: bytes(raw.short.public_key) + bytes(raw.server) + b"!", "vouch: the box"),
    ],
)
def test_vouch_mismatch(vouch: Any, message: str) -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    with pytest.raises(ProtocolError, match=message):
        conn.receive_data(raw.initiate(vouch_text=vouch(raw)))


def test_initiate_nonce_must_follow_hello() -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    with pytest.raises(ProtocolError, match="INITIATE: short nonce 1"):
        conn.receive_data(raw.initiate(nonce=1))


def test_initiate_too_short_and_tampered() -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    with pytest.raises(ProtocolError, match="INITIATE of 247 bytes is too short"):
        conn.receive_data(raw_command(b"INITIATE", raw.cookie + bytes(151)))
    raw = RawCurveClient()
    conn = welcomed(raw)
    initiate = bytearray(raw.initiate())
    initiate[-1] ^= 0x80
    with pytest.raises(ProtocolError, match="INITIATE: the box does not open"):
        conn.receive_data(bytes(initiate))


def test_initiate_bad_metadata() -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    with pytest.raises(ProtocolError, match="malformed metadata"):
        conn.receive_data(raw.initiate(properties=b"\x05abc"))


@pytest.mark.parametrize("command", [b"INITIATE", b"READY", b"WELCOME", b"MESSAGE"])
def test_server_refuses_out_of_order(command: bytes) -> None:
    with pytest.raises(ProtocolError, match="unexpected"):
        server_conn().receive_data(raw_greeting(mechanism=b"CURVE") + raw_command(command))


def test_second_hello_refused() -> None:
    raw = RawCurveClient()
    conn = welcomed(raw)
    with pytest.raises(ProtocolError, match="unexpected HELLO"):
        conn.receive_data(raw.hello(nonce=2))


# --------------------------------------------------------------------- MESSAGE checks


def test_message_replay_and_order() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    first = raw.message(3, 0, b"one")
    assert conn.receive_data(first) == [[b"one"]]
    with pytest.raises(ProtocolError, match="short nonce 3 does not follow 3"):
        conn.receive_data(first)
    assert conn.closed

    raw = RawCurveClient()
    conn = ready_server(raw)
    with pytest.raises(ProtocolError, match="short nonce 4 does not follow 5"):
        conn.receive_data(raw.message(5, 0, b"b") + raw.message(4, 0, b"a"))

    raw = RawCurveClient()
    conn = ready_server(raw)
    with pytest.raises(ProtocolError, match="short nonce 2 does not follow 2"):
        conn.receive_data(raw.message(2, 0, b"reuses the INITIATE nonce"))


def test_message_tampered() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    message = bytearray(raw.message(3, 0, b"payload"))
    message[-3] ^= 1
    with pytest.raises(ProtocolError, match="MESSAGE: the box does not open"):
        conn.receive_data(bytes(message))


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (raw_frame(0x00, b"\x07MESSAGE" + bytes(24)), "too short"),
        (raw_frame(0x00, b"\x07MESSAGF" + bytes(25)), "expected a CURVE MESSAGE"),
        (raw_command(b"READY", bytes(40)), "expected a CURVE MESSAGE"),
    ],
)
def test_message_malformed(frame: bytes, message: str) -> None:
    conn = ready_server(RawCurveClient())
    with pytest.raises(ProtocolError, match=message):
        conn.receive_data(frame)


@pytest.mark.parametrize("inner", [0x03, 0x04, 0x80])
def test_message_inner_flags_checked(inner: int) -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    with pytest.raises(ProtocolError, match="inner frame flags"):
        conn.receive_data(raw.message(3, inner, b"\x04PING\x00\x00"))


def test_message_outer_flags_accepted_as_libzmq_does() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    frame = raw.message(3, 0, b"x")
    assert conn.receive_data(b"\x04" + frame[1:]) == [[b"x"]]  # outer COMMAND flag
    frame = raw.message(4, 0, b"y")
    assert conn.receive_data(b"\x01" + frame[1:]) == [[b"y"]]  # outer MORE flag


def test_late_handshake_command_inside_message() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    with pytest.raises(ProtocolError, match="INITIATE command after the handshake"):
        conn.receive_data(raw.message(3, 0x02, b"\x08INITIATE"))


def test_maxmsgsize_checked_on_the_outer_frame() -> None:
    raw = RawCurveClient()
    # maxmsgsize counts the plaintext's wire size: 10 bytes and a 2-byte header
    conn = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET), maxmsgsize=12)
    conn.start()
    ready_server(raw, conn)
    assert conn.receive_data(raw.message(3, 0, b"x" * 10)) == [[b"x" * 10]]
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(raw.message(4, 0, b"x" * 11)[:2])


@pytest.mark.parametrize("size", [0, 1, 222, 223, 224, 225, 300])
def test_message_frames_around_the_short_header_boundary(size: int) -> None:
    # the hot encoder writes a short outer header while the box fits one (inner frame
    # under 224 bytes: 32 bytes of head, nonce and MAC around it), a long one after
    raw = RawCurveClient()
    conn = ready_server(raw)
    out = bytearray()
    conn.message_encoder()(out, [b"y" * size])
    wire = bytes(out)
    outer = 32 + 1 + size
    if outer < 256:
        assert wire[:2] == bytes((0, outer))
        assert len(wire) == 2 + outer
    else:
        assert wire[:9] == b"\x02" + outer.to_bytes(8, "big")
        assert len(wire) == 9 + outer
    assert raw.open_message(wire) == (0, b"y" * size)


def test_message_frames_of_any_buffer_type() -> None:
    raw = RawCurveClient()
    conn = ready_server(raw)
    out = bytearray()
    conn.message_encoder()(out, [bytearray(b"a"), memoryview(b"bc"), b"d"])
    wire = bytes(out)
    first, second, third = wire[:36], wire[36:73], wire[73:]
    assert raw.open_message(first) == (1, b"a")
    assert raw.open_message(second) == (1, b"bc")
    assert raw.open_message(third) == (0, b"d")


# -- a read's short MESSAGE frames opened in the mechanism's loop (open_run) -----------

#: a stretch of encrypted traffic: a run of ``count`` one-frame messages, one message of
#: several frames, or a PING (a command inside the box)
curve_stretches = st.one_of(
    st.tuples(st.integers(1, 30), st.binary(max_size=230)).map(lambda t: [[t[1]]] * t[0]),
    st.lists(st.binary(max_size=240), min_size=2, max_size=3).map(lambda m: [m]),
    st.binary(max_size=8).map(lambda context: [Ping(1.5, context)]),
)


def boxed(raw: RawCurveClient, events: list[object], nonce: int) -> bytes:
    """``events`` as the independent client boxes them, from short nonce ``nonce``."""
    out = []
    for event in events:
        if isinstance(event, Ping):
            out.append(raw.message(nonce, 0x02, b"\x04PING" + b"\x00\x0f" + event.context))
            nonce += 1
            continue
        assert isinstance(event, list)
        for i, frame in enumerate(event):
            out.append(raw.message(nonce, 0x01 if i < len(event) - 1 else 0x00, frame))
            nonce += 1
    return b"".join(out)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(curve_stretches, min_size=1, max_size=5),
    st.sampled_from([None, 1, 50, 333, 4096]),
    st.booleans(),
)
def test_short_frames_open_in_runs_as_one_by_one(
    plan: list[list[object]], chunk: int | None, bare: bool
) -> None:
    expected = [event for stretch in plan for event in stretch]
    raw = RawCurveClient()
    conn = ready_server(raw)
    conn.bare_messages = bare
    data = boxed(raw, expected, 3)
    got: list[object] = []
    step = chunk or len(data)
    for i in range(0, len(data), step):
        got += conn.receive_data(data[i : i + step])
    if bare:
        expected = [e[0] if isinstance(e, list) and len(e) == 1 else e for e in expected]
    assert got == expected


def test_a_run_refuses_what_one_by_one_refuses() -> None:
    # the loop stops before a frame it does not take, and the frame loop refuses it
    # with its own error
    raw = RawCurveClient()
    conn = ready_server(raw)
    conn.bare_messages = True
    good = b"".join(raw.message(n, 0, b"ok") for n in range(3, 13))
    tampered = bytearray(raw.message(13, 0, b"payload"))
    tampered[-3] ^= 1
    with pytest.raises(ProtocolError, match="the box does not open"):
        conn.receive_data(good + bytes(tampered))
    assert conn.closed
    for bad, message in [
        (lambda raw: raw.message(7, 0, b"replayed"), "short nonce 7 does not follow 12"),
        (lambda raw: raw_frame(0x00, b"\x07MESSAGE" + bytes(24)), "too short"),
        (lambda raw: raw.message(13, 0x03, b"x"), "inner frame flags"),
    ]:
        raw = RawCurveClient()
        conn = ready_server(raw)
        good = b"".join(raw.message(n, 0, b"ok") for n in range(3, 13))
        with pytest.raises(ProtocolError, match=message):
            conn.receive_data(good + bad(raw))
    raw = RawCurveClient()
    conn = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET), maxmsgsize=12)
    conn.start()
    ready_server(raw, conn)
    small = b"".join(raw.message(n, 0, b"x" * 10) for n in range(3, 13))
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(small + raw.message(13, 0, b"x" * 11))


def test_seal_run_boxes_as_one_by_one_and_stops_where_it_must() -> None:
    pair = zap_handshake(curve_pair(client_type="PUSH", server_type="PULL"), OK)
    mechanism = pair.a.mechanism
    twin = copy.deepcopy(mechanism)
    # bodies up to 222 bytes take a short outer header (a 224-byte inner frame not)
    short = [[b"a" * n] for n in (0, 1, 64, 221, 222)]
    items: list[object] = [*short, [b"two", b"frames"], [b"after"]]
    out, expected = bytearray(), bytearray()
    assert mechanism.seal_run(out, items, 0, 1 << 20) == 5  # stops at the two frames
    for item in short:
        twin.encode_message_into(expected, item)
    assert out == expected
    # a long frame and anything not a list of one frame end the run
    for stopper in ([b"b" * 223], Ping(1.0, b""), (b"tuple",), [b"b" * 300]):
        assert mechanism.seal_run(out, [[b"c"], stopper, [b"d"]], 0, 1 << 20) == 1
        twin.encode_message_into(expected, [b"c"])
        assert out == expected
    # it may start anywhere, and stops once ``out`` holds ``stop`` bytes
    assert mechanism.seal_run(out, [[b"e"]] * 10, 4, len(out) + 1) == 5
    twin.encode_message_into(expected, [b"e"])
    assert out == expected
    pair.a_sends(bytes(out))
    _, got = pair.pump()
    assert got == [*short, *[[b"c"]] * 4, [b"e"]]
    # asked for them, where each message taken ends (a write-through that the kernel
    # takes part of splits its batch there): as where each one-by-one encoding ends
    out, expected, ends = bytearray(b"before"), bytearray(b"before"), []
    assert mechanism.seal_run(out, [*short, [b"two", b"frames"]], 1, 1 << 20, ends) == 5
    one_by_one = []
    for item in short[1:]:
        twin.encode_message_into(expected, item)
        one_by_one.append(len(expected))
    assert out == expected
    assert ends == one_by_one


# three nonces from the end; where the fast paths stop (2^40 from it); far from it
@pytest.mark.parametrize("before", [3, (1 << 40) - 3, 1 << 41])
def test_messages_up_to_the_last_short_nonce_count_on_and_open(before: int) -> None:
    """Near the end of the 2^64 short nonces the batch and one-message paths hand
    over to the checked one: the nonces stay consecutive and every box opens; the
    last nonce is used, and the message after it raises instead of wrapping."""
    pair = zap_handshake(curve_pair(client_type="PUSH", server_type="PULL"), OK)
    mechanism = pair.a.mechanism
    assert isinstance(mechanism, CurveClientMechanism)
    last = (1 << 64) - 1
    mechanism._nonce = start = last - before - 4
    out = bytearray()
    assert mechanism.seal_run(out, [[b"a"], [b"b"]], 0, 1 << 20) in (0, 2)
    if not out:  # the batch path declined so near the end: one message at a time
        mechanism.encode_message_into(out, [b"a"])
        mechanism.encode_message_into(out, [b"b"])
    mechanism.encode_message_into(out, [b"two", b"frames"])
    assert mechanism._nonce == start + 4
    pair.a_sends(bytes(out))
    _, got = pair.pump()
    assert got == [[b"a"], [b"b"], [b"two", b"frames"]]
    if before == 3:
        mechanism.encode_message_into(out := bytearray(), [b"c"] * 3)  # 2^64 - 3 .. - 1
        assert mechanism._nonce == last
        pair.a_sends(bytes(out))
        assert pair.pump()[1] == [[b"c"] * 3]
        with pytest.raises(OverflowError, match="exhausted"):
            mechanism.encode_message_into(bytearray(), [b"d"])


# --------------------------------------------------------------------- pairs


@pytest.mark.parametrize("chunk", [None, 1, 13])
def test_pair_messages_both_ways(chunk: int | None) -> None:
    pair = zap_handshake(curve_pair(chunk=chunk), ZapReply("200", "OK", b"alice"))
    client, server = pair.a, pair.b
    assert server.peer_metadata["User-Id"] == b"alice"
    assert client.peer_socket_type == "ROUTER"
    pair.a_sends(client.encode_message([b"one", b"two" * 200, b""]))
    pair.a_sends(client.encode_ping(2.0, b"ctx"))
    out = bytearray()
    server.encode_messages_into(out, [[b"r1"], [b"r2", b"r3"]])
    pair.b_sends(bytes(out) + server.encode_pong(b"ctx"))
    a_new, b_new = pair.pump()
    assert b_new == [[b"one", b"two" * 200, b""], Ping(2.0, b"ctx")]
    assert a_new[:2] == [[b"r1"], [b"r2", b"r3"]]


def test_pair_subscribe_is_a_command_inside_the_box() -> None:
    pair = zap_handshake(curve_pair(client_type="SUB", server_type="PUB"), OK)
    pair.a_sends(pair.a.encode_subscribe(b"topic") + pair.a.encode_cancel(b"topic"))
    _, b_new = pair.pump()
    assert b_new[0] == Subscribe(b"topic")
    assert len(b_new) == 2


def test_pair_error_after_handshake_is_boxed() -> None:
    pair = zap_handshake(curve_pair(), OK)
    pair.b_sends(pair.b.encode_error("bye"))
    a_new, _ = pair.pump()
    assert a_new == [PeerError("bye")]


def test_pair_zap_refusal() -> None:
    pair = curve_pair()
    with pytest.raises(ProtocolError, match="ZAP 400"):
        zap_handshake(pair, ZapReply("400", "unknown key"))
    pair.pump()
    assert pair.a_events == [PeerError("400")]
    assert not pair.a.handshake_complete


def test_wrong_server_key_fails_the_handshake() -> None:
    other_public, _ = curve_keypair()
    pair = curve_pair(server_key=other_public)
    with pytest.raises(ProtocolError, match="HELLO: the box does not open"):
        pair.pump()
    assert pair.b.closed and not pair.a.handshake_complete


def test_client_refuses_welcome_from_an_impostor() -> None:
    client = our_client()
    client.start()
    client.receive_data(raw_greeting(mechanism=b"CURVE", as_server=1))
    client_short = PublicKey(past_greeting(client, client.data_to_send())[8 + 74 : 8 + 106])
    _, impostor_secret = curve_keypair()
    # a well-formed WELCOME to the client's short-term key, boxed by the wrong server
    box = Box(PrivateKey(z85_decode(impostor_secret)), client_short).encrypt(
        bytes(32 + 96), b"WELCOME-" + bytes(16)
    )
    assert len(box.ciphertext) == 144
    with pytest.raises(ProtocolError, match="WELCOME: the box does not open"):
        client.receive_data(raw_command(b"WELCOME", bytes(16) + box.ciphertext))


@pytest.mark.parametrize(
    ("welcome", "message"),
    [
        (raw_command(b"WELCOME", bytes(159)), "WELCOME of 159 bytes"),
        (raw_command(b"WELCOME", bytes(161)), "WELCOME of 161 bytes"),
        (raw_command(b"READY", bytes(30)), "unexpected READY"),
    ],
)
def test_client_refuses_malformed_welcome(welcome: bytes, message: str) -> None:
    client = connection(
        "DEALER", mechanism=CurveClientMechanism(SERVER_PUBLIC, CLIENT_PUBLIC, CLIENT_SECRET)
    )
    client.start()
    with pytest.raises(ProtocolError, match=message):
        client.receive_data(raw_greeting(mechanism=b"CURVE", as_server=1) + welcome)


def test_client_refuses_bad_ready() -> None:
    pair = curve_pair()
    pair.pump()
    server, client = pair.b, pair.a
    assert server.pending_zap is not None
    server.zap_reply(OK)
    ready = bytearray(server.data_to_send())
    ready[-1] ^= 1
    with pytest.raises(ProtocolError, match="READY: the box does not open"):
        client.receive_data(bytes(ready))
    with pytest.raises(ProtocolError):
        client.receive_data(b"")


def test_client_key_pair_must_match() -> None:
    other_public, _ = curve_keypair()
    with pytest.raises(ValueError, match="public_key is not the public key of secret_key"):
        CurveClientMechanism(SERVER_PUBLIC, other_public, CLIENT_SECRET)
    with pytest.raises(ValueError, match="server_key"):
        CurveClientMechanism(b"short", CLIENT_PUBLIC, CLIENT_SECRET)


# --------------------------------------------------------------------- public settings


def test_security_objects() -> None:
    server = CurveServer(secret_key=SERVER_SECRET)
    assert server.secret_key == z85_decode(SERVER_SECRET)
    assert server.public_key == SERVER_PUBLIC
    assert "secret" not in repr(server)
    assert server == CurveServer(secret_key=z85_decode(SERVER_SECRET))
    client = CurveClient(
        server_key=SERVER_PUBLIC.decode(), public_key=CLIENT_PUBLIC, secret_key=CLIENT_SECRET
    )
    assert "secret_key" not in repr(client)
    first, second = server.mechanism(), server.mechanism()
    assert isinstance(first, CurveServerMechanism) and first is not second
    assert isinstance(client.mechanism(), CurveClientMechanism)
    assert isinstance(PlainServer().mechanism(), PlainServerMechanism)
    plain = PlainClient(username="admin", password=b"secret")
    assert plain.username == b"admin" and "secret" not in repr(plain)
    assert isinstance(plain.mechanism(), PlainClientMechanism)
    pair = zap_handshake(
        ConnectionPair(
            connection("DEALER", mechanism=client.mechanism()),
            connection("ROUTER", mechanism=server.mechanism()),
        ),
        OK,
    )
    assert pair.a.handshake_complete and pair.b.handshake_complete


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: CurveServer(secret_key=b"x"), ValueError, "secret_key"),
        (lambda: CurveServer(secret_key=42), TypeError, "secret_key"),
        (
            lambda: CurveClient(
                server_key=b"~" * 40, public_key=CLIENT_PUBLIC, secret_key=CLIENT_SECRET
            ),
            ValueError,
            "server_key",
        ),
        (
            lambda: CurveClient(
                server_key=SERVER_PUBLIC, public_key="short", secret_key=CLIENT_SECRET
            ),
            ValueError,
            "public_key",
        ),
        (
            lambda: CurveClient(
                server_key=SERVER_PUBLIC, public_key=SERVER_PUBLIC, secret_key=CLIENT_SECRET
            ),
            ValueError,
            "public_key is not",
        ),
        (lambda: PlainClient(username=b"u" * 256, password=b""), ValueError, "username"),
        (lambda: PlainClient(username=b"u", password="p" * 256), ValueError, "password"),
        (lambda: PlainClient(username=1, password=b""), TypeError, "username"),
    ],
)
def test_security_objects_validate(build: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build()


# --------------------------------------------------------------------- libzmq as the peer


def curve_server_socket(ctx: zmq.Context[Any], kind: int) -> zmq.Socket[Any]:
    return zmq_socket(ctx, kind, curve_server=True, curve_secretkey=SERVER_SECRET)


def our_client(kind: str = "DEALER", server_key: bytes = SERVER_PUBLIC) -> Connection:
    return connection(
        kind, mechanism=CurveClientMechanism(server_key, CLIENT_PUBLIC, CLIENT_SECRET)
    )


def curve_client_socket(ctx: zmq.Context[Any], kind: int) -> zmq.Socket[Any]:
    return zmq_socket(
        ctx,
        kind,
        curve_serverkey=SERVER_PUBLIC,
        curve_publickey=CLIENT_PUBLIC,
        curve_secretkey=CLIENT_SECRET,
    )


def test_libzmq_curve_server_with_our_client(ctx: zmq.Context[Any]) -> None:
    server = curve_server_socket(ctx, zmq.ROUTER)
    peer = RawPeer(connect_raw(server), our_client())
    with peer.sock, server:
        events = peer.handshake()
        assert isinstance(events[0], HandshakeComplete)
        assert events[0].socket_type == "ROUTER"
        big = bytes(range(256)) * 400
        peer.send(peer.conn.encode_message([b"hello", big, b""]))
        routing_id, *frames = server.recv_multipart()
        assert frames == [b"hello", big, b""]
        for i in range(3):
            server.send_multipart([routing_id, b"reply", str(i).encode()])
        for i in range(3):
            assert peer.receive() == [b"reply", str(i).encode()]


def test_libzmq_curve_pub_honours_our_boxed_subscribe_and_pongs(ctx: zmq.Context[Any]) -> None:
    server = curve_server_socket(ctx, zmq.PUB)
    server.heartbeat_ivl = 50
    server.heartbeat_timeout = 300
    peer = RawPeer(connect_raw(server), our_client("SUB"))
    with peer.sock, server:
        peer.handshake()
        # libzmq's boxed PINGs arrive as commands; were our boxed PONGs refused, it
        # would drop us within 300 ms
        for _ in range(15):
            ping = peer.receive()
            assert isinstance(ping, Ping)
            peer.send(peer.conn.encode_pong(ping.context))
        peer.send(peer.conn.encode_subscribe(b"yes"))
        # PUB drops messages until the subscription lands: publish until one arrives
        for _ in range(200):
            server.send_multipart([b"no", b"x"])
            server.send_multipart([b"yes", b"payload"])
            event = peer.receive()
            if isinstance(event, Ping):
                peer.send(peer.conn.encode_pong(event.context))
                continue
            assert event == [b"yes", b"payload"]
            break
        else:
            pytest.fail("no message after subscribing")


def test_libzmq_curve_client_with_our_server(
    ctx: zmq.Context[Any], listener: socket.socket
) -> None:
    client = curve_client_socket(ctx, zmq.DEALER)
    client.routing_id = b"me"
    server = connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET))
    peer = RawPeer(accept_from(client, listener), server)
    requests: list[ZapRequest] = []

    def zap(request: ZapRequest) -> ZapReply:
        requests.append(request)
        return ZapReply("200", "OK", b"the-client")

    with peer.sock, client:
        client.send_multipart([b"early", b"bird"])  # queued until the handshake ends
        events = peer.handshake(zap)
        assert requests == [ZapRequest(b"CURVE", (z85_decode(CLIENT_PUBLIC),))]
        done = events[0]
        assert isinstance(done, HandshakeComplete)
        assert done.socket_type == "DEALER" and done.identity == b"me"
        assert done.metadata["User-Id"] == b"the-client"
        assert peer.receive() == [b"early", b"bird"]
        peer.send(peer.conn.encode_message([b"back", b"x" * 1000]))
        assert client.recv_multipart() == [b"back", b"x" * 1000]
        client.send(b"again")
        assert peer.receive() == [b"again"]


def test_libzmq_curve_client_refused_by_our_server(
    ctx: zmq.Context[Any], listener: socket.socket
) -> None:
    client = curve_client_socket(ctx, zmq.DEALER)
    monitor = watch(client)
    peer = RawPeer(
        accept_from(client, listener),
        connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET)),
    )
    with peer.sock, client, monitor:
        with pytest.raises(ProtocolError, match="ZAP 400"):
            peer.handshake(lambda request: ZapReply("400", "who are you"))
        assert handshake_failure(monitor) == (zmq.EVENT_HANDSHAKE_FAILED_AUTH, 400)


def test_libzmq_curve_client_with_wrong_server_key(
    ctx: zmq.Context[Any], listener: socket.socket
) -> None:
    other_public, _ = curve_keypair()
    client = zmq_socket(
        ctx,
        zmq.DEALER,
        curve_serverkey=other_public,
        curve_publickey=CLIENT_PUBLIC,
        curve_secretkey=CLIENT_SECRET,
    )
    peer = RawPeer(
        accept_from(client, listener),
        connection("ROUTER", mechanism=CurveServerMechanism(SERVER_SECRET)),
    )
    with peer.sock, client, pytest.raises(ProtocolError, match="HELLO: the box does not open"):
        peer.handshake()


def test_libzmq_curve_server_drops_our_client_with_wrong_key(ctx: zmq.Context[Any]) -> None:
    server = curve_server_socket(ctx, zmq.ROUTER)
    monitor = watch(server)
    other_public, _ = curve_keypair()
    peer = RawPeer(connect_raw(server), our_client(server_key=other_public))
    with peer.sock, server, monitor:
        with pytest.raises(ConnectionError):
            peer.handshake()
        event, _ = handshake_failure(monitor)
        assert event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL


class KeyCheck:
    """pyzmq's credentials-provider protocol: admit only ``allowed`` (Z85) keys."""

    def __init__(self, allowed: bytes) -> None:
        self.write_through_allowed = allowed

    def callback(self, domain: str, key: bytes) -> bool:
        return key == self.write_through_allowed


@pytest.mark.parametrize("admitted", [True, False])
def test_libzmq_curve_server_zap_with_our_client(ctx: zmq.Context[Any], admitted: bool) -> None:
    auth = zmq.auth.thread.ThreadAuthenticator(ctx)
    auth.start()
    try:
        other_public, _ = curve_keypair()
        auth.configure_curve_callback("*", KeyCheck(CLIENT_PUBLIC if admitted else other_public))
        server = curve_server_socket(ctx, zmq.ROUTER)
        peer = RawPeer(connect_raw(server), our_client())
        with peer.sock, server:
            events = peer.handshake()
            if not admitted:
                assert events == [PeerError("400")]
                return
            assert isinstance(events[0], HandshakeComplete)
            peer.send(peer.conn.encode_message([b"who am i"]))
            frames = server.recv_multipart(copy=False)
            assert frames[1].bytes == b"who am i"
            assert frames[1].get("User-Id") == CLIENT_PUBLIC.decode()
    finally:
        auth.stop()
