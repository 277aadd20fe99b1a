"""trizmq against omq.rs (pyomq 0.27, ``tests/omq/peer.py`` in its own interpreter).

omq.rs is the second implementation of ZMTP 3.1 in the suite besides libzmq: every
stable socket type pair and the draft types it has, with trizmq binding and
connecting, over tcp and ipc; CURVE and PLAIN both ways, a wrong key or password
refused; heartbeats both ways, and a frozen peer dropped by trizmq's heartbeat
timeout; and udp, where omq.rs and libzmq disagree on the datagram (trizmq follows
libzmq: see docs/transports.md, "omq.rs").

Each test runs peer.py as a subprocess (bounded by its ``--timeout`` and a
``trio.fail_after``) and reads its JSON lines. No test sleeps to wait for something
it can await: a peer prints ``ready`` once bound (its tcp port resolved) before the
other side connects, a lossy sender (PUB, RADIO) sends until the receiver has
reported what the test needs, and a sender that must not lose its last messages to
its own exit stays (``--stay``) until the test has read them.

ROUTER to ROUTER needs each side to know the other's identity before it sends and
is left out, as in the libzmq tests.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio

import trizmq

from .libzmq import Endpoints
from .node_peer import free_udp_port
from .omq_peer import OmqPeer, omq_peer, requires_omq

pytestmark = requires_omq

#: seconds a test may take: generous, for a loaded 2-core machine
BOUND = 40

bind_side = pytest.mark.parametrize("trizmq_binds", [True, False], ids=["tz-binds", "omq-binds"])


def messages_hex(messages: list[list[bytes]]) -> str:
    """peer.py's ``--messages-hex`` for ``messages``."""
    return ";".join(",".join(frame.hex() for frame in message) for message in messages)


def frames_of(line: dict[str, Any]) -> list[bytes]:
    """The frames of a received-message line of peer.py."""
    if "frames" in line:
        return [bytes.fromhex(part) for part in line["frames"]]
    return [bytes.fromhex(line["body"])]


async def keep_sending(send: Callable[[int], Awaitable[None]], until: trio.Event) -> None:
    """Call ``send(i)`` every 10 ms until ``until`` is set (a lossy sender: PUB, RADIO)."""
    for i in range(100_000):
        if until.is_set():
            return
        await send(i)
        with trio.move_on_after(0.01):
            await until.wait()


async def next_event(events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]) -> Any:
    async for event in events:
        if isinstance(event, kind):
            return event
    raise AssertionError(f"the monitor ended before a {kind.__name__}")


def peer_args(
    sock_endpoint: str | None, endpoints: Endpoints, omq_type: str, *args: str
) -> tuple[str, ...]:
    """peer.py's arguments for an omq socket of ``omq_type``: connecting to trizmq's
    ``sock_endpoint``, or (None) binding an endpoint of the test's transport."""
    if sock_endpoint is not None:
        return ("--type", omq_type, "--connect", sock_endpoint, *args)
    return ("--type", omq_type, "--bind", endpoints.for_trizmq(), *args)


@asynccontextmanager
async def linked(
    sock: trizmq.Socket, trizmq_binds: bool, endpoints: Endpoints, omq_type: str, *args: str
) -> AsyncIterator[OmqPeer]:
    """An :func:`omq_peer` on the other end of ``sock``: trizmq binds and the peer
    connects, or the peer binds and ``sock`` connects once it is ready."""
    endpoint = await sock.bind(endpoints.for_trizmq()) if trizmq_binds else None
    async with omq_peer(*peer_args(endpoint, endpoints, omq_type, *args)) as peer:
        (ready,) = await peer.ready()
        if not trizmq_binds:
            await sock.connect(ready)
        yield peer


# -- one way: PUSH/PULL, SCATTER/GATHER, PUB/SUB, RADIO/DISH --------------------------------


@dataclass(frozen=True)
class OneWay:
    name: str
    sender: type[trizmq.Socket]
    receiver: type[trizmq.Socket]
    omq_sender: str
    omq_receiver: str
    lossy: bool  # PUB and RADIO drop until the receiver is there
    multipart: bool

    def __str__(self) -> str:
        return self.name


ONE_WAY = [
    OneWay("push-pull", trizmq.Push, trizmq.Pull, "push", "pull", False, True),
    OneWay("scatter-gather", trizmq.Scatter, trizmq.Gather, "scatter", "gather", False, False),
    OneWay("pub-sub", trizmq.Pub, trizmq.Sub, "pub", "sub", True, True),
    OneWay("radio-dish", trizmq.Radio, trizmq.Dish, "radio", "dish", True, False),
]

#: an empty frame, every byte value, a frame with an 8-byte length on the wire (its
#: hex still fits one command-line argument), and, where the type has them, multipart
ONE_FRAME = [[b""], [bytes(range(256))], [b"L" * 60_000], [b"short"]]
MULTIPART = [[b"a", b"", b"c"], [b"%d" % i for i in range(50)]]


@pytest.mark.parametrize("case", ONE_WAY, ids=str)
@bind_side
async def test_trizmq_sends_to_omq(case: OneWay, trizmq_binds: bool, endpoints: Endpoints) -> None:
    with trio.fail_after(BOUND):
        async with case.sender(linger=5) as sock:
            if case.lossy:
                # one message, sent until it arrives (the slow joiner): what the
                # receiver did not subscribe to or join never arrives
                extra = ("--subscribe", "t") if case.omq_receiver == "sub" else ("--join", "grp")
                seen = trio.Event()

                async def send(i: int) -> None:
                    if isinstance(sock, trizmq.Radio):
                        await sock.send(b"other %d" % i, group=b"grq")
                        await sock.send(b"t-join %d" % i, group=b"grp")
                    else:
                        await sock.send_multipart([b"x-filtered %d" % i])
                        await sock.send_multipart([b"t-join %d" % i, b"\x00\xff"])

                args = ("--recv", "1", *extra)
                async with linked(sock, trizmq_binds, endpoints, case.omq_receiver, *args) as peer:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(keep_sending, send, seen)
                        line = await peer.message_line()
                        seen.set()
                    got = frames_of(line)
                    assert got[0].startswith(b"t-join"), got
                    if case.multipart:
                        assert got[1:] == [b"\x00\xff"]
                    else:
                        assert line["group"] == "grp"
                    await peer.done()
                return
            messages = ONE_FRAME + (MULTIPART if case.multipart else [])
            args = ("--recv", str(len(messages)))
            async with linked(sock, trizmq_binds, endpoints, case.omq_receiver, *args) as peer:
                for message in messages:
                    await sock.send_multipart(message)
                got = [frames_of(await peer.message_line()) for _ in messages]
                assert got == messages
                await peer.done()


@pytest.mark.parametrize("case", ONE_WAY, ids=str)
@bind_side
async def test_omq_sends_to_trizmq(case: OneWay, trizmq_binds: bool, endpoints: Endpoints) -> None:
    options: dict[str, Any] = {"subscribe": b"t"} if case.receiver is trizmq.Sub else {}
    with trio.fail_after(BOUND):
        async with case.receiver(linger=0, **options) as sock:
            if isinstance(sock, trizmq.Dish):
                sock.join(b"grp")
            if case.lossy:
                body = b"t-\x00\xff"
                args = ["--forever", "--interval", "10", "--body-hex", body.hex()]
                if case.omq_sender == "radio":
                    args += ["--group", "grp"]
                async with linked(sock, trizmq_binds, endpoints, case.omq_sender, *args):
                    for _ in range(3):
                        message = await sock.recv_message()
                        assert message.frames == [body], message.frames
                        if isinstance(sock, trizmq.Dish):
                            assert message.group == b"grp"
                return
            messages = ONE_FRAME + (MULTIPART if case.multipart else [])
            args = ["--send", str(len(messages)), "--interval", "0", "--stay"]
            args += ["--messages-hex", messages_hex(messages)]
            async with linked(sock, trizmq_binds, endpoints, case.omq_sender, *args) as peer:
                got = [await sock.recv_multipart() for _ in messages]
                assert got == messages
                await peer.done()


# -- XPUB/XSUB: subscriptions both ways -------------------------------------------------------


@pytest.mark.parametrize("omq_type", ["sub", "xsub"])
@bind_side
async def test_trizmq_xpub_sees_omq_subscriptions(
    omq_type: str, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    with trio.fail_after(BOUND):
        async with trizmq.XPub(linger=5) as xpub:
            args = ("--subscribe", "t", "--recv", "2")
            async with linked(xpub, trizmq_binds, endpoints, omq_type, *args) as peer:
                # the subscription arrives before any publication can be lost
                assert await xpub.recv() == b"\x01t"
                await xpub.send_multipart([b"x-filtered"])
                await xpub.send_multipart([b"t1"])
                await xpub.send_multipart([b"t2", b"more"])
                assert frames_of(await peer.message_line()) == [b"t1"]
                assert frames_of(await peer.message_line()) == [b"t2", b"more"]
                await peer.done()


@pytest.mark.parametrize("tz_type", [trizmq.Sub, trizmq.XSub], ids=["sub", "xsub"])
@bind_side
async def test_omq_xpub_sees_trizmq_subscriptions(
    tz_type: type[trizmq.Socket], trizmq_binds: bool, endpoints: Endpoints
) -> None:
    with trio.fail_after(BOUND):
        async with tz_type(linger=0) as sub:
            assert isinstance(sub, trizmq.XSub)
            sub.subscribe(b"t")
            args = (
                "--recv",
                "1",
                "--recv-first",
                "--send",
                "2",
                "--stay",
                "--messages-hex",
                messages_hex([[b"x-filtered"], [b"t-pub", b"2"]]),
            )
            async with linked(sub, trizmq_binds, endpoints, "xpub", *args) as peer:
                assert frames_of(await peer.message_line()) == [b"\x01t"]
                assert await sub.recv_multipart() == [b"t-pub", b"2"]
                await peer.done()


# -- request and reply: PAIR, REQ/REP, DEALER/ROUTER, CLIENT/SERVER, CHANNEL ------------------


@dataclass(frozen=True)
class Echo:
    """A requester and an echoer: the requester gets back exactly what it sent."""

    name: str
    requester: type[trizmq.Socket]
    echoer: type[trizmq.Socket]
    omq_requester: str
    omq_echoer: str
    messages: tuple[tuple[bytes, ...], ...]

    def __str__(self) -> str:
        return self.name


BODIES = ((b"hello",), (b"",), (bytes(range(256)) * 4,))
FRAMES = ((b"a", b"", b"c"), (b"x" * 300, b""))
ENVELOPED = tuple((b"", *m) for m in BODIES + FRAMES)
ECHO = [
    Echo("pair", trizmq.Pair, trizmq.Pair, "pair", "pair", BODIES + FRAMES),
    Echo("req-rep", trizmq.Req, trizmq.Rep, "req", "rep", BODIES + FRAMES),
    Echo("req-router", trizmq.Req, trizmq.Router, "req", "router", BODIES + FRAMES),
    Echo("dealer-rep", trizmq.Dealer, trizmq.Rep, "dealer", "rep", ENVELOPED),
    Echo("dealer-router", trizmq.Dealer, trizmq.Router, "dealer", "router", BODIES + FRAMES),
    Echo("dealer-dealer", trizmq.Dealer, trizmq.Dealer, "dealer", "dealer", BODIES + FRAMES),
    Echo("client-server", trizmq.Client, trizmq.Server, "client", "server", BODIES),
    Echo("channel", trizmq.Channel, trizmq.Channel, "channel", "channel", BODIES),
]


@pytest.mark.parametrize("case", ECHO, ids=str)
@bind_side
async def test_trizmq_requests_omq_echoes(
    case: Echo, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    with trio.fail_after(BOUND):
        async with case.requester(linger=0) as sock:
            args = ("--echo", str(len(case.messages)))
            async with linked(sock, trizmq_binds, endpoints, case.omq_echoer, *args) as peer:
                for message in case.messages:
                    await sock.send_multipart(list(message))
                    assert await sock.recv_multipart() == list(message)
                    line = await peer.message_line()  # what omq.rs received and echoed
                    if case.omq_echoer == "router":
                        envelope = [b""] if case.requester is trizmq.Req else []
                        assert frames_of(line)[1:] == envelope + list(message)
                    elif case.omq_echoer == "rep" and case.requester is trizmq.Dealer:
                        assert frames_of(line) == list(message[1:])
                    else:
                        assert frames_of(line) == list(message)
                await peer.done()


@pytest.mark.parametrize("case", ECHO, ids=str)
@bind_side
async def test_omq_requests_trizmq_echoes(
    case: Echo, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    messages = [list(m) for m in case.messages]
    with trio.fail_after(BOUND):
        async with case.echoer(linger=5) as sock:
            args = ("--request", str(len(messages)), "--messages-hex", messages_hex(messages))
            async with linked(sock, trizmq_binds, endpoints, case.omq_requester, *args) as peer:
                for expected in messages:
                    if isinstance(sock, trizmq.Server):
                        message = await sock.recv_message()
                        assert message.frames == expected
                        await sock.send(message.data, routing_id=message.routing_id)
                    else:
                        got = await sock.recv_multipart()
                        if isinstance(sock, trizmq.Router):
                            envelope = [b""] if case.omq_requester == "req" else []
                            assert got[1:] == envelope + expected
                        elif isinstance(sock, trizmq.Rep) and case.omq_requester == "dealer":
                            assert got == expected[1:]  # the envelope stays with REP
                        else:
                            assert got == expected
                        await sock.send_multipart(got)
                    assert frames_of(await peer.message_line()) == expected
                await peer.done()


async def test_trizmq_peer_speaks_first_to_an_omq_peer(endpoints: Endpoints) -> None:
    """trizmq's PEER connects (``connect_peer``) and speaks first; omq.rs's PEER, which
    shows its peers ROUTER-like (the sender's identity first), echoes."""
    with trio.fail_after(BOUND):
        async with trizmq.Peer(linger=0) as sock:
            args = ("--type", "peer", "--bind", endpoints.for_trizmq(), "--echo", "2")
            async with omq_peer(*args) as peer:
                (endpoint,) = await peer.ready()
                rid = await sock.connect_peer(endpoint)
                for body in (b"one", bytes(range(256))):
                    await sock.send(body, routing_id=rid)
                    message = await sock.recv_message()
                    assert (message.data, message.routing_id) == (body, rid)
                    _identity, got = frames_of(await peer.message_line())
                    assert got == body
                await peer.done()


@bind_side
async def test_omq_peer_speaks_first_to_a_trizmq_peer(
    trizmq_binds: bool, endpoints: Endpoints
) -> None:
    """omq.rs's PEER sends to its one connection; trizmq's PEER answers the routing id
    the message came with."""
    with trio.fail_after(BOUND):
        async with trizmq.Peer(linger=5) as sock:
            args = ("--send", "1", "--body", "hello", "--recv", "1")
            async with linked(sock, trizmq_binds, endpoints, "peer", *args) as peer:
                message = await sock.recv_message()
                assert message.data == b"hello"
                await sock.send(b"reply", routing_id=message.routing_id)
                _, body = frames_of(await peer.message_line())
                assert body == b"reply"
                await peer.done()


# -- security: CURVE and PLAIN, both ways -------------------------------------------------------

SERVER_PUBLIC, SERVER_SECRET = trizmq.curve_keypair()
CLIENT_PUBLIC, CLIENT_SECRET = trizmq.curve_keypair()
OTHER_PUBLIC, _ = trizmq.curve_keypair()


def omq_curve_client(server_key: bytes) -> tuple[str, ...]:
    # "--flag=KEY": a Z85 key may begin with "-", which argparse would take for a flag
    return (
        f"--curve-secret={CLIENT_SECRET.decode()}",
        f"--curve-public={CLIENT_PUBLIC.decode()}",
        f"--curve-server-key={server_key.decode()}",
    )


def omq_curve_server(*allow: bytes) -> tuple[str, ...]:
    args = (f"--curve-secret={SERVER_SECRET.decode()}", f"--curve-public={SERVER_PUBLIC.decode()}")
    for key in allow:
        args += (f"--curve-allow={key.decode()}",)
    return args


def tz_curve_client(server_key: bytes = SERVER_PUBLIC) -> trizmq.CurveClient:
    return trizmq.CurveClient(
        server_key=server_key, public_key=CLIENT_PUBLIC, secret_key=CLIENT_SECRET
    )


SECURED = ["curve", "plain"]


@pytest.mark.parametrize("mechanism", SECURED)
@bind_side
async def test_trizmq_server_omq_client(
    mechanism: str, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    """trizmq is the CURVE or PLAIN server (a REP), omq.rs the client (a REQ)."""
    if mechanism == "curve":
        security: Any = trizmq.CurveServer(secret_key=SERVER_SECRET)
        client = omq_curve_client(SERVER_PUBLIC)
        admit: dict[str, Any] = {"curve_keys": [CLIENT_PUBLIC]}
    else:
        security = trizmq.PlainServer()
        client = ("--plain-user", "alice", "--plain-password", "secret")
        admit = {"passwords": {b"alice": b"secret"}}
    with trio.fail_after(BOUND):
        async with (
            trizmq.Authenticator(**admit),
            trizmq.Rep(linger=5, security=security) as rep,
        ):
            args = ("--request", "2", *client)
            async with linked(rep, trizmq_binds, endpoints, "req", *args) as peer:
                for i in range(2):
                    body = await rep.recv()
                    assert body == b"msg %d" % i
                    await rep.send(b"msg %d" % i)
                    assert frames_of(await peer.message_line()) == [body]
                await peer.done()


@pytest.mark.parametrize("mechanism", SECURED)
@bind_side
async def test_omq_server_trizmq_client(
    mechanism: str, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    """omq.rs is the CURVE or PLAIN server (a REP that checks the client), trizmq the
    client (a REQ)."""
    if mechanism == "curve":
        security: Any = tz_curve_client()
        server = omq_curve_server(CLIENT_PUBLIC)
    else:
        security = trizmq.PlainClient(username=b"alice", password=b"secret")
        server = ("--plain-server", "alice:secret")
    with trio.fail_after(BOUND):
        async with trizmq.Req(linger=0, security=security) as req:
            args = ("--echo", "2", *server)
            async with linked(req, trizmq_binds, endpoints, "rep", *args) as peer:
                for body in (b"first", bytes(range(256))):
                    await req.send(body)
                    assert await req.recv() == body
                    assert frames_of(await peer.message_line()) == [body]
                await peer.done()


#: how trizmq's client is refused by an omq.rs server, and omq.rs's by trizmq's
REFUSALS = ["curve-wrong-server-key", "curve-client-key-not-admitted", "plain-wrong-password"]


@pytest.mark.parametrize("refusal", REFUSALS)
async def test_omq_server_refuses_a_trizmq_client(refusal: str, endpoints: Endpoints) -> None:
    if refusal == "curve-wrong-server-key":
        security: Any = tz_curve_client(server_key=OTHER_PUBLIC)
        server = omq_curve_server()
    elif refusal == "curve-client-key-not-admitted":
        security = tz_curve_client()
        server = omq_curve_server(OTHER_PUBLIC)
    else:
        security = trizmq.PlainClient(username=b"alice", password=b"wrong")
        server = ("--plain-server", "alice:secret")
    with trio.fail_after(BOUND):
        async with (
            trizmq.Push(linger=0, security=security, reconnect_ivl=0.05) as push,
            push.monitor() as events,
        ):
            args = ("--bind", endpoints.for_trizmq(), "--recv", "1", "--monitor", *server)
            async with omq_peer("--type", "pull", *args) as peer:
                (endpoint,) = await peer.ready()
                await push.connect(endpoint)
                failed = await next_event(events, trizmq.HandshakeFailed)
                print("trizmq's client was refused:", failed)
                stats = push.stats()
                assert stats.connections["handshake_failures"] >= 1
                assert stats.connections["connected"] >= 1
                # and omq.rs says why it refused
                refused = await peer.event("handshake_failed")
                print("omq.rs refused trizmq's client:", refused)


@pytest.mark.parametrize("refusal", REFUSALS)
async def test_trizmq_server_refuses_an_omq_client(refusal: str, endpoints: Endpoints) -> None:
    if refusal == "curve-wrong-server-key":
        security: Any = trizmq.CurveServer(secret_key=SERVER_SECRET)
        client = omq_curve_client(OTHER_PUBLIC)
        admit: dict[str, Any] = {}
    elif refusal == "curve-client-key-not-admitted":
        security = trizmq.CurveServer(secret_key=SERVER_SECRET)
        client = omq_curve_client(SERVER_PUBLIC)
        admit = {"curve_keys": [OTHER_PUBLIC]}
    else:
        security = trizmq.PlainServer()
        client = ("--plain-user", "alice", "--plain-password", "wrong")
        admit = {"passwords": {b"alice": b"secret"}}
    with trio.fail_after(BOUND):
        async with (
            trizmq.Authenticator(**admit),
            trizmq.Pull(linger=0, security=security) as pull,
            pull.monitor() as events,
        ):
            endpoint = await pull.bind(endpoints.for_trizmq())
            args = ("--type", "push", "--connect", endpoint, "--send", "1", "--monitor", *client)
            async with omq_peer(*args, "--stay") as peer:
                await peer.ready()
                await next_event(events, trizmq.HandshakeFailed)
                stats = pull.stats()
                assert stats.connections["handshake_failures"] >= 1
                assert stats.connections["accepted"] >= 1
                assert stats.messages_received == 0
                with pytest.raises(trio.WouldBlock):
                    pull.recv_nowait()


# -- heartbeats ----------------------------------------------------------------------------------

IVL = 0.05
TIMEOUT = 0.2
#: how long an idle connection must survive: several heartbeat timeouts
IDLE = 3 * TIMEOUT


@pytest.mark.parametrize("pinging", ["trizmq", "omq"])
@bind_side
async def test_heartbeats_keep_an_idle_connection(
    pinging: str, trizmq_binds: bool, endpoints: Endpoints
) -> None:
    options: dict[str, Any] = {}
    heartbeat: tuple[str, ...] = ()
    if pinging == "trizmq":
        options = {"heartbeat_ivl": IVL, "heartbeat_timeout": TIMEOUT}
    else:
        ms = f"{int(IVL * 1000)},{int(TIMEOUT * 1000)},{int(TIMEOUT * 1000)}"
        heartbeat = ("--heartbeat", ms)
    with trio.fail_after(BOUND):
        async with (
            trizmq.Pair(linger=0, reconnect_ivl=0.05, **options) as pair,
            pair.monitor() as events,
        ):
            args = ("--echo", "1", "--monitor", *heartbeat)
            async with linked(pair, trizmq_binds, endpoints, "pair", *args) as peer:
                await next_event(events, trizmq.HandshakeSucceeded)
                # idle: only heartbeats cross the connection now. Waiting is the point
                # here (nothing may happen), so this is a sleep, not an awaited event.
                await trio.sleep(IDLE)
                await pair.send(b"after the idle time")
                assert await pair.recv() == b"after the idle time"
                assert frames_of(await peer.message_line()) == [b"after the idle time"]
                stats = pair.stats()
                assert stats.connections["disconnects"] == 0, stats.connections
                assert stats.connections["heartbeat_timeouts"] == 0, stats.connections
                if pinging == "trizmq":
                    # omq.rs answered a PING with a PONG: trizmq measured a round trip
                    assert stats.peers[0].rtt is not None
                # one connection on omq.rs's side too, never dropped
                assert peer.events().count("handshake_succeeded") == 1, peer.lines
                assert "disconnected" not in peer.events(), peer.lines
                await peer.done()


SLACK = 2.0  # scheduling slack on a loaded machine, on top of the heartbeat's own time


@bind_side
async def test_a_frozen_omq_peer_is_dropped_by_the_heartbeat_then_comes_back(
    trizmq_binds: bool, endpoints: Endpoints
) -> None:
    ivl, timeout = 0.2, 0.4
    options = {"heartbeat_ivl": ivl, "heartbeat_timeout": timeout, "reconnect_ivl": 0.05}
    with trio.fail_after(BOUND):
        async with (
            trizmq.Dealer(linger=0, **options) as dealer,
            dealer.monitor() as events,
        ):
            args = ("--echo", "2", "--monitor")
            async with linked(dealer, trizmq_binds, endpoints, "dealer", *args) as peer:
                await next_event(events, trizmq.HandshakeSucceeded)
                await dealer.send(b"before")
                assert await dealer.recv() == b"before"

                peer.process.send_signal(signal.SIGSTOP)
                stopped = trio.current_time()
                await next_event(events, trizmq.Disconnected)
                took = trio.current_time() - stopped
                print(f"dropped {took:.3f}s after SIGSTOP (ivl {ivl}, timeout {timeout})")
                assert took <= ivl + timeout + SLACK, f"dropped {took:.3f}s after SIGSTOP"
                assert dealer.stats().connections["heartbeat_timeouts"] >= 1

                peer.process.send_signal(signal.SIGCONT)
                await next_event(events, trizmq.HandshakeSucceeded)
                await dealer.send(b"after")
                assert await dealer.recv() == b"after"


# -- udp: where omq.rs and libzmq disagree --------------------------------------------------------
#
# libzmq's udp datagram is ``len(group) group body``; omq.rs's is ``0x01 len(group) group
# body`` (a flags byte first, omq-tokio's transport/udp.rs). trizmq speaks libzmq's
# (tests/zmtp/test_datagram_interop_node.py), so each reads the other's datagram one byte
# off. These tests pin exactly how, so that a change on either side shows.


async def test_omq_radio_datagrams_read_by_trizmq_as_libzmq_reads_them() -> None:
    """omq.rs's ``01 03 'grp' body`` is, to a libzmq reader, group ``"\\x03"`` and body
    ``'grp' body``: a trizmq DISH joined to ``grp`` gets nothing, one joined to
    ``\\x03`` gets the shifted message."""
    with trio.fail_after(BOUND):
        async with trizmq.Dish(linger=0) as dish:
            dish.join(b"grp")
            dish.join(b"\x03")
            endpoint = await dish.bind(f"udp://127.0.0.1:{free_udp_port()}")
            args = ("--type", "radio", "--connect", endpoint, "--forever", "--interval", "10")
            async with omq_peer(*args, "--group", "grp", "--body", "hello"):
                for _ in range(3):
                    message = await dish.recv_message()
                    assert (message.group, message.data) == (b"\x03", b"grphello")
            assert dish.stats().messages_received == 3


async def test_trizmq_radio_datagrams_read_by_omq_one_byte_off() -> None:
    """trizmq's ``01 02 'hi there'`` (group ``"\\x02"``) is, to omq.rs, a data datagram
    (flags 0x01) of group ``hi`` and body ``" there"``."""
    with trio.fail_after(BOUND):
        async with trizmq.Radio(linger=0) as radio:
            endpoint = f"udp://127.0.0.1:{free_udp_port()}"
            args = ("--type", "dish", "--bind", endpoint, "--join", "hi", "--recv", "1")
            async with omq_peer(*args) as dish:
                (bound,) = await dish.ready()
                await radio.connect(bound)
                seen = trio.Event()

                async def send(i: int) -> None:
                    await radio.send(b"hi there", group=b"\x02")

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(keep_sending, send, seen)
                    line = await dish.message_line()
                    seen.set()
                assert (line["group"], bytes.fromhex(line["body"])) == ("hi", b" there")
                await dish.done()
