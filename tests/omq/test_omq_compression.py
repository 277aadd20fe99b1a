"""lz4+tcp:// and zstd+tcp:// against omq.rs: pyomq in its own process, both roles.

Every socket type that runs over tcp exchanges messages with its omq.rs
counterpart over both compressed transports, trizmq binding and omq.rs binding;
with dictionaries (given on either side, zstd's trained one too) and PLAIN
underneath. pyomq runs ``tests/omq/compressed_peer.py`` under the omq interpreter
(``tests/omq_python.py``); every test skips, saying why, where there is none.
pyomq refuses compression under an encrypting mechanism ("OMQ compression is not
supported with encrypted mechanisms"), so CURVE is tested trizmq to trizmq only
(``tests/transport/test_transport_compressed_tcp.py``).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from omq_python import omq_python
from zmtp.omq_vectors import LZ4_DICT, TEXT, ZSTD_DICT

import trizmq

OMQ = omq_python()
pytestmark = pytest.mark.skipif(
    OMQ is None,
    reason="no omq.rs peer: build .venv-omq (a Python >= 3.12 venv with pip install pyomq) "
    "or set TRIZMQ_OMQ_PYTHON",
)
PEER = Path(__file__).with_name("compressed_peer.py")
SCHEMES = ["lz4+tcp", "zstd+tcp"]
NOISE = random.Random(3).randbytes(2000)
#: a generous bound on any one wait for the other process (a loaded CI machine)
PATIENCE = 30.0


class OmqPeer:
    """The running peer: one JSON command out, one JSON answer back."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._buffer = b""
        self.stderr = b""
        self.version = ""

    async def _line(self) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            chunk = await stdout.receive_some(65536)
            if not chunk:
                raise AssertionError(f"the omq peer ended: {self.stderr.decode(errors='replace')}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(raw)
        return answer

    async def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        await stdin.send_all(json.dumps({"op": op, **fields}).encode() + b"\n")
        answer = await self._line()
        assert "error" not in answer, answer
        return answer

    async def open(
        self, name: str, kind: str, *, bind: str = "", connect: str = "", **options: Any
    ) -> str:
        where = {"bind": bind} if bind else {"connect": connect}
        answer = await self.ask("open", name=name, type=kind, options=options, **where)
        return str(answer["endpoint"])

    async def send(self, name: str, frames: list[bytes], **fields: Any) -> None:
        await self.ask("send", name=name, frames=[f.hex() for f in frames], **fields)

    async def recv(self, name: str, timeout_ms: int = 10_000) -> dict[str, Any] | None:
        answer = await self.ask("recv", name=name, timeout_ms=timeout_ms)
        if answer.get("timeout"):
            return None
        answer["frames"] = [bytes.fromhex(f) for f in answer["frames"]]
        return answer

    async def echo(self, name: str, count: int) -> None:
        answer = await self.ask("echo", name=name, count=count)
        assert answer["count"] == count, answer

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.receive_some(65536):
            self.stderr += chunk


@asynccontextmanager
async def omq_peer() -> AsyncIterator[OmqPeer]:
    """The peer process, killed at the end if it has not quit."""
    assert OMQ is not None
    process = await trio.lowlevel.open_process(
        [OMQ, str(PEER), "--timeout", "300"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peer = OmqPeer(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer._read_stderr)
            try:
                with trio.fail_after(PATIENCE):
                    peer.version = (await peer._line())["version"]
                yield peer
            finally:
                with trio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.kill()
                    await process.wait()
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()


# -- one exchange per pattern, trizmq's socket ``ours``, omq's named "o" --------------------

MULTIPART = [[b"hi"], [TEXT], [b"a", NOISE, TEXT, b""]]
SINGLE = [b"hi", TEXT, NOISE]

Exchange = Callable[[OmqPeer, Any], Awaitable[None]]


async def _we_send(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await ours.send_multipart(message)
        got = await peer.recv("o")
        assert got is not None and got["frames"] == message


async def _they_send(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await peer.send("o", message)
        assert await ours.recv_multipart() == message
    # a burst queued at once: pyomq sends it as batches (LZ4A, ZSTA)
    await peer.send("o", [b"burst", TEXT[:300]], repeat=300)
    for _ in range(300):
        assert await ours.recv_multipart() == [b"burst", TEXT[:300]]


async def _both_ways(peer: OmqPeer, ours: Any) -> None:
    await _we_send(peer, ours)
    await _they_send(peer, ours)


async def _we_request(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await ours.send_multipart(message)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.echo, "o", 1)
            assert await ours.recv_multipart() == message


async def _they_request(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await peer.send("o", message)
        request = await ours.recv_multipart()
        assert request == message
        await ours.send_multipart(request[::-1])
        got = await peer.recv("o")
        assert got is not None and got["frames"] == message[::-1]


async def _dealer_to_router(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await ours.send_multipart(message)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.echo, "o", 1)  # with the identity frame: back to us
            assert await ours.recv_multipart() == message


async def _router_from_dealer(peer: OmqPeer, ours: Any) -> None:
    for message in MULTIPART:
        await peer.send("o", message)
        identity, *frames = await ours.recv_multipart()
        assert frames == message
        await ours.send_multipart([identity, *message[::-1]])
        got = await peer.recv("o")
        assert got is not None and got["frames"] == message[::-1]


async def _until_received(
    send: Callable[[], Awaitable[None]], receive: Callable[[], Awaitable[Any]]
) -> Any:
    """Send until trizmq's first message arrives (a subscription or a join travels
    first); ``receive`` is trizmq's, which a cancellation leaves as it was."""
    with trio.fail_after(PATIENCE):
        while True:
            await send()
            with trio.move_on_after(0.2):
                return await receive()


async def _until_they_receive(peer: OmqPeer, send: Callable[[], Awaitable[None]]) -> Any:
    """Send until the omq.rs peer's first message arrives; its receive is bounded by
    the peer itself (never cancelled here: a cancelled command would leave its answer
    to the next one)."""
    with trio.fail_after(PATIENCE):
        while True:
            await send()
            got = await peer.recv("o", timeout_ms=200)
            if got is not None:
                return got


async def _we_publish(peer: OmqPeer, ours: Any) -> None:
    got = await _until_they_receive(peer, lambda: ours.send_multipart([b"t", TEXT]))
    assert got["frames"] == [b"t", TEXT]
    for _ in range(20):  # what was sent meanwhile
        await ours.send_multipart([b"t", NOISE])
    while (got := await peer.recv("o", timeout_ms=2000)) is not None:
        if got["frames"] == [b"t", NOISE]:
            break
    assert got is not None and got["frames"] == [b"t", NOISE]


async def _they_publish(peer: OmqPeer, ours: Any) -> None:
    ours.subscribe(b"t")
    got = await _until_received(lambda: peer.send("o", [b"t", TEXT]), ours.recv_multipart)
    assert got == [b"t", TEXT]
    await peer.send("o", [b"t", NOISE])
    while (got := await ours.recv_multipart()) != [b"t", NOISE]:
        assert got == [b"t", TEXT]


async def _client_to_server(peer: OmqPeer, ours: Any) -> None:
    for data in SINGLE:
        await ours.send(data)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.echo, "o", 1)
            assert await ours.recv() == data


async def _server_from_client(peer: OmqPeer, ours: Any) -> None:
    for data in SINGLE:
        await peer.send("o", [data])
        message = await ours.recv_message()
        assert message.data == data
        await ours.send(data[::-1], routing_id=message.routing_id)
        got = await peer.recv("o")
        assert got is not None and got["frames"] == [data[::-1]]


async def _we_radio(peer: OmqPeer, ours: Any) -> None:
    got = await _until_they_receive(peer, lambda: ours.send(TEXT, group=b"g"))
    assert (got["frames"], got["group"]) == ([TEXT], "g")


async def _they_radio(peer: OmqPeer, ours: Any) -> None:
    ours.join(b"g")
    message = await _until_received(lambda: peer.send("o", [TEXT], group="g"), ours.recv_message)
    assert (message.group, message.data) == (b"g", TEXT)


async def _we_scatter(peer: OmqPeer, ours: Any) -> None:
    for data in SINGLE:
        await ours.send(data)
        got = await peer.recv("o")
        assert got is not None and got["frames"] == [data]


async def _they_scatter(peer: OmqPeer, ours: Any) -> None:
    for data in SINGLE:
        await peer.send("o", [data])
        assert await ours.recv() == data


async def _channel(peer: OmqPeer, ours: Any) -> None:
    await _we_scatter(peer, ours)
    await _they_scatter(peer, ours)


#: trizmq's class, omq.rs's type, its options, the exchange
PATTERNS: list[tuple[type[Any], str, dict[str, Any], Exchange]] = [
    (trizmq.Push, "PULL", {}, _we_send),
    (trizmq.Pull, "PUSH", {}, _they_send),
    (trizmq.Pair, "PAIR", {}, _both_ways),
    (trizmq.Dealer, "DEALER", {}, _both_ways),
    (trizmq.Req, "REP", {}, _we_request),
    (trizmq.Rep, "REQ", {}, _they_request),
    (trizmq.Dealer, "ROUTER", {}, _dealer_to_router),
    (trizmq.Router, "DEALER", {}, _router_from_dealer),
    (trizmq.Pub, "SUB", {"subscribe": [b"t".hex()]}, _we_publish),
    (trizmq.XPub, "SUB", {"subscribe": [b"t".hex()]}, _we_publish),
    (trizmq.Sub, "PUB", {}, _they_publish),
    (trizmq.XSub, "PUB", {}, _they_publish),
    (trizmq.Client, "SERVER", {}, _client_to_server),
    (trizmq.Server, "CLIENT", {}, _server_from_client),
    (trizmq.Radio, "DISH", {"join": ["g"]}, _we_radio),
    (trizmq.Dish, "RADIO", {}, _they_radio),
    (trizmq.Scatter, "GATHER", {}, _we_scatter),
    (trizmq.Gather, "SCATTER", {}, _they_scatter),
    (trizmq.Channel, "CHANNEL", {}, _channel),
]


@pytest.mark.parametrize(
    ("ours", "theirs", "options", "exchange"),
    PATTERNS,
    ids=[f"{a.__name__}-{b}" for a, b, _, _ in PATTERNS],
)
async def test_every_socket_type_both_schemes_both_roles(
    ours: type[Any], theirs: str, options: dict[str, Any], exchange: Exchange
) -> None:
    async with omq_peer() as peer:
        for scheme in SCHEMES:
            for we_bind in (True, False):
                with trio.fail_after(4 * PATIENCE):
                    async with ours(linger=0) as sock:
                        if we_bind:
                            endpoint = await sock.bind(f"{scheme}://127.0.0.1:0")
                            await peer.open("o", theirs, connect=endpoint, **options)
                        else:
                            endpoint = await peer.open(
                                "o", theirs, bind=f"{scheme}://127.0.0.1:0", **options
                            )
                            await sock.connect(endpoint)
                        await exchange(peer, sock)
                        stats = sock.stats()
                        assert stats.connections["disconnects"] == 0
                        sent, received = stats.bytes_sent, stats.bytes_received
                        assert stats.wire_bytes_sent + stats.wire_bytes_received < sent + received
                    await peer.ask("close", name="o")


async def test_peer_both_schemes_both_roles() -> None:
    """PEER, which the table above cannot drive (a routing id per connection): trizmq's
    connects (``connect_peer``) and speaks first, and omq.rs's (ROUTER-like: the
    sender's identity first) answers it; omq.rs's connects and speaks first, and
    trizmq's answers the routing id the message came with. Both schemes."""
    async with omq_peer() as peer:
        for scheme in SCHEMES:
            with trio.fail_after(4 * PATIENCE):
                async with trizmq.Peer(linger=0) as sock:
                    endpoint = await peer.open("o", "PEER", bind=f"{scheme}://127.0.0.1:0")
                    rid = await sock.connect_peer(endpoint)
                    for data in SINGLE:
                        await sock.send(data, routing_id=rid)
                        got = await peer.recv("o")
                        assert got is not None
                        identity, body = got["frames"]
                        assert body == data
                        await peer.send("o", [identity, data[::-1]])
                        message = await sock.recv_message()
                        assert (message.data, message.routing_id) == (data[::-1], rid)
                    _assert_compressed(sock)
                await peer.ask("close", name="o")
            with trio.fail_after(4 * PATIENCE):
                async with trizmq.Peer(linger=0) as sock:
                    endpoint = await sock.bind(f"{scheme}://127.0.0.1:0")
                    await peer.open("o", "PEER", connect=endpoint)
                    for data in SINGLE:
                        await peer.send("o", [data], to_first=True)
                        message = await sock.recv_message()
                        assert message.data == data
                        await sock.send(data[::-1], routing_id=message.routing_id)
                        got = await peer.recv("o")
                        assert got is not None and got["frames"][1:] == [data[::-1]]
                    _assert_compressed(sock)
                await peer.ask("close", name="o")


def _assert_compressed(sock: trizmq.Socket) -> None:
    """No connection was lost, and the wire carried fewer bytes than the payload."""
    stats = sock.stats()
    assert stats.connections["disconnects"] == 0
    sent, received = stats.bytes_sent, stats.bytes_received
    assert stats.wire_bytes_sent + stats.wire_bytes_received < sent + received


# -- dictionaries ---------------------------------------------------------------------------

RECORD_RNG = random.Random(8)
RECORDS = [
    b'{"sensor": %d, "temp": %d.%d, "unit": "celsius", "status": "ok", "site": "north"}'
    % (RECORD_RNG.randrange(50), RECORD_RNG.randrange(40), RECORD_RNG.randrange(10))
    for _ in range(1500)
]


@pytest.mark.parametrize(
    ("scheme", "dictionary"),
    [("lz4+tcp", LZ4_DICT * 3), ("zstd+tcp", ZSTD_DICT)],
    ids=["lz4", "zstd"],
)
async def test_a_dictionary_given_on_either_side(scheme: str, dictionary: bytes) -> None:
    record = (dictionary[-120:] if scheme == "zstd+tcp" else dictionary)[:100]
    # pyomq 0.27.3 cannot read zstd parts compressed with a dictionary, its own
    # included (a pyomq PUSH with compression_dict loses every message to a pyomq
    # PULL): with zstd, only trizmq reads a dictionary here (docs/compression.md)
    sides = (True, False) if scheme == "lz4+tcp" else (False,)
    async with omq_peer() as peer:
        for dict_ours in sides:
            for we_bind in (True, False):
                ours_options = {"compression_dict": dictionary} if dict_ours else {}
                theirs_options = {} if dict_ours else {"compression_dict": dictionary.hex()}
                with trio.fail_after(2 * PATIENCE):
                    async with trizmq.Dealer(linger=0, **ours_options) as sock:
                        if we_bind:
                            endpoint = await sock.bind(f"{scheme}://127.0.0.1:0")
                            await peer.open("o", "DEALER", connect=endpoint, **theirs_options)
                        else:
                            endpoint = await peer.open(
                                "o", "DEALER", bind=f"{scheme}://127.0.0.1:0", **theirs_options
                            )
                            await sock.connect(endpoint)
                        for _ in range(20):
                            await sock.send(record)
                            got = await peer.recv("o")
                            assert got is not None and got["frames"] == [record]
                            await peer.send("o", [record])
                            assert await sock.recv() == record
                        stats = sock.stats()
                        # the side with the dictionary sends each record in fewer bytes
                        if dict_ours:
                            assert stats.wire_bytes_sent < stats.bytes_sent
                        else:
                            assert stats.wire_bytes_received < stats.bytes_received
                    await peer.ask("close", name="o")


async def test_a_dictionary_trained_on_either_side() -> None:
    async with omq_peer() as peer:
        for ours_trains in (True, False):
            with trio.fail_after(4 * PATIENCE):
                async with trizmq.Dealer(linger=0, compression_auto_train=ours_trains) as sock:
                    endpoint = await sock.bind("zstd+tcp://127.0.0.1:0")
                    await peer.open(
                        "o", "DEALER", connect=endpoint, compression_auto_train=int(not ours_trains)
                    )
                    before = sock.stats()
                    for record in RECORDS:  # one at a time: each its own message
                        if ours_trains:
                            await sock.send(record + record)
                            got = await peer.recv("o")
                            assert got is not None and got["frames"] == [record + record]
                        else:
                            await peer.send("o", [record + record])
                            assert await sock.recv() == record + record
                    after = sock.stats()
                    payload = (after.bytes_sent - before.bytes_sent) + (
                        after.bytes_received - before.bytes_received
                    )
                    wire = (after.wire_bytes_sent - before.wire_bytes_sent) + (
                        after.wire_bytes_received - before.wire_bytes_received
                    )
                    # untrained, a 170-byte record goes plain; trained, it compresses
                    assert wire < payload * 3 // 4
                await peer.ask("close", name="o")


# -- PLAIN underneath -----------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_plain_underneath_both_roles(scheme: str) -> None:
    async with omq_peer() as peer, trizmq.Authenticator(passwords={b"admin": b"secret"}):
        with trio.fail_after(2 * PATIENCE):
            # omq.rs is the PLAIN server and binds
            endpoint = await peer.open(
                "o", "PULL", bind=f"{scheme}://127.0.0.1:0", plain_server="admin:secret"
            )
            client = trizmq.PlainClient(username=b"admin", password=b"secret")
            async with trizmq.Push(linger=0, security=client, connect=endpoint) as push:
                await push.send_multipart([TEXT])
                got = await peer.recv("o")
                assert got is not None and got["frames"] == [TEXT]
            await peer.ask("close", name="o")
            # trizmq is the PLAIN server and binds
            async with trizmq.Pull(security=trizmq.PlainServer()) as pull:
                endpoint = await pull.bind(f"{scheme}://127.0.0.1:0")
                await peer.open(
                    "o", "PUSH", connect=endpoint, plain_username="admin", plain_password="secret"
                )
                await peer.send("o", [TEXT])
                assert await pull.recv() == TEXT
            await peer.ask("close", name="o")
