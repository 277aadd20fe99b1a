"""The lz4+tcp:// and zstd+tcp:// transports in the runtime, trizmq on both ends.

Endpoints and options; every socket type over both schemes, either side binding;
NULL, PLAIN and CURVE underneath; dictionaries given and trained; what
``sock.stats()`` says compression saved. Hostile compressed peers are in
``tests/nursery/test_hostile_compression.py``, omq.rs peers in ``tests/omq``, the
codec alone in ``tests/zmtp/test_compressed.py`` and ``test_compression.py``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from zmtp.omq_vectors import LZ4_DICT, TEXT, ZSTD_DICT

import trizmq
from trizmq._errors import EndpointError

SCHEMES = ["lz4+tcp", "zstd+tcp"]
DICTS = {"lz4+tcp": LZ4_DICT, "zstd+tcp": ZSTD_DICT}
NOISE = random.Random(2).randbytes(3000)


# -- endpoints and options --------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_bind_resolves_the_port_and_keeps_the_scheme(scheme: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull:
            bound = await pull.bind(f"{scheme}://127.0.0.1:0")
            assert bound.startswith(f"{scheme}://127.0.0.1:")
            assert int(bound.rpartition(":")[2]) > 0
            star = await pull.bind(f"{scheme}://*:0")
            assert star.startswith(f"{scheme}://0.0.0.0:")
            six = await pull.bind(f"{scheme}://[::1]:0")
            assert six.startswith(f"{scheme}://[::1]:")
            async with trizmq.Push(connect=six) as push:
                await push.send(TEXT)
                assert await pull.recv() == TEXT


def test_malformed_endpoints_and_options_raise_naming_them() -> None:
    with pytest.raises(EndpointError, match="lz4"):
        trizmq.Pull(bind="lz4+tcp://127.0.0.1")  # no port
    with pytest.raises(ValueError, match="compression_level"):
        trizmq.Pull(compression_level="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compression_level"):
        trizmq.Pull(bind="lz4+tcp://127.0.0.1:0", compression_level=19)
    with pytest.raises(ValueError, match="compression_dict"):
        trizmq.Pull(compression_dict="words")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compression_dict"):
        trizmq.Pull(compression_dict=b"x" * 70_000)
    with pytest.raises(ValueError, match="compression_dict of 9000 bytes"):
        trizmq.Pull(connect="lz4+tcp://127.0.0.1:1", compression_dict=b"x" * 9000)
    with pytest.raises(ValueError, match="Zstandard dictionary"):
        trizmq.Pull(bind="zstd+tcp://127.0.0.1:0", compression_dict=b"raw words")
    with pytest.raises(ValueError, match="compression_auto_train"):
        trizmq.Pull(compression_auto_train=1)  # type: ignore[arg-type]
    # accepted everywhere, with no effect on other transports
    sock = trizmq.Pull(bind="tcp://127.0.0.1:0", compression_dict=b"raw words")
    assert sock.options.compression_dict == b"raw words"
    assert sock.options.compression_level is None and not sock.options.compression_auto_train


async def test_a_later_bind_checks_the_options_against_its_scheme() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(compression_dict=b"raw words") as pull:
            with pytest.raises(EndpointError, match=r"cannot bind zstd.*Zstandard dictionary"):
                await pull.bind("zstd+tcp://127.0.0.1:0")
            await pull.bind("lz4+tcp://127.0.0.1:0")  # raw bytes suit lz4
            pull.set_options(compression_dict=ZSTD_DICT)  # for what is bound from now on
            await pull.bind("zstd+tcp://127.0.0.1:0")
            # and set_options() checks the value against what is bound already
            with pytest.raises(ValueError, match=r"zstd\+tcp://127\.0\.0\.1:\d+: .*Zstandard"):
                pull.set_options(compression_dict=b"raw words")
            assert pull.options.compression_dict == ZSTD_DICT


# -- every socket type --------------------------------------------------------------------

Exchange = Callable[[Any, Any], Awaitable[None]]


async def _one_way(sender: Any, receiver: Any) -> None:
    for message in ([b"hi"], [TEXT], [NOISE, TEXT, b""]):
        await sender.send_multipart(message)
        assert await receiver.recv_multipart() == message


async def _single(sender: Any, receiver: Any) -> None:
    for data in (b"hi", TEXT, NOISE):
        await sender.send(data)
        assert await receiver.recv() == data


async def _req_rep(req: Any, rep: Any) -> None:
    for message in ([TEXT], [b"a", NOISE]):
        await req.send_multipart(message)
        assert await rep.recv_multipart() == message
        await rep.send_multipart(message[::-1])
        assert await req.recv_multipart() == message[::-1]


async def _dealer_router(dealer: Any, router: Any) -> None:
    await dealer.send_multipart([b"", TEXT])
    identity, empty, body = await router.recv_multipart()
    assert (empty, body) == (b"", TEXT)
    await router.send_multipart([identity, b"", NOISE])
    assert await dealer.recv_multipart() == [b"", NOISE]


async def _pub_sub(pub: Any, sub: Any) -> None:
    sub.subscribe(b"t")
    # a subscription travels as a command; publish until it has arrived
    with trio.fail_after(10):
        while True:
            await pub.send_multipart([b"t", TEXT])
            with trio.move_on_after(0.2):
                assert await sub.recv_multipart() == [b"t", TEXT]
                break
    await pub.send_multipart([b"t", NOISE])
    while (got := await sub.recv_multipart()) != [b"t", NOISE]:
        assert got == [b"t", TEXT]  # one more sent while the first was on its way


async def _client_server(client: Any, server: Any) -> None:
    await client.send(TEXT)
    message = await server.recv_message()
    assert message.data == TEXT
    await server.send(NOISE, routing_id=message.routing_id)
    assert await client.recv() == NOISE


async def _radio_dish(radio: Any, dish: Any) -> None:
    dish.join(b"g")
    with trio.fail_after(10):
        while True:
            await radio.send(TEXT, group=b"g")
            with trio.move_on_after(0.2):
                message = await dish.recv_message()
                assert (message.group, message.data) == (b"g", TEXT)
                break


PATTERNS: list[tuple[type[Any], type[Any], Exchange]] = [
    (trizmq.Push, trizmq.Pull, _one_way),
    (trizmq.Pair, trizmq.Pair, _one_way),
    (trizmq.Req, trizmq.Rep, _req_rep),
    (trizmq.Dealer, trizmq.Router, _dealer_router),
    (trizmq.Dealer, trizmq.Dealer, _one_way),
    (trizmq.Pub, trizmq.Sub, _pub_sub),
    (trizmq.XPub, trizmq.XSub, _pub_sub),
    (trizmq.Client, trizmq.Server, _client_server),
    (trizmq.Radio, trizmq.Dish, _radio_dish),
    (trizmq.Scatter, trizmq.Gather, _single),
    (trizmq.Channel, trizmq.Channel, _single),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    ("first", "second", "exchange"),
    PATTERNS,
    ids=[f"{a.__name__}-{b.__name__}" for a, b, _ in PATTERNS],
)
@pytest.mark.parametrize("first_binds", [True, False], ids=["first-binds", "second-binds"])
async def test_every_socket_type(
    scheme: str, first: type[Any], second: type[Any], exchange: Exchange, first_binds: bool
) -> None:
    with trio.fail_after(20):
        async with first() as a, second() as b:
            binder, connecter = (a, b) if first_binds else (b, a)
            endpoint = await binder.bind(f"{scheme}://127.0.0.1:0")
            await connecter.connect(endpoint)
            await exchange(a, b)
            stats = a.stats()
            assert stats.wire_bytes_sent < stats.bytes_sent  # TEXT compressed
            assert b.stats().wire_bytes_received < b.stats().bytes_received


async def test_peer_to_peer() -> None:
    with trio.fail_after(10):
        async with trizmq.Peer() as a, trizmq.Peer() as b:
            endpoint = await a.bind("zstd+tcp://127.0.0.1:0")
            rid = await b.connect_peer(endpoint)
            await b.send(TEXT, routing_id=rid)
            message = await a.recv_message()
            assert message.data == TEXT
            await a.send(NOISE, routing_id=message.routing_id)
            assert (await b.recv_message()).data == NOISE


# -- mechanisms, dictionaries -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_plain_and_curve_underneath(scheme: str) -> None:
    public, secret = trizmq.curve_keypair()
    client_public, client_secret = trizmq.curve_keypair()
    securities = [
        (trizmq.PlainServer(), trizmq.PlainClient(username=b"admin", password=b"secret")),
        (
            trizmq.CurveServer(secret_key=secret),
            trizmq.CurveClient(
                server_key=public, public_key=client_public, secret_key=client_secret
            ),
        ),
    ]
    with trio.fail_after(20):
        async with trizmq.Authenticator(passwords={b"admin": b"secret"}):
            for server, client in securities:
                async with (
                    trizmq.Rep(security=server, compression_dict=DICTS[scheme]) as rep,
                    trizmq.Req(security=client) as req,
                ):
                    await req.connect(await rep.bind(f"{scheme}://127.0.0.1:0"))
                    await _req_rep(req, rep)
                    assert rep.stats().wire_bytes_sent < rep.stats().bytes_sent


@pytest.mark.parametrize("scheme", SCHEMES)
async def test_a_dictionary_each_way(scheme: str) -> None:
    record = (LZ4_DICT if scheme == "lz4+tcp" else ZSTD_DICT[-200:])[:100]
    with trio.fail_after(10):
        async with (
            trizmq.Dealer(compression_dict=DICTS[scheme]) as a,
            trizmq.Dealer(compression_dict=DICTS[scheme]) as b,
        ):
            await b.connect(await a.bind(f"{scheme}://127.0.0.1:0"))
            for _ in range(50):
                await a.send(record)
                assert await b.recv() == record
                await b.send(record)
                assert await a.recv() == record
            sent = a.stats()
            # a small record compresses against the dictionary; its shipment is counted
            assert sent.wire_bytes_sent < sent.bytes_sent
            assert sent.wire_bytes_sent > len(DICTS[scheme])


async def test_a_trained_dictionary() -> None:
    rng = random.Random(6)
    records = [
        b'{"sensor": %d, "temp": %d.%d, "unit": "celsius", "status": "ok", "site": "north"}'
        % (rng.randrange(50), rng.randrange(40), rng.randrange(10))
        for _ in range(3000)
    ]
    with trio.fail_after(30):
        async with (
            trizmq.Push(compression_auto_train=True, sndhwm=0) as push,
            trizmq.Pull(rcvhwm=0) as pull,
        ):
            await push.connect(await pull.bind("zstd+tcp://127.0.0.1:0"))
            for start in range(0, len(records), 500):
                await push.send_many([[r] for r in records[start : start + 500]])
                got = [await pull.recv() for _ in range(500)]
                assert got == records[start : start + 500]
            late = pull.stats()
            # once trained (after 1000 records), a record costs less than itself
            await push.send_many([[r * 2] for r in records[:500]])
            for r in records[:500]:
                assert await pull.recv() == r * 2
            stats = pull.stats()
            gained = stats.bytes_received - late.bytes_received
            wire = stats.wire_bytes_received - late.wire_bytes_received
            assert wire < gained // 2


# -- what compression saved -----------------------------------------------------------------


async def test_stats_say_what_compression_saved() -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as push, trizmq.Pull() as pull, trizmq.Pull() as plain:
            await push.connect(await pull.bind("lz4+tcp://127.0.0.1:0"))
            await push.connect(await plain.bind("tcp://127.0.0.1:0"))
            for _ in range(10):
                await push.send_multipart([b"k", TEXT])
            for _ in range(5):
                assert await pull.recv_multipart() == [b"k", TEXT]
                assert await plain.recv_multipart() == [b"k", TEXT]
            sent = push.stats()
            by_endpoint = {p.endpoint.partition(":")[0]: p for p in sent.peers}
            compressed, uncompressed = by_endpoint["lz4+tcp"], by_endpoint["tcp"]
            assert compressed.bytes_sent == uncompressed.bytes_sent == 5 * 881
            assert uncompressed.wire_bytes_sent == uncompressed.bytes_sent
            # each message: "k" plain (5 bytes), TEXT an LZ4 block of ~70
            assert 5 * 50 < compressed.wire_bytes_sent < 5 * 120
            assert sent.wire_bytes_sent == compressed.wire_bytes_sent + uncompressed.wire_bytes_sent
            received, other = pull.stats(), plain.stats()
            assert received.bytes_received == 5 * 881
            assert received.wire_bytes_received == compressed.wire_bytes_sent
            assert other.wire_bytes_received == other.bytes_received
            (peer,) = received.peers
            assert peer.wire_bytes_received == received.wire_bytes_received
        # after the connections ended, the socket keeps the figures
        assert push.stats().wire_bytes_sent == sent.wire_bytes_sent


async def test_inproc_and_ipc_wire_bytes_are_the_payload(tmp_path: Any) -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as push, trizmq.Pull() as pull:
            await pull.bind(f"ipc://{tmp_path}/s")
            await push.connect(f"ipc://{tmp_path}/s")
            await push.send(TEXT)
            assert await pull.recv() == TEXT
            stats = pull.stats()
            assert stats.wire_bytes_received == stats.bytes_received == len(TEXT)


async def test_a_plain_tcp_peer_is_refused_and_others_go_on(caplog: Any) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pull() as pull,
            pull.monitor() as events,
            trizmq.Push() as good,
            trizmq.Push() as wrong,
        ):
            endpoint = await pull.bind("lz4+tcp://127.0.0.1:0")
            await good.connect(endpoint)
            await wrong.connect("tcp://" + endpoint.partition("://")[2])
            await wrong.send(b"hello")  # no sentinel: the Pull drops this peer
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            assert pull.stats().disconnect_causes["protocol_error"] == 1
            await good.send(TEXT)
            assert await pull.recv() == TEXT
            assert "unknown lz4 sentinel" in caplog.text
