"""PLAIN (RFC 24): byte-level commands, ZAP outcomes, and libzmq as the peer.

The interop tests drive a :class:`Connection` over a blocking TCP socket against a
pyzmq (libzmq) socket, so every byte on the wire is ours against theirs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zmq
import zmq.auth.thread
import zmq.utils.monitor

from trizmq.zmtp import (
    Connection,
    HandshakeComplete,
    PeerError,
    PlainClientMechanism,
    PlainServerMechanism,
    ProtocolError,
    Received,
    ZapReply,
    ZapRequest,
)

from .helpers import ConnectionPair, connection, past_greeting, raw_command, raw_greeting

TIMEOUT = 5.0

# --------------------------------------------------------------------- helpers


def metadata(*properties: tuple[bytes, bytes]) -> bytes:
    return b"".join(
        bytes((len(name),)) + name + len(value).to_bytes(4, "big") + value
        for name, value in properties
    )


def zap_handshake(pair: ConnectionPair, reply: ZapReply) -> ConnectionPair:
    """Pump, answer the server's (b's) ZAP request with ``reply``, pump again."""
    pair.pump()
    assert pair.b.pending_zap is not None
    try:
        pair.b_events += pair.b.zap_reply(reply)
    finally:
        pair.b_sends(pair.b.data_to_send())
    pair.pump()
    return pair


def plain_pair(
    username: bytes = b"admin", password: bytes = b"secret", chunk: int | None = None
) -> ConnectionPair:
    return ConnectionPair(
        connection("DEALER", mechanism=PlainClientMechanism(username, password)),
        connection("ROUTER", mechanism=PlainServerMechanism()),
        chunk=chunk,
    )


def plain_server() -> Connection:
    conn = connection("ROUTER", mechanism=PlainServerMechanism())
    conn.start()
    return conn


class RawPeer:
    """A Connection driven synchronously over a blocking TCP socket."""

    def __init__(self, sock: socket.socket, conn: Connection) -> None:
        sock.settimeout(TIMEOUT)
        self.sock = sock
        self.conn = conn
        self.pending: list[Received] = []
        sock.sendall(conn.start())

    def flush(self) -> None:
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def handshake(self, zap: Callable[[ZapRequest], ZapReply] | None = None) -> list[Received]:
        """Run the handshake; return its events (stops early on a PeerError)."""
        conn = self.conn
        events: list[Received] = []
        while not conn.handshake_complete:
            self.flush()
            request = conn.pending_zap
            if request is not None:
                assert zap is not None, "a ZAP request needs an answer"
                try:
                    events += conn.zap_reply(zap(request))
                finally:
                    self.flush()
                continue
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("peer closed the connection during the handshake")
            events += conn.receive_data(data)
            if any(isinstance(e, PeerError) for e in events):
                return events
        self.flush()
        done = [e for e in events if isinstance(e, HandshakeComplete)]
        self.pending = events[events.index(done[0]) + 1 :]
        return events

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, accept: Callable[[Received], bool] = lambda e: True) -> Received:
        """The next event or message that ``accept`` likes."""
        while True:
            while self.pending:
                event = self.pending.pop(0)
                if accept(event):
                    return event
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("peer closed the connection")
            self.pending += self.conn.receive_data(data)

    def closed_by_peer(self) -> bool:
        """True if the peer closes the connection (without sending more)."""
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        return data == b""


@pytest.fixture(name="ctx")
def zmq_context() -> Iterator[zmq.Context[Any]]:
    context: zmq.Context[Any] = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.fixture(name="listener")
def tcp_listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(TIMEOUT)
    yield server
    server.close()


def zmq_socket(ctx: zmq.Context[Any], kind: int, **options: Any) -> zmq.Socket[Any]:
    sock = ctx.socket(kind)
    sock.linger = 0
    sock.rcvtimeo = int(TIMEOUT * 1000)
    sock.sndtimeo = int(TIMEOUT * 1000)
    for name, value in options.items():
        setattr(sock, name, value)
    return sock


def connect_raw(zsock: zmq.Socket[Any]) -> socket.socket:
    port = zsock.bind_to_random_port("tcp://127.0.0.1")
    return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def accept_from(zsock: zmq.Socket[Any], listener: socket.socket) -> socket.socket:
    zsock.connect(f"tcp://127.0.0.1:{listener.getsockname()[1]}")
    sock, _ = listener.accept()
    return sock


def handshake_failure(monitor: zmq.Socket[Any]) -> tuple[int, int]:
    """(event, value) of the first HANDSHAKE_FAILED_* event libzmq reports on ``monitor``."""
    failures = (
        zmq.EVENT_HANDSHAKE_FAILED_AUTH
        | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    )
    while True:
        event = zmq.utils.monitor.recv_monitor_message(monitor)
        if event["event"] & failures:
            return int(event["event"]), int(event["value"])


def watch(zsock: zmq.Socket[Any]) -> zmq.Socket[Any]:
    monitor = zsock.get_monitor_socket()
    monitor.rcvtimeo = int(TIMEOUT * 1000)
    monitor.linger = 0
    return monitor


# --------------------------------------------------------------------- unit tests


def test_client_hello_bytes() -> None:
    conn = connection("DEALER", mechanism=PlainClientMechanism(b"user", b"pass"))
    greeting = conn.start(staged=False)
    assert greeting[12:17] == b"PLAIN" and greeting[32] == 0
    conn.receive_data(raw_greeting(mechanism=b"PLAIN", as_server=1))
    assert conn.data_to_send() == raw_command(b"HELLO", b"\x04user\x04pass")
    conn.receive_data(raw_command(b"WELCOME"))
    assert conn.data_to_send() == raw_command(
        b"INITIATE", metadata((b"Socket-Type", b"DEALER"), (b"Identity", b""))
    )
    (done,) = conn.receive_data(raw_command(b"READY", metadata((b"Socket-Type", b"ROUTER"))))
    assert isinstance(done, HandshakeComplete)
    assert done.socket_type == "ROUTER"


def test_server_flow_bytes() -> None:
    conn = plain_server()
    events = conn.receive_data(
        raw_greeting(mechanism=b"PLAIN") + raw_command(b"HELLO", b"\x01u\x00")
    )
    assert events == []
    # nothing but the rest of the greeting before the ZAP verdict
    assert past_greeting(conn, conn.data_to_send()) == b""
    assert conn.pending_zap == ZapRequest(b"PLAIN", (b"u", b""))
    assert conn.zap_reply(ZapReply("200", "OK", user_id=b"u")) == []
    assert conn.data_to_send() == raw_command(b"WELCOME")
    initiate = raw_command(
        b"INITIATE", metadata((b"Socket-Type", b"DEALER"), (b"User-Id", b"forged"))
    )
    done, message = conn.receive_data(initiate + b"\x00\x02hi")
    assert isinstance(done, HandshakeComplete)
    assert message == [b"hi"]
    assert done.metadata["User-Id"] == b"u"  # the ZAP answer, never the peer's claim
    assert conn.data_to_send() == raw_command(
        b"READY", metadata((b"Socket-Type", b"ROUTER"), (b"Identity", b""))
    )


@pytest.mark.parametrize(
    "hello",
    [b"", b"\x05user", b"\x04user", b"\x04user\x05pass", b"\x04user\x03pass", b"\x00\x00\x00"],
)
def test_malformed_hello(hello: bytes) -> None:
    conn = plain_server()
    with pytest.raises(ProtocolError, match="malformed PLAIN HELLO"):
        conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"HELLO", hello))
    assert conn.closed


@pytest.mark.parametrize("command", [b"READY", b"INITIATE", b"WELCOME", b"MESSAGE"])
def test_server_refuses_out_of_order(command: bytes) -> None:
    conn = plain_server()
    with pytest.raises(ProtocolError, match="unexpected"):
        conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(command))


def test_server_refuses_second_hello_after_welcome() -> None:
    conn = plain_server()
    conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"HELLO", b"\x00\x00"))
    conn.zap_reply(ZapReply("200"))
    with pytest.raises(ProtocolError, match="INITIATE"):
        conn.receive_data(raw_command(b"HELLO", b"\x00\x00"))


def test_client_refuses_welcome_with_data_and_early_ready() -> None:
    conn = connection("DEALER", mechanism=PlainClientMechanism(b"u", b"p"))
    conn.start()
    with pytest.raises(ProtocolError, match="WELCOME"):
        conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"WELCOME", b"x"))
    conn = connection("DEALER", mechanism=PlainClientMechanism(b"u", b"p"))
    conn.start()
    with pytest.raises(ProtocolError, match="unexpected READY"):
        conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"READY"))


def test_credentials_limited_to_255_bytes() -> None:
    PlainClientMechanism(b"u" * 255, b"p" * 255)
    with pytest.raises(ValueError, match="username"):
        PlainClientMechanism(b"u" * 256, b"")
    with pytest.raises(ValueError, match="password"):
        PlainClientMechanism(b"", b"p" * 256)


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_pair_accepted(chunk: int | None) -> None:
    pair = zap_handshake(
        plain_pair(chunk=chunk), ZapReply("200", "OK", b"admin", {"X-Role": b"ops"})
    )
    assert pair.a.handshake_complete and pair.b.handshake_complete
    assert pair.b.peer_metadata == {
        "Socket-Type": b"DEALER",
        "Identity": b"",
        "X-Role": b"ops",
        "User-Id": b"admin",
    }
    assert pair.a.peer_socket_type == "ROUTER"
    pair.a_sends(pair.a.encode_message([b"one", b"two"]))
    pair.b_sends(pair.b.encode_message([b"back"]))
    a_new, b_new = pair.pump()
    assert a_new == [[b"back"]]
    assert b_new == [[b"one", b"two"]]
    with pytest.raises(ProtocolError, match="after the handshake"):
        pair.b.receive_data(raw_command(b"HELLO", b"\x00\x00"))


def test_pair_refused_with_400() -> None:
    pair = plain_pair(password=b"wrong")
    with pytest.raises(ProtocolError, match="400"):
        zap_handshake(pair, ZapReply("400", "bad password"))
    assert pair.b.closed
    pair.pump()  # the ERROR queued before the refusal reaches the client
    assert pair.a_events == [PeerError("400")]
    assert pair.a.closed and not pair.a.handshake_complete


def test_refused_with_300_sends_no_error() -> None:
    conn = plain_server()
    conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"HELLO", b"\x00\x00"))
    conn.data_to_send()
    with pytest.raises(ProtocolError, match="temporarily"):
        conn.zap_reply(ZapReply("300", "try later"))
    assert conn.data_to_send() == b""
    assert conn.closed
    with pytest.raises(ProtocolError):
        conn.receive_data(b"")


def test_unknown_zap_code_is_500() -> None:
    conn = plain_server()
    conn.receive_data(raw_greeting(mechanism=b"PLAIN") + raw_command(b"HELLO", b"\x00\x00"))
    conn.data_to_send()
    with pytest.raises(ProtocolError, match="500"):
        conn.zap_reply(ZapReply("999"))
    assert conn.data_to_send() == raw_command(b"ERROR", b"\x03500")


# --------------------------------------------------------------------- libzmq as the peer


@pytest.fixture
def authenticator(ctx: zmq.Context[Any]) -> Iterator[zmq.auth.thread.ThreadAuthenticator]:
    auth = zmq.auth.thread.ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_plain(domain="*", passwords={"admin": "secret"})
    yield auth
    auth.stop()


@pytest.mark.usefixtures("authenticator")
def test_libzmq_plain_server_admits_our_client(ctx: zmq.Context[Any]) -> None:
    server = zmq_socket(ctx, zmq.ROUTER, plain_server=True)
    peer = RawPeer(
        connect_raw(server),
        connection("DEALER", mechanism=PlainClientMechanism(b"admin", b"secret")),
    )
    with peer.sock, server:
        events = peer.handshake()
        assert isinstance(events[0], HandshakeComplete)
        assert events[0].socket_type == "ROUTER"
        peer.send(peer.conn.encode_message([b"hello", b"world"]))
        frames = server.recv_multipart(copy=False)
        assert [f.bytes for f in frames[1:]] == [b"hello", b"world"]
        assert frames[1].get("User-Id") == "admin"
        server.send_multipart([frames[0].bytes, b"back", b"again"])
        assert peer.receive() == [b"back", b"again"]


@pytest.mark.usefixtures("authenticator")
def test_libzmq_plain_server_refuses_our_client(ctx: zmq.Context[Any]) -> None:
    server = zmq_socket(ctx, zmq.ROUTER, plain_server=True)
    peer = RawPeer(
        connect_raw(server),
        connection("DEALER", mechanism=PlainClientMechanism(b"admin", b"wrong")),
    )
    with peer.sock, server:
        # the bytes libzmq sends are "^RROR" "\x03400" (see the next tests)
        assert peer.handshake() == [PeerError("400")]
        assert peer.conn.closed


def check_plain(request: ZapRequest) -> ZapReply:
    assert request.mechanism == b"PLAIN"
    if request.credentials == (b"admin", b"secret"):
        return ZapReply("200", "OK", b"admin")
    return ZapReply("400", "bad credentials")


def test_libzmq_plain_client_admitted_by_our_server(
    ctx: zmq.Context[Any], listener: socket.socket
) -> None:
    client = zmq_socket(ctx, zmq.DEALER, plain_username=b"admin", plain_password=b"secret")
    peer = RawPeer(
        accept_from(client, listener), connection("ROUTER", mechanism=PlainServerMechanism())
    )
    with peer.sock, client:
        client.send_multipart([b"hi", b"there"])
        events = peer.handshake(check_plain)
        assert isinstance(events[0], HandshakeComplete)
        assert events[0].socket_type == "DEALER"
        assert events[0].metadata["User-Id"] == b"admin"
        assert peer.receive() == [b"hi", b"there"]
        peer.send(peer.conn.encode_message([b"back"]))
        assert client.recv_multipart() == [b"back"]


def test_libzmq_plain_client_refused_by_our_server(
    ctx: zmq.Context[Any], listener: socket.socket
) -> None:
    client = zmq_socket(ctx, zmq.DEALER, plain_username=b"admin", plain_password=b"nope")
    monitor = watch(client)
    peer = RawPeer(
        accept_from(client, listener), connection("ROUTER", mechanism=PlainServerMechanism())
    )
    with peer.sock, client, monitor:
        with pytest.raises(ProtocolError, match="400"):
            peer.handshake(check_plain)
        # libzmq 4.3's PLAIN client looks for "^RROR" (its "\x05ERROR" C literal reads
        # as "\x5E" "RROR"), so it takes our well-formed ERROR for an unknown command
        assert handshake_failure(monitor) == (
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
            zmq.PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND,
        )


def test_libzmq_plain_error_quirk_is_read_as_error() -> None:
    conn = connection("DEALER", mechanism=PlainClientMechanism(b"u", b"p"))
    conn.start()
    events = conn.receive_data(raw_greeting(mechanism=b"PLAIN") + b"\x04\x09^RROR\x03400")
    assert events == [PeerError("400")]
    assert conn.closed
