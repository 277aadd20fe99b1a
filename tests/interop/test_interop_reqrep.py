"""Request-reply against libzmq (through pyzmq): REQ, REP, DEALER and ROUTER on the wire.

Every test runs over tcp and ipc, with trizmq binding and with libzmq binding. The
libzmq sockets are driven from worker threads (``trio.to_thread.run_sync``); each
has a receive and send timeout and ``linger=0``, so a bug fails the test instead of
hanging a thread, and every socket and context is closed at the end.
"""

from __future__ import annotations

import errno
import itertools
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

import trizmq

zmq = pytest.importorskip("zmq")

#: milliseconds a libzmq send or receive may block before it fails the test
TIMEOUT_MS = 5000


class Libzmq:
    """A pyzmq context whose sockets all have timeouts and are closed at teardown."""

    def __init__(self) -> None:
        self.ctx = zmq.Context()
        self.sockets: list[Any] = []

    def socket(self, kind: int, **options: Any) -> Any:
        sock = self.ctx.socket(kind)
        sock.linger = 0
        sock.rcvtimeo = TIMEOUT_MS
        sock.sndtimeo = TIMEOUT_MS
        for name, value in options.items():
            sock.setsockopt(getattr(zmq, name.upper()), value)
        self.sockets.append(sock)
        return sock

    def close(self) -> None:
        for sock in self.sockets:
            sock.close(linger=0)
        self.ctx.term()


@pytest.fixture
def peers() -> Iterator[Libzmq]:
    context = Libzmq()
    try:
        yield context
    finally:
        context.close()


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a blocking pyzmq function in a worker thread."""
    return await trio.to_thread.run_sync(fn, *args)


class Wire:
    """Endpoints of one transport, and linking a trizmq socket with a libzmq one."""

    def __init__(self, transport: str, directory: str) -> None:
        self.transport = transport
        self.directory = directory
        self.names = itertools.count()

    def _address(self, libzmq_side: bool) -> str:
        if self.transport == "ipc":
            return f"ipc://{self.directory}/{next(self.names)}.sock"
        return "tcp://127.0.0.1:*" if libzmq_side else "tcp://127.0.0.1:0"

    async def bind_trizmq(self, sock: trizmq.Socket) -> str:
        return await sock.bind(self._address(False))

    async def bind_libzmq(self, sock: Any) -> str:
        await run(sock.bind, self._address(True))
        return str(sock.last_endpoint.decode())

    async def link(self, ours: trizmq.Socket, theirs: Any, trizmq_binds: bool) -> str:
        """Bind one side and connect the other; return the endpoint."""
        if trizmq_binds:
            endpoint = await self.bind_trizmq(ours)
            await run(theirs.connect, endpoint)
        else:
            endpoint = await self.bind_libzmq(theirs)
            await ours.connect(endpoint)
        return endpoint


@pytest.fixture(params=["tcp", "ipc"])
def wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    # a short directory: a Unix socket path must fit in 107 bytes
    with tempfile.TemporaryDirectory(prefix="tzrr-") as directory:
        yield Wire(str(request.param), directory)


@pytest.fixture(params=[True, False], ids=["trizmq-binds", "libzmq-binds"])
def trizmq_binds(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def is_generated(rid: bytes) -> bool:
    """A ROUTER-generated routing id: a zero byte and a 32-bit counter."""
    return len(rid) == 5 and rid[:1] == b"\x00"


# -- REQ / REP ---------------------------------------------------------------------------


async def test_trizmq_req_to_libzmq_rep(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        rep = peers.socket(zmq.REP)
        async with trizmq.Req() as req:
            await wire.link(req, rep, trizmq_binds)
            for i in range(3):
                await req.send_multipart([b"question", str(i).encode()])
                assert await run(rep.recv_multipart) == [b"question", str(i).encode()]
                await run(rep.send_multipart, [b"answer", str(i).encode()])
                assert await req.recv_multipart() == [b"answer", str(i).encode()]


async def test_libzmq_req_to_trizmq_rep(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        req = peers.socket(zmq.REQ)
        async with trizmq.Rep() as rep:
            await wire.link(rep, req, trizmq_binds)
            for i in range(3):
                await run(req.send_multipart, [b"question", str(i).encode()])
                assert await rep.recv_multipart() == [b"question", str(i).encode()]
                await rep.send_multipart([b"answer", str(i).encode()])
                assert await run(req.recv_multipart) == [b"answer", str(i).encode()]


async def test_trizmq_req_correlate_to_libzmq_rep(
    wire: Wire, peers: Libzmq, trizmq_binds: bool
) -> None:
    with trio.fail_after(20):
        rep = peers.socket(zmq.REP)
        async with trizmq.Req(req_correlate=True) as req:
            await wire.link(req, rep, trizmq_binds)
            for i in range(2):
                await req.send(str(i).encode())
                assert await run(rep.recv_multipart) == [str(i).encode()]
                await run(rep.send, b"ok " + str(i).encode())
                assert await req.recv() == b"ok " + str(i).encode()


async def test_trizmq_req_to_libzmq_router(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        router = peers.socket(zmq.ROUTER)
        async with trizmq.Req(routing_id=b"client", req_correlate=True) as req:
            await wire.link(req, router, trizmq_binds)
            await req.send_multipart([b"a", b"b"])
            rid, request_id, empty, *body = await run(router.recv_multipart)
            assert (rid, len(request_id), empty, body) == (b"client", 4, b"", [b"a", b"b"])
            wrong = struct.pack("!I", (struct.unpack("!I", request_id)[0] + 7) & 0xFFFFFFFF)
            await run(router.send_multipart, [rid, wrong, b"", b"stale"])
            await run(router.send_multipart, [rid, request_id, b"", b"reply"])
            assert await req.recv_multipart() == [b"reply"]


async def test_libzmq_req_to_trizmq_router(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        req = peers.socket(zmq.REQ, req_correlate=1, req_relaxed=1)
        async with trizmq.Router() as router:
            await wire.link(router, req, trizmq_binds)
            await run(req.send, b"first")
            rid, id1, empty, body = await router.recv_multipart()
            assert is_generated(rid)
            assert (len(id1), empty, body) == (4, b"", b"first")
            await run(req.send, b"second")  # relaxed: a resend while the first is pending
            rid2, id2, empty, body = await router.recv_multipart()
            assert (rid2, empty, body) == (rid, b"", b"second")
            assert id1 != id2
            await router.send_multipart([rid, id1, b"", b"stale"])
            await router.send_multipart([rid, id2, b"", b"fresh"])
            assert await run(req.recv_multipart) == [b"fresh"]


# -- DEALER / REP ------------------------------------------------------------------------


async def test_trizmq_dealer_to_libzmq_rep(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        rep = peers.socket(zmq.REP)
        async with trizmq.Dealer() as dealer:
            await wire.link(dealer, rep, trizmq_binds)
            await dealer.send_multipart([b"hop1", b"hop2", b"", b"request"])
            assert await run(rep.recv_multipart) == [b"request"]
            await run(rep.send, b"reply")
            assert await dealer.recv_multipart() == [b"hop1", b"hop2", b"", b"reply"]


async def test_libzmq_dealer_to_trizmq_rep(wire: Wire, peers: Libzmq, trizmq_binds: bool) -> None:
    with trio.fail_after(20):
        dealer = peers.socket(zmq.DEALER)
        async with trizmq.Rep() as rep:
            await wire.link(rep, dealer, trizmq_binds)
            await run(dealer.send_multipart, [b"hop1", b"hop2", b"", b"request"])
            assert await rep.recv_multipart() == [b"request"]
            await rep.send(b"reply")
            assert await run(dealer.recv_multipart) == [b"hop1", b"hop2", b"", b"reply"]


# -- DEALER / ROUTER ---------------------------------------------------------------------


@pytest.mark.parametrize("explicit", [True, False], ids=["explicit-id", "generated-id"])
async def test_trizmq_dealer_to_libzmq_router(
    wire: Wire, peers: Libzmq, trizmq_binds: bool, explicit: bool
) -> None:
    with trio.fail_after(20):
        router = peers.socket(zmq.ROUTER)
        options = {"routing_id": b"trizmq-dealer"} if explicit else {}
        async with trizmq.Dealer(**options) as dealer:
            await wire.link(dealer, router, trizmq_binds)
            await dealer.send_multipart([b"hello", b"there"])
            rid, *body = await run(router.recv_multipart)
            assert body == [b"hello", b"there"]
            assert rid == b"trizmq-dealer" if explicit else is_generated(rid)
            await run(router.send_multipart, [rid, b"back"])
            assert await dealer.recv_multipart() == [b"back"]


@pytest.mark.parametrize("explicit", [True, False], ids=["explicit-id", "generated-id"])
async def test_libzmq_dealer_to_trizmq_router(
    wire: Wire, peers: Libzmq, trizmq_binds: bool, explicit: bool
) -> None:
    with trio.fail_after(20):
        options = {"routing_id": b"libzmq-dealer"} if explicit else {}
        dealer = peers.socket(zmq.DEALER, **options)
        async with trizmq.Router() as router:
            await wire.link(router, dealer, trizmq_binds)
            await run(dealer.send_multipart, [b"hello", b"there"])
            rid, *body = await router.recv_multipart()
            assert body == [b"hello", b"there"]
            assert rid == b"libzmq-dealer" if explicit else is_generated(rid)
            await router.send_multipart([rid, b"back"])
            assert await run(dealer.recv_multipart) == [b"back"]


async def test_trizmq_router_replies_to_the_right_libzmq_peer(wire: Wire, peers: Libzmq) -> None:
    with trio.fail_after(20):
        async with trizmq.Router(router_mandatory=True) as router:
            endpoint = await wire.bind_trizmq(router)
            clients = {
                b"d1": peers.socket(zmq.DEALER, routing_id=b"d1"),
                b"d2": peers.socket(zmq.DEALER, routing_id=b"d2"),
                b"r1": peers.socket(zmq.REQ, routing_id=b"r1"),
                b"anon": peers.socket(zmq.DEALER),
            }
            for name, sock in clients.items():
                await run(sock.connect, endpoint)
                await run(sock.send, b"from " + name)
            rids = {}
            for _ in clients:
                rid, *body = await router.recv_multipart()
                rids[body[-1][len(b"from ") :]] = (rid, body[:-1])
            assert {k: v[0] for k, v in rids.items() if k != b"anon"} == {
                b"d1": b"d1",
                b"d2": b"d2",
                b"r1": b"r1",
            }
            assert is_generated(rids[b"anon"][0])
            for name in reversed(list(clients)):
                rid, envelope = rids[name]
                await router.send_multipart([rid, *envelope, b"to " + name])
            for name, sock in clients.items():
                assert await run(sock.recv) == b"to " + name
                assert not sock.rcvmore


async def test_libzmq_router_replies_to_the_right_trizmq_peer(wire: Wire, peers: Libzmq) -> None:
    with trio.fail_after(20):
        router = peers.socket(zmq.ROUTER, router_mandatory=1)
        endpoint = await wire.bind_libzmq(router)
        async with (
            trizmq.Dealer(routing_id=b"d1", connect=endpoint) as d1,
            trizmq.Req(routing_id=b"r1", connect=endpoint) as r1,
            trizmq.Dealer(connect=endpoint) as anon,
        ):
            await d1.send(b"from d1")
            await r1.send(b"from r1")
            await anon.send(b"from anon")
            got = {}
            for _ in range(3):
                rid, *rest = await run(router.recv_multipart)
                got[rest[-1]] = (rid, rest[:-1])
            assert got[b"from d1"] == (b"d1", [])
            assert got[b"from r1"] == (b"r1", [b""])
            assert is_generated(got[b"from anon"][0])
            for key in (b"from anon", b"from r1", b"from d1"):
                rid, envelope = got[key]
                await run(router.send_multipart, [rid, *envelope, b"re: " + key])
            assert await d1.recv_multipart() == [b"re: from d1"]
            assert await r1.recv_multipart() == [b"re: from r1"]
            assert await anon.recv_multipart() == [b"re: from anon"]


# -- ROUTER / ROUTER ---------------------------------------------------------------------


def _libzmq_send_when_routable(sock: Any, frames: list[bytes], timeout: float) -> None:
    """Send through a mandatory ROUTER, polling until the peer's handshake is done."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.send_multipart(frames)
            return
        except zmq.ZMQError as exc:
            if exc.errno != errno.EHOSTUNREACH or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


async def _trizmq_send_when_routable(sock: trizmq.Router, frames: list[bytes]) -> None:
    while True:
        try:
            await sock.send_multipart(frames)
            return
        except trizmq.HostUnreachable:
            await trio.sleep(0.005)


async def test_router_to_router_trizmq_connects(wire: Wire, peers: Libzmq) -> None:
    with trio.fail_after(20):
        theirs = peers.socket(zmq.ROUTER, routing_id=b"libzmq", router_mandatory=1)
        endpoint = await wire.bind_libzmq(theirs)
        async with trizmq.Router(
            routing_id=b"trizmq", router_mandatory=True, connect=endpoint
        ) as ours:
            await _trizmq_send_when_routable(ours, [b"libzmq", b"hello"])
            assert await run(theirs.recv_multipart) == [b"trizmq", b"hello"]
            await run(theirs.send_multipart, [b"trizmq", b"welcome"])
            assert await ours.recv_multipart() == [b"libzmq", b"welcome"]


async def test_router_to_router_libzmq_connects(wire: Wire, peers: Libzmq) -> None:
    with trio.fail_after(20):
        theirs = peers.socket(zmq.ROUTER, routing_id=b"libzmq", router_mandatory=1)
        async with trizmq.Router(routing_id=b"trizmq", router_mandatory=True) as ours:
            endpoint = await wire.bind_trizmq(ours)
            await run(theirs.connect, endpoint)
            await run(_libzmq_send_when_routable, theirs, [b"trizmq", b"hello"], 5.0)
            assert await ours.recv_multipart() == [b"libzmq", b"hello"]
            await ours.send_multipart([b"libzmq", b"welcome"])
            assert await run(theirs.recv_multipart) == [b"trizmq", b"welcome"]


async def test_libzmq_probe_router_reaches_trizmq_router(wire: Wire, peers: Libzmq) -> None:
    # only a connecting libzmq DEALER probes: libzmq 4.3 sends nothing from a bound
    # DEALER to a ROUTER that connects to it (checked against libzmq itself)
    with trio.fail_after(20):
        dealer = peers.socket(zmq.DEALER, routing_id=b"prober", probe_router=1)
        async with trizmq.Router() as router:
            await wire.link(router, dealer, trizmq_binds=True)
            assert await router.recv_multipart() == [b"prober", b""]


async def test_trizmq_probe_router_reaches_libzmq_router(
    wire: Wire, peers: Libzmq, trizmq_binds: bool
) -> None:
    with trio.fail_after(20):
        router = peers.socket(zmq.ROUTER)
        async with trizmq.Dealer(routing_id=b"prober", probe_router=True) as dealer:
            await wire.link(dealer, router, trizmq_binds)
            assert await run(router.recv_multipart) == [b"prober", b""]
