"""CURVE and PLAIN against libzmq (through pyzmq), over tcp and ipc, both ways.

* round trips with trizmq as the server and libzmq as the client, and the reverse,
  with keys made by either library (``trizmq.curve_keypair`` / ``zmq.curve_keypair``);
* refusals: libzmq's ZAP handler (``zmq.auth.thread.ThreadAuthenticator``) refusing a
  trizmq client, trizmq's :class:`~trizmq.Authenticator` refusing a libzmq client,
  and a CURVE client holding the wrong server key. Nothing is delivered, the refused
  side logs why, and the server keeps serving a good client afterwards;
* the User-Id libzmq's ZAP handler gives a trizmq PLAIN client reaches libzmq's
  messages. (The other direction, a trizmq Authenticator's user id on trizmq's
  messages, has no API yet: trizmq has no per-message metadata.)

Every pyzmq call runs in a worker thread with RCVTIMEO/SNDTIMEO/LINGER set (see
:mod:`tests.interop.libzmq`); authenticators are stopped and sockets closed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import trio
import zmq
import zmq.auth
import zmq.auth.thread

import trizmq

from .libzmq import Endpoints, LibzmqSocket

pytestmark = pytest.mark.skipif(not zmq.has("curve"), reason="libzmq built without CURVE")

LibzmqFactory = Callable[[int], LibzmqSocket]
Context = zmq.Context[zmq.Socket[bytes]]

#: milliseconds we give libzmq to show that nothing was delivered (after the refusal)
NOTHING_MS = 300


def keypair(maker: str) -> tuple[bytes, bytes]:
    """(public, secret) in Z85, made by trizmq or by libzmq."""
    if maker == "trizmq":
        return trizmq.curve_keypair()
    public, secret = zmq.curve_keypair()
    return public, secret


key_makers = pytest.mark.parametrize("maker", ["trizmq", "libzmq"])


def curve_server(sock: LibzmqSocket, secret: bytes) -> None:
    sock.sock.curve_server = True
    sock.sock.curve_secretkey = secret


async def bound_curve_server(
    libzmq: LibzmqFactory, kind: int, secret: bytes, endpoints: Endpoints
) -> tuple[LibzmqSocket, str]:
    """A libzmq socket of ``kind``, a CURVE server with ``secret``, bound: it and its
    endpoint."""
    sock = libzmq(kind)
    curve_server(sock, secret)
    return sock, await sock.bind(endpoints.for_libzmq())


def curve_client(sock: LibzmqSocket, server_public: bytes, keys: tuple[bytes, bytes]) -> None:
    sock.sock.curve_serverkey = server_public
    sock.sock.curve_publickey = keys[0]
    sock.sock.curve_secretkey = keys[1]


@contextmanager
def zap_handler(ctx: Context) -> Iterator[zmq.auth.thread.ThreadAuthenticator]:
    """libzmq's ZAP handler for ``ctx``, stopped at the end."""
    auth = zmq.auth.thread.ThreadAuthenticator(ctx)
    auth.start()
    try:
        yield auth
    finally:
        auth.stop()


async def next_event(
    events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]
) -> trizmq.MonitorEvent:
    async for event in events:
        if isinstance(event, kind):
            return event
    raise AssertionError(f"the monitor ended before a {kind.__name__}")


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "trizmq" and r.levelno >= logging.WARNING and "refused" in r.getMessage()
    ]


# -- round trips ----------------------------------------------------------------------


@key_makers
async def test_curve_trizmq_server_libzmq_client(
    endpoints: Endpoints, libzmq: LibzmqFactory, maker: str
) -> None:
    server_public, server_secret = keypair(maker)
    client_keys = keypair("libzmq" if maker == "trizmq" else "trizmq")
    with trio.fail_after(20):
        async with trizmq.Rep(security=trizmq.CurveServer(secret_key=server_secret)) as rep:
            endpoint = await rep.bind(endpoints.for_trizmq())
            req = libzmq(zmq.REQ)
            curve_client(req, server_public, client_keys)
            await req.connect(endpoint)
            for i in range(3):
                await req.send_multipart([b"ping", b"%d" % i, b"x" * 300])
                assert await rep.recv_multipart() == [b"ping", b"%d" % i, b"x" * 300]
                await rep.send_multipart([b"pong", b"%d" % i])
                assert await req.recv_multipart() == [b"pong", b"%d" % i]


@key_makers
async def test_curve_libzmq_server_trizmq_client(
    endpoints: Endpoints, libzmq: LibzmqFactory, maker: str
) -> None:
    server_public, server_secret = keypair(maker)
    client_public, client_secret = keypair("libzmq" if maker == "trizmq" else "trizmq")
    with trio.fail_after(20):
        rep, endpoint = await bound_curve_server(libzmq, zmq.REP, server_secret, endpoints)
        security = trizmq.CurveClient(
            server_key=server_public, public_key=client_public, secret_key=client_secret
        )
        async with trizmq.Req(security=security, connect=endpoint) as req:
            for i in range(3):
                await req.send_multipart([b"ping", b"%d" % i, b"y" * 70000])
                assert await rep.recv_multipart() == [b"ping", b"%d" % i, b"y" * 70000]
                await rep.send_multipart([b"pong", b"%d" % i])
                assert await req.recv_multipart() == [b"pong", b"%d" % i]


async def test_curve_pubsub_subscriptions_cross_the_box(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """A libzmq SUB's subscription, inside a CURVE box, filters a trizmq PUB."""
    server_public, server_secret = trizmq.curve_keypair()
    with trio.fail_after(20):
        async with trizmq.Pub(security=trizmq.CurveServer(secret_key=server_secret)) as pub:
            async with pub.monitor() as events:
                endpoint = await pub.bind(endpoints.for_trizmq())
                sub = libzmq(zmq.SUB)
                curve_client(sub, server_public, zmq.curve_keypair())
                sub.subscribe(b"yes")
                await sub.connect(endpoint)
                await next_event(events, trizmq.HandshakeSucceeded)
            # the subscription arrives after the handshake: publish until it is in
            while (got := await sub.poll_recv(20)) is None:
                await pub.send_multipart([b"no", b"dropped"])
                await pub.send_multipart([b"yes", b"kept"])
            assert got == [b"yes", b"kept"]


async def test_plain_trizmq_server_libzmq_client(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    with trio.fail_after(20):
        async with (
            trizmq.Authenticator(passwords={b"admin": b"secret"}) as auth,
            trizmq.Pull(security=trizmq.PlainServer()) as pull,
        ):
            endpoint = await pull.bind(endpoints.for_trizmq())
            push = libzmq(zmq.PUSH)
            push.sock.plain_username = b"admin"
            push.sock.plain_password = b"secret"
            await push.connect(endpoint)
            await push.send_multipart([b"hello", b"plain"])
            assert await pull.recv_multipart() == [b"hello", b"plain"]
            assert auth.admitted == 1


async def test_plain_libzmq_server_trizmq_client(
    endpoints: Endpoints, libzmq: LibzmqFactory, zmq_ctx: Context
) -> None:
    with trio.fail_after(20), zap_handler(zmq_ctx) as auth:
        auth.configure_plain(domain="*", passwords={"admin": "secret"})
        pull = libzmq(zmq.PULL)
        pull.sock.plain_server = True
        endpoint = await pull.bind(endpoints.for_libzmq())
        client = trizmq.PlainClient(username="admin", password="secret")
        async with trizmq.Push(security=client, connect=endpoint) as push:
            await push.send_multipart([b"hello", b"plain"])

            def recv_with_user_id() -> tuple[list[bytes], object]:
                frames = pull.sock.recv_multipart(copy=False)
                return [f.bytes for f in frames], frames[0].get("User-Id")

            frames, user_id = await trio.to_thread.run_sync(recv_with_user_id)
            assert frames == [b"hello", b"plain"]
            # libzmq's ZAP handler names the PLAIN user; it reaches every message
            assert user_id == "admin"


# -- libzmq's ZAP handler refusing trizmq ---------------------------------------------


async def _refused_by_libzmq(
    pull: LibzmqSocket, endpoint: str, security: trizmq.PlainClient | trizmq.CurveClient
) -> None:
    """A trizmq client the libzmq server refuses: HandshakeFailed, nothing delivered."""
    async with trizmq.Push(security=security, linger=0) as push, push.monitor() as events:
        await push.connect(endpoint)
        await push.send_multipart([b"must not arrive"])
        failed = await next_event(events, trizmq.HandshakeFailed)
        assert isinstance(failed, trizmq.HandshakeFailed)
        assert "400" in failed.reason, failed.reason
        assert await pull.poll_recv(NOTHING_MS) is None


async def test_libzmq_zap_refuses_a_wrong_password(
    endpoints: Endpoints,
    libzmq: LibzmqFactory,
    zmq_ctx: Context,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(20), zap_handler(zmq_ctx) as auth:
        auth.configure_plain(domain="*", passwords={"admin": "secret"})
        pull = libzmq(zmq.PULL)
        pull.sock.plain_server = True
        endpoint = await pull.bind(endpoints.for_libzmq())
        await _refused_by_libzmq(
            pull, endpoint, trizmq.PlainClient(username="admin", password="wrong")
        )
        assert refusals(caplog), caplog.text
        # the server still serves a client with the right password
        good = trizmq.PlainClient(username="admin", password="secret")
        async with trizmq.Push(security=good, connect=endpoint) as push:
            await push.send_multipart([b"welcome"])
            assert await pull.recv_multipart() == [b"welcome"]


async def test_libzmq_zap_refuses_an_unknown_curve_key(
    endpoints: Endpoints,
    libzmq: LibzmqFactory,
    zmq_ctx: Context,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    # libzmq's authenticator admits the keys of the certificates in a directory
    certs = tmp_path / "certs"
    certs.mkdir()
    _public_file, secret_file = zmq.auth.create_certificates(str(certs), "allowed")
    allowed_public, allowed_secret = zmq.auth.load_certificate(secret_file)
    assert allowed_secret is not None
    server_public, server_secret = zmq.curve_keypair()
    with trio.fail_after(20), zap_handler(zmq_ctx) as auth:
        auth.configure_curve(domain="*", location=str(certs))
        pull, endpoint = await bound_curve_server(libzmq, zmq.PULL, server_secret, endpoints)
        stranger_public, stranger_secret = trizmq.curve_keypair()
        stranger = trizmq.CurveClient(
            server_key=server_public, public_key=stranger_public, secret_key=stranger_secret
        )
        await _refused_by_libzmq(pull, endpoint, stranger)
        assert refusals(caplog), caplog.text
        allowed = trizmq.CurveClient(
            server_key=server_public, public_key=allowed_public, secret_key=allowed_secret
        )
        async with trizmq.Push(security=allowed, connect=endpoint) as push:
            await push.send_multipart([b"welcome"])
            assert await pull.recv_multipart() == [b"welcome"]


# -- trizmq's Authenticator refusing libzmq -------------------------------------------


async def _refused_by_trizmq(
    pull: trizmq.Pull, events: trizmq.Monitor, bad: LibzmqSocket, good: LibzmqSocket, endpoint: str
) -> None:

    def connect_and_offer() -> None:
        # connect and queue at once: once trizmq refuses the handshake, libzmq ends
        # that session and its pipe for good (no reconnect after a protocol error),
        # and a send that came too late would block; a send refused then has
        # nothing to deliver, which is the point of the test too
        bad.sock.connect(endpoint)
        with suppress(zmq.Again):
            bad.sock.send_multipart([b"must not arrive"], zmq.NOBLOCK)

    await trio.to_thread.run_sync(connect_and_offer)
    await next_event(events, trizmq.HandshakeFailed)
    await good.connect(endpoint)
    await good.send_multipart([b"welcome"])
    # the good client's message is the first (and only) one the socket delivers
    assert await pull.recv_multipart() == [b"welcome"]
    with trio.move_on_after(NOTHING_MS / 1000):
        extra = await pull.recv_multipart()
        raise AssertionError(f"a refused client's message was delivered: {extra}")


async def test_trizmq_authenticator_refuses_a_libzmq_curve_key(
    endpoints: Endpoints, libzmq: LibzmqFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="trizmq")
    server_public, server_secret = trizmq.curve_keypair()
    good_keys, bad_keys = zmq.curve_keypair(), zmq.curve_keypair()
    with trio.fail_after(20):
        async with trizmq.Authenticator(curve_keys=[good_keys[0]]) as auth:
            security = trizmq.CurveServer(secret_key=server_secret)
            async with trizmq.Pull(security=security) as pull, pull.monitor() as events:
                endpoint = await pull.bind(endpoints.for_trizmq())
                bad, good = libzmq(zmq.PUSH), libzmq(zmq.PUSH)
                curve_client(bad, server_public, bad_keys)
                curve_client(good, server_public, good_keys)
                await _refused_by_trizmq(pull, events, bad, good, endpoint)
            assert auth.refused >= 1
            assert auth.admitted == 1
    assert any("unknown public key" in r.getMessage() for r in caplog.records), caplog.text


async def test_trizmq_authenticator_refuses_a_libzmq_wrong_password(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    with trio.fail_after(20):
        async with trizmq.Authenticator(passwords={"admin": "secret"}) as auth:
            security = trizmq.PlainServer()
            async with trizmq.Pull(security=security) as pull, pull.monitor() as events:
                endpoint = await pull.bind(endpoints.for_trizmq())
                bad, good = libzmq(zmq.PUSH), libzmq(zmq.PUSH)
                bad.sock.plain_username, bad.sock.plain_password = b"admin", b"guess"
                good.sock.plain_username, good.sock.plain_password = b"admin", b"secret"
                await _refused_by_trizmq(pull, events, bad, good, endpoint)
            assert auth.refused >= 1
            assert auth.admitted == 1


# -- the wrong server key ---------------------------------------------------------------


async def test_libzmq_client_with_a_wrong_server_key_gets_nothing_through(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    server_public, server_secret = trizmq.curve_keypair()
    impostor_public, _ = trizmq.curve_keypair()
    with trio.fail_after(20):
        security = trizmq.CurveServer(secret_key=server_secret)
        async with trizmq.Pull(security=security) as pull, pull.monitor() as events:
            endpoint = await pull.bind(endpoints.for_trizmq())
            bad, good = libzmq(zmq.PUSH), libzmq(zmq.PUSH)
            curve_client(bad, impostor_public, zmq.curve_keypair())
            curve_client(good, server_public, zmq.curve_keypair())
            await _refused_by_trizmq(pull, events, bad, good, endpoint)


async def test_trizmq_client_with_a_wrong_server_key_gets_nothing_through(
    endpoints: Endpoints, libzmq: LibzmqFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    server_public, server_secret = zmq.curve_keypair()
    impostor_public, _ = zmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    with trio.fail_after(20):
        pull, endpoint = await bound_curve_server(libzmq, zmq.PULL, server_secret, endpoints)
        wrong = trizmq.CurveClient(
            server_key=impostor_public, public_key=client_public, secret_key=client_secret
        )
        async with trizmq.Push(security=wrong, linger=0) as push, push.monitor() as events:
            await push.connect(endpoint)
            await push.send_multipart([b"must not arrive"])
            # libzmq cannot open the HELLO box and hangs up; trizmq sees it go
            await next_event(events, trizmq.HandshakeFailed)
            assert await pull.poll_recv(NOTHING_MS) is None
        right = trizmq.CurveClient(
            server_key=server_public, public_key=client_public, secret_key=client_secret
        )
        async with trizmq.Push(security=right, connect=endpoint) as push:
            await push.send_multipart([b"welcome"])
            assert await pull.recv_multipart() == [b"welcome"]


async def test_curve_stream_of_mixed_sizes_reaches_libzmq_in_order(
    endpoints: Endpoints, libzmq: LibzmqFactory
) -> None:
    """Every box in nonce order, whoever writes it: the sending task (write-through,
    whole or in part through a small kernel buffer) or the writer (batches, big
    frames, the bytes a partial write left owed). libzmq drops the connection at the
    first nonce out of order, so all arriving in order proves the order held."""
    server_public, server_secret = keypair("libzmq")
    client_public, client_secret = keypair("trizmq")
    sizes = [64, 4096, 70_000, 1, 300]
    messages = [[b"%d" % i, bytes([i % 251]) * sizes[i % len(sizes)]] for i in range(600)]
    expected = []
    for i, message in enumerate(messages):
        expected += [message] if i % 3 else [message, message]
    with trio.fail_after(60):
        pull, endpoint = await bound_curve_server(libzmq, zmq.PULL, server_secret, endpoints)
        security = trizmq.CurveClient(
            server_key=server_public, public_key=client_public, secret_key=client_secret
        )
        async with trizmq.Push(security=security, connect=endpoint, sndbuf=65536) as push:
            for i, message in enumerate(messages):
                if i % 3:
                    await push.send_multipart(message)  # one at a time: write-through
                else:
                    await push.send_many([message, message])  # a batch
            received = await pull.recv_many(len(expected))
    assert received == expected
