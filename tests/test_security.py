"""Security between trizmq sockets: CURVE and PLAIN round trips and the Authenticator's rules.

* CURVE and PLAIN carry PUSH/PULL, REQ/REP and PUB/SUB (whose subscriptions travel
  inside CURVE boxes) over tcp and ipc;
* the Authenticator's rules (``trizmq/_zap.py``): allow and deny lists (addresses and
  networks), PLAIN passwords, CURVE key lists or any key, the ZAP domain, NULL
  consulted only with a ``zap_domain``; and what happens without an authenticator;
* bad keys and credentials fail at construction, naming the argument;
* a refused client backs off (≥ 1 s between attempts, in virtual time);
* Z85 keys round-trip;
* inproc links skip the mechanism altogether: security is not applied there.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import trizmq
from trizmq.testing import SocketFactory, VirtualNetwork

SERVER_PUBLIC, SERVER_SECRET = trizmq.curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = trizmq.curve_keypair()
OTHER_PUBLIC, OTHER_SECRET = trizmq.curve_keypair()

#: a value of no accepted type (typed Any so that the checker lets it through)
WRONG_TYPE: Any = 12345

#: seconds we wait to see that a refused client's message is not delivered
NOTHING = 0.2


def curve_server() -> trizmq.CurveServer:
    return trizmq.CurveServer(secret_key=SERVER_SECRET)


def curve_client(
    public: bytes = CLIENT_PUBLIC, secret: bytes = CLIENT_SECRET
) -> trizmq.CurveClient:
    return trizmq.CurveClient(server_key=SERVER_PUBLIC, public_key=public, secret_key=secret)


def plain_client(password: str = "secret", username: str = "admin") -> trizmq.PlainClient:
    return trizmq.PlainClient(username=username, password=password)


SECURITY: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "curve": (curve_server, curve_client),
    "plain": (trizmq.PlainServer, plain_client),
}


@pytest.fixture(params=["tcp", "ipc", "ws"])
def bind_endpoint(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "ws":
        return "ws://127.0.0.1:0/secure"  # the mechanism chosen by Sec-WebSocket-Protocol
    return "tcp://127.0.0.1:0" if request.param == "tcp" else f"ipc://{tmp_path}/sec.ipc"


async def first_outcome(events: trizmq.Monitor) -> trizmq.MonitorEvent:
    """The server's first HandshakeSucceeded or HandshakeFailed."""
    async for event in events:
        if isinstance(event, (trizmq.HandshakeSucceeded, trizmq.HandshakeFailed)):
            return event
    raise AssertionError("the monitor ended before the handshake did")


async def admitted(
    server_security: Any,
    client_security: Any,
    *,
    endpoint: str = "tcp://127.0.0.1:0",
    **server_options: Any,
) -> bool:
    """Does a Pull with ``server_security`` admit a Push with ``client_security``?

    Admitted, the Push's message arrives; refused, nothing is delivered.
    """
    async with (
        trizmq.Pull(security=server_security, **server_options) as pull,
        pull.monitor() as events,
    ):
        bound = await pull.bind(endpoint)
        async with trizmq.Push(security=client_security, linger=0) as push:
            await push.connect(bound)
            await push.send(b"knock")
            outcome = await first_outcome(events)
            result = isinstance(outcome, trizmq.HandshakeSucceeded)
            if result:
                assert await pull.recv() == b"knock"
            else:
                with trio.move_on_after(NOTHING):
                    got = await pull.recv()
                    raise AssertionError(f"a refused client's message was delivered: {got!r}")
    return result


# -- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["curve", "plain"])
async def test_push_pull(mechanism: str, bind_endpoint: str) -> None:
    server, client = SECURITY[mechanism]
    with trio.fail_after(10):
        async with (
            trizmq.Authenticator(passwords={"admin": "secret"}),
            trizmq.Pull(security=server()) as pull,
        ):
            endpoint = await pull.bind(bind_endpoint)
            async with trizmq.Push(security=client(), connect=endpoint) as push:
                messages = [[b"%d" % i, b"x" * (i * 997)] for i in range(50)]
                for message in messages:
                    await push.send_multipart(message)
                for message in messages:
                    assert await pull.recv_multipart() == message


@pytest.mark.parametrize("mechanism", ["curve", "plain"])
async def test_req_rep(mechanism: str, bind_endpoint: str) -> None:
    server, client = SECURITY[mechanism]
    with trio.fail_after(10):
        async with (
            trizmq.Authenticator(passwords={"admin": "secret"}),
            trizmq.Rep(security=server()) as rep,
        ):
            endpoint = await rep.bind(bind_endpoint)
            async with trizmq.Req(security=client(), connect=endpoint) as req:
                for i in range(10):
                    await req.send_multipart([b"question", b"%d" % i])
                    assert await rep.recv_multipart() == [b"question", b"%d" % i]
                    await rep.send_multipart([b"answer", b"%d" % i, b"z" * 100_000])
                    assert await req.recv_multipart() == [b"answer", b"%d" % i, b"z" * 100_000]


@pytest.mark.parametrize("mechanism", ["curve", "plain"])
async def test_pub_sub_subscriptions_travel_secured(mechanism: str, bind_endpoint: str) -> None:
    server, client = SECURITY[mechanism]
    with trio.fail_after(10):
        async with (
            trizmq.Authenticator(passwords={"admin": "secret"}),
            trizmq.Pub(security=server()) as pub,
        ):
            endpoint = await pub.bind(bind_endpoint)
            async with trizmq.Sub(security=client(), connect=endpoint, subscribe=b"yes") as sub:
                # the subscription reaches the PUB after the handshake: publish till then
                got = None
                while got is None:
                    await pub.send_multipart([b"no", b"filtered"])
                    await pub.send_multipart([b"yes", b"kept"])
                    with trio.move_on_after(0.01):
                        got = await sub.recv_multipart()
                assert got == [b"yes", b"kept"]
                await pub.send_multipart([b"no", b"filtered"])
                await pub.send_multipart([b"yes", b"last"])
                while (msg := await sub.recv_multipart()) != [b"yes", b"last"]:
                    assert msg == [b"yes", b"kept"]


async def test_the_curve_client_may_be_the_binding_side() -> None:
    """The CURVE client may be the binding side: security is per side, not per bind."""
    with trio.fail_after(10):
        async with trizmq.Pull(security=curve_client()) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(security=curve_server(), connect=endpoint) as push:
                await push.send(b"reversed roles")
                assert await pull.recv() == b"reversed roles"


# -- the Authenticator's rules ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ({"allow": ["127.0.0.1"]}, True),
        ({"allow": ["127.0.0.0/8"]}, True),
        ({"allow": ["10.0.0.0/8", "192.168.1.1"]}, False),
        ({"allow": "127.0.0.1"}, True),  # a single str is one entry
        ({"deny": ["127.0.0.1"]}, False),
        ({"deny": ["127.0.0.0/24"]}, False),
        ({"deny": ["10.0.0.0/8"]}, True),
        ({"allow": ["127.0.0.0/8"], "deny": ["127.0.0.1"]}, False),  # deny wins
    ],
)
async def test_address_lists(rules: dict[str, Any], expected: bool) -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(**rules) as auth:
            assert await admitted(curve_server(), curve_client()) is expected
        assert (auth.admitted, auth.refused) == ((1, 0) if expected else (0, 1))


async def test_an_allow_list_refuses_ipc_clients(tmp_path: Path) -> None:
    """An ipc client has no IP address: an allow list refuses it, a deny list does not."""
    with trio.fail_after(10):
        endpoint = f"ipc://{tmp_path}/allow.ipc"
        async with trizmq.Authenticator(allow=["127.0.0.1"]):
            assert not await admitted(curve_server(), curve_client(), endpoint=endpoint)
        async with trizmq.Authenticator(deny=["127.0.0.1"]):
            assert await admitted(curve_server(), curve_client(), endpoint=endpoint)


async def test_address_lists_apply_before_credentials(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="trizmq")
    with trio.fail_after(10):
        async with trizmq.Authenticator(passwords={"admin": "secret"}, deny=["127.0.0.1"]):
            assert not await admitted(trizmq.PlainServer(), plain_client())
    assert any("address denied" in r.getMessage() for r in caplog.records), caplog.text


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (plain_client(), True),
        (plain_client(password="wrong"), False),
        (plain_client(username="nobody"), False),
        (plain_client(password=""), False),
    ],
)
async def test_plain_passwords(client: trizmq.PlainClient, expected: bool) -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(passwords={b"admin": b"secret", "other": "pw"}):
            assert await admitted(trizmq.PlainServer(), client) is expected


async def test_plain_without_passwords_refuses_everyone() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(allow=["127.0.0.1"]) as auth:
            assert not await admitted(trizmq.PlainServer(), plain_client())
        assert auth.refused == 1


async def test_curve_key_list() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(curve_keys=[CLIENT_PUBLIC]) as auth:
            assert await admitted(curve_server(), curve_client())
            assert not await admitted(curve_server(), curve_client(OTHER_PUBLIC, OTHER_SECRET))
        assert (auth.admitted, auth.refused) == (1, 1)


async def test_curve_key_list_takes_raw_keys_and_an_empty_list_admits_nobody() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(curve_keys=[trizmq.z85_decode(CLIENT_PUBLIC)]):
            assert await admitted(curve_server(), curve_client())
        async with trizmq.Authenticator(curve_keys=[]):
            assert not await admitted(curve_server(), curve_client())


async def test_curve_without_a_key_list_admits_any_key() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator() as auth:
            assert await admitted(curve_server(), curve_client())
            assert await admitted(curve_server(), curve_client(OTHER_PUBLIC, OTHER_SECRET))
        assert auth.admitted == 2


@pytest.mark.parametrize(
    ("zap_domain", "expected"), [("global", True), ("other", False), ("", False)]
)
async def test_domain(zap_domain: str, expected: bool) -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(domain="global"):
            assert await admitted(curve_server(), curve_client(), zap_domain=zap_domain) is expected


async def test_null_consults_zap_only_with_a_zap_domain() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator(deny=["127.0.0.1"]) as auth:
            # no zap_domain: NULL never asks, the denied address is admitted
            assert await admitted(None, None)
            assert (auth.admitted, auth.refused) == (0, 0)
            assert not await admitted(None, None, zap_domain="guarded")
            assert (auth.admitted, auth.refused) == (0, 1)
        async with trizmq.Authenticator(allow=["127.0.0.1"]) as auth:
            assert await admitted(None, None, zap_domain="guarded")
            assert (auth.admitted, auth.refused) == (1, 0)


async def test_without_an_authenticator_curve_admits_and_plain_refuses() -> None:
    with trio.fail_after(10):
        assert await admitted(curve_server(), curve_client())
        assert await admitted(curve_server(), curve_client(OTHER_PUBLIC, OTHER_SECRET))
        assert not await admitted(trizmq.PlainServer(), plain_client())
        # and NULL with a zap_domain but nobody to ask is admitted, as in libzmq
        assert await admitted(None, None, zap_domain="guarded")


async def test_an_authenticator_serves_sockets_opened_before_it() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(security=trizmq.PlainServer()) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with (
                trizmq.Authenticator(passwords={"admin": "secret"}) as auth,
                trizmq.Push(security=plain_client(), connect=endpoint) as push,
            ):
                await push.send(b"late authenticator")
                assert await pull.recv() == b"late authenticator"
            assert auth.admitted == 1


async def test_one_authenticator_per_run() -> None:
    with trio.fail_after(10):
        async with trizmq.Authenticator():
            with pytest.raises(RuntimeError, match="already"):
                async with trizmq.Authenticator():
                    pass  # pragma: no cover


async def test_a_custom_policy_overrides_authenticate() -> None:
    class OnlyAdmin(trizmq.Authenticator):
        def authenticate(self, request: Any) -> tuple[str, str, bytes, dict[str, bytes]]:
            if request.mechanism == "PLAIN" and request.credentials[0] == b"admin":
                return "200", "OK", b"admin", {}
            return "400", "not admin", b"", {}

    with trio.fail_after(10):
        async with OnlyAdmin():
            assert await admitted(trizmq.PlainServer(), plain_client(password="anything"))
            assert not await admitted(trizmq.PlainServer(), plain_client(username="guest"))


# -- construction errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "error", "name"),
    [
        (lambda: trizmq.CurveServer(secret_key=b"short"), ValueError, "secret_key"),
        (lambda: trizmq.CurveServer(secret_key=WRONG_TYPE), TypeError, "secret_key"),
        (lambda: trizmq.CurveServer(secret_key="~" * 40), ValueError, "secret_key"),
        (lambda: trizmq.CurveServer(secret_key="a" * 39), ValueError, "secret_key"),
        (
            lambda: trizmq.CurveClient(
                server_key=b"x" * 31, public_key=CLIENT_PUBLIC, secret_key=CLIENT_SECRET
            ),
            ValueError,
            "server_key",
        ),
        (
            lambda: trizmq.CurveClient(
                server_key=SERVER_PUBLIC,
                public_key=WRONG_TYPE,
                secret_key=CLIENT_SECRET,
            ),
            TypeError,
            "public_key",
        ),
        (
            lambda: trizmq.CurveClient(
                server_key=SERVER_PUBLIC, public_key=OTHER_PUBLIC, secret_key=CLIENT_SECRET
            ),
            ValueError,
            "public_key",
        ),
        (lambda: trizmq.PlainClient(username=WRONG_TYPE, password="pw"), TypeError, "username"),
        (lambda: trizmq.PlainClient(username="u", password="p" * 256), ValueError, "password"),
        (lambda: trizmq.Authenticator(curve_keys=["not a key"]), ValueError, "curve_keys"),
        (lambda: trizmq.Authenticator(allow=["nowhere"]), ValueError, "allow"),
        (lambda: trizmq.Authenticator(deny=["10.0.0.0/33"]), ValueError, "deny"),
        (lambda: trizmq.Pull(security="CURVE"), ValueError, "security"),
        (lambda: trizmq.Pull(zap_domain=b"bytes"), ValueError, "zap_domain"),
        (lambda: trizmq.Pull(max_handshakes=0), ValueError, "max_handshakes"),
        (lambda: trizmq.Pull(handshake_ivl=0), ValueError, "handshake_ivl"),
    ],
)
def test_bad_arguments_fail_at_construction_naming_the_argument(
    build: Callable[[], Any], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        build()


def test_secrets_stay_out_of_repr() -> None:
    text = repr(curve_client()) + repr(curve_server()) + repr(plain_client(password="hunter2"))
    assert CLIENT_SECRET.decode() not in text and SERVER_SECRET.decode() not in text
    assert "hunter2" not in text


# -- keys ----------------------------------------------------------------------------------


def test_z85_round_trip_of_keys() -> None:
    for _ in range(20):
        public, secret = trizmq.curve_keypair()
        assert len(public) == len(secret) == 40
        raw_public, raw_secret = trizmq.z85_decode(public), trizmq.z85_decode(secret)
        assert len(raw_public) == len(raw_secret) == 32
        assert trizmq.z85_encode(raw_public) == public
        assert trizmq.z85_encode(raw_secret) == secret
        assert trizmq.z85_decode(public.decode()) == raw_public  # str works too
        assert trizmq.curve_public(secret) == public
        assert trizmq.curve_public(raw_secret) == public
        # raw and Z85 forms build the same settings
        assert trizmq.CurveServer(secret_key=raw_secret).public_key == public
        assert trizmq.CurveServer(secret_key=secret.decode()).public_key == public
    # RFC 32's test vector
    raw = bytes.fromhex("864FD26FB559F75B")
    assert trizmq.z85_encode(raw) == b"HelloWorld"
    assert trizmq.z85_decode(b"HelloWorld") == raw


async def test_raw_keys_work_on_the_wire() -> None:
    raw = trizmq.z85_decode
    server = trizmq.CurveServer(secret_key=raw(SERVER_SECRET))
    client = trizmq.CurveClient(
        server_key=raw(SERVER_PUBLIC), public_key=raw(CLIENT_PUBLIC), secret_key=raw(CLIENT_SECRET)
    )
    with trio.fail_after(10):
        async with trizmq.Authenticator(curve_keys=[CLIENT_PUBLIC]):
            assert await admitted(server, client)


# -- back-off after a refusal (virtual time) ----------------------------------------------


async def test_a_refused_client_backs_off(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    zmq_sockets: SocketFactory,
) -> None:
    with trio.fail_after(600):
        async with trizmq.Authenticator(passwords={"admin": "secret"}) as auth:
            await zmq_sockets(
                trizmq.Pull, bind="tcp://127.0.0.1:9100", security=trizmq.PlainServer()
            )
            push = await zmq_sockets(
                trizmq.Push, reconnect_ivl=0.01, security=plain_client(password="wrong")
            )
            events = push.monitor()
            await push.connect("tcp://127.0.0.1:9100")
            attempts: list[float] = []
            waits: list[float] = []
            async for event in events:
                if isinstance(event, trizmq.Connected):
                    attempts.append(trio.current_time())
                elif isinstance(event, trizmq.ConnectRetried):
                    waits.append(event.interval)
                    if len(waits) == 4:
                        break
            assert auth.refused == len(attempts) == 4
            # never sooner than 1 s after a refusal, whatever reconnect_ivl says
            assert all(wait >= 1.0 for wait in waits), waits
            gaps = [b - a for a, b in itertools.pairwise(attempts)]
            assert all(gap >= 1.0 for gap in gaps), gaps
            # and doubling (±10 % jitter)
            assert waits[-1] >= 4 * 0.9, waits


# -- inproc --------------------------------------------------------------------------------


async def test_security_is_not_applied_over_inproc() -> None:
    """inproc links skip the ZMTP mechanism: no handshake, no ZAP, whatever ``security`` says.

    Messages between sockets of one process never leave it, so there is nothing to
    encrypt; but it also means that mismatched or wrong settings do not refuse an
    inproc peer, and an Authenticator is not consulted for it.
    """
    with trio.fail_after(10):
        async with trizmq.Authenticator(curve_keys=[], allow=["10.0.0.1"]) as auth:
            async with trizmq.Pull(security=curve_server(), bind="inproc://secured") as pull:
                wrong_key = trizmq.CurveClient(
                    server_key=OTHER_PUBLIC, public_key=CLIENT_PUBLIC, secret_key=CLIENT_SECRET
                )
                async with trizmq.Push(security=wrong_key, connect="inproc://secured") as push:
                    await push.send(b"curve not applied")
                    assert await pull.recv() == b"curve not applied"
                async with trizmq.Push(connect="inproc://secured") as push:
                    await push.send(b"NULL client, CURVE server")
                    assert await pull.recv() == b"NULL client, CURVE server"
            async with trizmq.Pull(security=trizmq.PlainServer(), bind="inproc://plain") as pull:
                bad = plain_client(password="wrong")
                async with trizmq.Push(security=bad, connect="inproc://plain") as push:
                    await push.send(b"plain not applied")
                    assert await pull.recv() == b"plain not applied"
        assert (auth.admitted, auth.refused) == (0, 0)
