"""Hostile or broken authentication: the server fails closed and goes on serving.

* A policy that raises refuses that client with ZAP 500, logs the exception with its
  traceback, and takes neither the socket nor the process down.
* A policy that blocks (a plain ``authenticate`` that sleeps) runs in a worker
  thread: the other sockets of the process keep moving meanwhile.
* A policy that never answers is ended by ``handshake_ivl``.
* A routing id that starts with a zero byte (the range ROUTER generates ids in) is
  treated as none: it cannot take over an anonymous peer's route.
* PLAIN compares passwords in constant time, unknown users included.

Each case has a well-behaved libzmq peer (pyzmq) checking the socket still serves.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

import pytest
import trio
import zmq

import trizmq
from trizmq._zap import Verdict, ZapRequestFrames

pytestmark = pytest.mark.skipif(not zmq.has("curve"), reason="libzmq built without CURVE")


def libzmq_curve_push(endpoint: str, server_public: bytes, keys: tuple[bytes, bytes]) -> Any:
    ctx: Any = zmq.Context.instance()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.sndtimeo = 5000
    push.curve_serverkey = server_public
    push.curve_publickey, push.curve_secretkey = keys
    push.connect(endpoint)
    return push


class Picky(trizmq.Authenticator):
    """Raises on one key, admits the others."""

    def __init__(self, bad_key: bytes) -> None:
        super().__init__()
        self.bad_key = bad_key

    async def authenticate(self, request: ZapRequestFrames) -> Verdict:
        if trizmq.z85_encode(request.credentials[0]) == self.bad_key:
            raise RuntimeError("the policy database is on fire")
        return "200", "OK", b"", {}


async def receive_from(pull: trizmq.Pull, expected: bytes) -> None:
    """Receive until ``expected`` arrives (messages of another client may come first)."""
    while await pull.recv() != expected:
        pass


async def test_a_raising_policy_refuses_with_500_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server_public, server_secret = trizmq.curve_keypair()
    good, bad, later = zmq.curve_keypair(), zmq.curve_keypair(), zmq.curve_keypair()
    socks: list[Any] = []
    with trio.fail_after(30):
        async with (
            Picky(bad[0]),
            trizmq.Pull(security=trizmq.CurveServer(secret_key=server_secret)) as pull,
            pull.monitor() as events,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            try:
                socks.append(libzmq_curve_push(endpoint, server_public, good))
                socks[0].send(b"before")
                await receive_from(pull, b"before")
                socks.append(libzmq_curve_push(endpoint, server_public, bad))
                socks[1].send(b"never", flags=zmq.NOBLOCK)
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed) and "500" in event.reason:
                        break
                socks.append(libzmq_curve_push(endpoint, server_public, later))
                socks[2].send(b"after")
                socks[0].send(b"still")
                await receive_from(pull, b"after")
                assert pull.statistics()["live_peers"] == 2
            finally:
                for sock in socks:
                    sock.close()
    failures = [r for r in caplog.records if "the authenticator failed" in r.getMessage()]
    assert failures and failures[0].exc_info is not None
    assert "policy database is on fire" in caplog.text


class Slow(trizmq.Authenticator):
    """A plain (blocking) policy: two seconds per client."""

    def authenticate(self, request: ZapRequestFrames) -> Verdict:
        time.sleep(2)
        return "200", "OK", b"", {}


async def test_a_blocking_policy_does_not_stall_the_other_sockets() -> None:
    server_public, server_secret = trizmq.curve_keypair()
    keys = zmq.curve_keypair()
    with trio.fail_after(30):
        async with (
            Slow(),
            trizmq.Pull(security=trizmq.CurveServer(secret_key=server_secret)) as pull,
            trizmq.Pull(bind="inproc://busy") as busy_pull,
            trizmq.Push(connect="inproc://busy") as busy_push,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            push = libzmq_curve_push(endpoint, server_public, keys)
            moved = 0
            try:
                push.send(b"slowly admitted")
                async with trio.open_nursery() as nursery:

                    async def keep_busy() -> None:
                        nonlocal moved
                        while True:
                            await busy_push.send(b"x")
                            await busy_pull.recv()
                            moved += 1
                            await trio.sleep(0.01)

                    nursery.start_soon(keep_busy)
                    await receive_from(pull, b"slowly admitted")
                    nursery.cancel_scope.cancel()
            finally:
                push.close()
    # about 2 s of 10 ms steps passed while the policy slept in its thread
    assert moved >= 50


class Mute(trizmq.Authenticator):
    """A policy that never answers."""

    async def authenticate(self, request: ZapRequestFrames) -> Verdict:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_policy_that_never_answers_is_ended_by_handshake_ivl() -> None:
    server_public, server_secret = trizmq.curve_keypair()
    keys = zmq.curve_keypair()
    with trio.fail_after(30):
        async with (
            Mute(),
            trizmq.Pull(
                security=trizmq.CurveServer(secret_key=server_secret), handshake_ivl=0.5
            ) as pull,
            pull.monitor() as events,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            push = libzmq_curve_push(endpoint, server_public, keys)
            try:
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        assert event.reason == "handshake timed out"
                        break
            finally:
                push.close()
            assert pull.statistics()["live_peers"] == 0


async def test_an_announced_zero_id_cannot_take_over_a_route() -> None:
    """With router_handover, a peer announcing the id ROUTER generated for an anonymous
    libzmq DEALER gets an id of its own: the DEALER keeps its replies."""
    ctx: Any = zmq.Context.instance()
    with trio.fail_after(30):
        async with trizmq.Router(router_handover=True) as router:
            endpoint = await router.bind("tcp://127.0.0.1:0")
            anonymous = ctx.socket(zmq.DEALER)
            anonymous.linger = 0
            anonymous.rcvtimeo = 5000
            anonymous.connect(endpoint)
            try:
                anonymous.send(b"hello")
                rid, body = await router.recv_multipart()
                assert body == b"hello" and rid[0] == 0
                async with trizmq.Dealer(routing_id=rid, connect=endpoint) as thief:
                    await thief.send(b"it is me")
                    thief_rid, body = await router.recv_multipart()
                    assert body == b"it is me"
                    assert thief_rid != rid
                    await router.send_multipart([rid, b"for the anonymous peer"])
                    assert await trio.to_thread.run_sync(anonymous.recv) == (
                        b"for the anonymous peer"
                    )
                    with trio.move_on_after(0.2):
                        await thief.recv()
                        raise AssertionError("the reply went to the thief")
            finally:
                anonymous.close()


def test_plain_passwords_compare_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    auth = trizmq.Authenticator(passwords={b"admin": b"secret"})

    def verdict(user: bytes, password: bytes) -> str:
        request = ZapRequestFrames(b"1", "", "127.0.0.1", b"", "PLAIN", (user, password))
        return auth.authenticate(request)[0]

    assert verdict(b"admin", b"secret") == "200"
    assert verdict(b"admin", b"wrong") == "400"
    assert verdict(b"nobody", b"secret") == "400"
    assert len(compared) == 3  # the unknown user cost a comparison too


async def test_plain_still_admits_the_right_password_against_libzmq() -> None:
    ctx: Any = zmq.Context.instance()
    with trio.fail_after(30):
        async with (
            trizmq.Authenticator(passwords={b"admin": b"secret"}),
            trizmq.Pull(security=trizmq.PlainServer()) as pull,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            push = ctx.socket(zmq.PUSH)
            push.linger = 0
            push.plain_username, push.plain_password = b"admin", b"secret"
            push.connect(endpoint)
            try:
                push.send(b"welcome")
                assert await pull.recv() == b"welcome"
            finally:
                push.close()
