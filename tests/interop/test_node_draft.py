"""The draft socket types against libzmq 4.3.5 (zeromq.js 6, ``tests/node/peer.js``).

pyzmq's wheels lack the draft API, so the independent peer is Node's zeromq
package. Each test runs peer.js as a subprocess (bounded by its ``--timeout`` and a
``trio.fail_after``) and reads its JSON lines. The slow joiner is handled without
sleeping: a peer prints ``ready`` once bound (its tcp port resolved) before anyone
connects to it, and a RADIO, which cannot know when a DISH has joined, keeps
sending until the DISH has reported what the test needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio

import trizmq

from .node_peer import NodePeer, free_tcp_port, free_udp_port, node_peer, requires_node

pytestmark = requires_node


async def handshakes(events: trizmq.Monitor, n: int) -> None:
    seen = 0
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            seen += 1
            if seen == n:
                return
    raise AssertionError("the monitor ended before the handshakes")


async def keep_sending(send: Callable[[int], Awaitable[None]], until: trio.Event) -> None:
    """Call ``send(i)`` every 10 ms until ``until`` is set (lossy RADIO, unknown join time)."""
    for i in range(10_000):
        if until.is_set():
            return
        await send(i)
        with trio.move_on_after(0.01):
            await until.wait()


# -- RADIO / DISH --------------------------------------------------------------------------


MODES = ["tcp-dish-binds", "tcp-radio-binds", "udp"]


@pytest.mark.parametrize("mode", MODES)
async def test_trizmq_radio_to_node_dish(mode: str) -> None:
    with trio.fail_after(15):
        got: list[dict[str, object]] = []
        async with trizmq.Radio() as radio:
            if mode == "tcp-radio-binds":
                where = ("--connect", await radio.bind("tcp://127.0.0.1:0"))
            elif mode == "tcp-dish-binds":
                where = ("--bind", "tcp://127.0.0.1:0")
            else:  # on udp the DISH binds and the RADIO connects
                where = ("--bind", f"udp://127.0.0.1:{free_udp_port()}")
            args = ("--type", "dish", *where, "--join", "grp", "--join", "", "--recv", "4")
            async with node_peer(*args) as dish:
                (endpoint,) = await dish.ready()
                if where[0] == "--bind":
                    await radio.connect(endpoint)
                enough = trio.Event()

                async def read() -> None:
                    for _ in range(4):
                        got.append(await dish.message())
                    enough.set()

                async def send(i: int) -> None:
                    # groups the dish did not join, a prefix among them, never arrive
                    await radio.send(b"prefix %d" % i, group=b"gr")
                    await radio.send(b"other %d" % i, group=b"grp2")
                    await radio.send(b"\x00hello %d%s\xff" % (i, b"." * 1000), group=b"grp")
                    await radio.send(b"empty group %d" % i, group=b"")

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read)
                    await keep_sending(send, enough)
                await dish.done()
        assert {m["group"] for m in got} <= {b"grp", b""}
        assert any(m["group"] == b"grp" for m in got)
        for message in got:
            body = message["body"]
            assert isinstance(body, bytes)
            if message["group"] == b"grp":
                assert body.startswith(b"\x00hello ") and body.endswith(b"." * 1000 + b"\xff")
            else:
                assert body.startswith(b"empty group ")


@pytest.mark.parametrize("mode", MODES)
async def test_node_radio_to_trizmq_dish(mode: str) -> None:
    with trio.fail_after(15):
        async with trizmq.Dish(reconnect_ivl=0.02) as dish:
            dish.join(b"grp")
            transport = mode[:3]
            radio_binds = mode == "tcp-radio-binds"
            common: tuple[str, ...] = ("--type", "radio", "--forever", "--interval", "10")
            if radio_binds:
                common += ("--bind", "tcp://127.0.0.1:0")
            else:
                endpoint = await dish.bind(f"{transport}://127.0.0.1:0")
                common += ("--connect", endpoint)
            async with (
                node_peer(*common, "--group", "grp", "--body", "hi {i}") as r1,
                node_peer(*common, "--group", "gr", "--body", "prefix {i}") as r2,
            ):
                for radio in (r1, r2):
                    (ready,) = await radio.ready()
                    if radio_binds:
                        await dish.connect(ready)
                    else:
                        assert ready == endpoint
                bodies = []
                for _ in range(5):
                    msg = await dish.recv_message()
                    assert msg.group == b"grp"
                    assert msg.data.startswith(b"hi ")
                    bodies.append(int(msg.data[3:]))
                assert bodies == sorted(set(bodies))
                # change the joined groups while connected (JOIN/LEAVE on tcp)
                dish.leave(b"grp")
                dish.join(b"gr")
                while (msg := await dish.recv_message()).group == b"grp":
                    pass  # sent before the LEAVE took effect
                assert msg.group == b"gr" and msg.data.startswith(b"prefix ")
            if transport == "udp":
                assert dish.statistics()["datagrams_malformed"] == 0


# -- CLIENT / SERVER -----------------------------------------------------------------------


async def test_node_clients_to_trizmq_server() -> None:
    with trio.fail_after(15):
        async with trizmq.Server() as server:
            endpoint = await server.bind("tcp://127.0.0.1:0")
            args = ("--type", "client", "--connect", endpoint, "--send", "3", "--recv", "3")
            async with (
                node_peer(*args, "--body", "a{i}") as a,
                node_peer(*args, "--body", "b{i}") as b,
            ):
                await a.ready()
                await b.ready()
                ids: dict[bytes, int] = {}
                for _ in range(6):
                    msg = await server.recv_message()
                    assert msg.routing_id is not None
                    ids[msg.data] = msg.routing_id
                    await server.send(b"re " + msg.data, routing_id=msg.routing_id)
                assert sorted(ids) == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"]
                assert len({ids[b"a0"], ids[b"a1"], ids[b"a2"]}) == 1
                assert len({ids[b"b0"], ids[b"b1"], ids[b"b2"]}) == 1
                assert ids[b"a0"] != ids[b"b0"]
                for peer, name in ((a, b"a"), (b, b"b")):
                    replies = [(await peer.message())["body"] for _ in range(3)]
                    assert replies == [b"re %s%d" % (name, i) for i in range(3)]
                    await peer.done()


async def test_trizmq_client_to_node_server() -> None:
    with trio.fail_after(15):
        async with node_peer(
            "--type", "server", "--bind", "tcp://127.0.0.1:0", "--echo", "4", "--stay"
        ) as server:
            (endpoint,) = await server.ready()
            async with trizmq.Client() as client:
                await client.connect(endpoint)  # queued until the connection is up
                sent = [b"one", b"", bytes(range(256)), b"x" * 100_000]
                for data in sent:
                    await client.send(data)
                assert [await client.recv() for _ in sent] == sent
                seen = [await server.message() for _ in sent]
                assert [m["body"] for m in seen] == sent
                assert len({m["routing_id"] for m in seen}) == 1
                await server.done()


async def test_trizmq_client_round_robins_to_node_servers() -> None:
    with trio.fail_after(15):
        args = ("--type", "server", "--bind", "tcp://127.0.0.1:0", "--echo", "2", "--stay")
        async with node_peer(*args) as s1, node_peer(*args) as s2:
            endpoints = [*(await s1.ready()), *(await s2.ready())]
            async with trizmq.Client() as client:
                events = client.monitor()
                for endpoint in endpoints:
                    await client.connect(endpoint)
                await handshakes(events, 2)
                events.close()
                for i in range(4):
                    await client.send(b"%d" % i)
                assert sorted([await client.recv() for _ in range(4)]) == [b"0", b"1", b"2", b"3"]
                got = sorted([(await s.message())["body"] for s in (s1, s1, s2, s2)])
                assert got == [b"0", b"1", b"2", b"3"]
                for s in (s1, s2):
                    await s.done()


# -- SCATTER / GATHER ----------------------------------------------------------------------


async def test_trizmq_scatter_to_node_gathers() -> None:
    with trio.fail_after(15):
        async with trizmq.Scatter() as scatter:
            events = scatter.monitor()
            endpoint = await scatter.bind("tcp://127.0.0.1:0")
            args = ("--type", "gather", "--connect", endpoint, "--recv", "3")
            async with node_peer(*args) as g1, node_peer(*args) as g2:
                await g1.ready()
                await g2.ready()
                await handshakes(events, 2)
                events.close()
                for i in range(6):
                    await scatter.send(b"m%d" % i)
                # a loop, not nested comprehensions: Python 3.10 refuses an await in
                # a comprehension inside another
                got = []
                for g in (g1, g2):
                    got.append(sorted([(await g.message())["body"] for _ in range(3)]))
                assert sorted(got) == [[b"m0", b"m2", b"m4"], [b"m1", b"m3", b"m5"]]
                await g1.done()
                await g2.done()


async def test_node_scatter_to_trizmq_gather() -> None:
    with trio.fail_after(15):
        args = ("--type", "scatter", "--bind", "tcp://127.0.0.1:0", "--send", "5", "--stay")
        async with node_peer(*args, "--body", "s{i}", "--interval", "0") as scatter:
            (endpoint,) = await scatter.ready()
            async with trizmq.Gather() as gather:
                await gather.connect(endpoint)
                assert [await gather.recv() for _ in range(5)] == [b"s%d" % i for i in range(5)]
            await scatter.done()


async def test_node_scatters_to_trizmq_gather_fair_queued() -> None:
    with trio.fail_after(15):
        async with trizmq.Gather() as gather:
            endpoint = await gather.bind("tcp://127.0.0.1:0")
            args = ("--type", "scatter", "--connect", endpoint, "--send", "4", "--stay")
            async with (
                node_peer(*args, "--body", "a{i}") as a,
                node_peer(*args, "--body", "b{i}") as b,
            ):
                peers: list[NodePeer] = [a, b]
                for peer in peers:
                    await peer.ready()
                got = [await gather.recv() for _ in range(8)]
                for peer in peers:
                    await peer.done()
            assert sorted(got) == sorted(b"%s%d" % (c, i) for c in (b"a", b"b") for i in range(4))
            for c in (b"a", b"b"):
                assert [m for m in got if m[:1] == c] == [b"%s%d" % (c, i) for i in range(4)]


# -- hello_msg / disconnect_msg on the draft types ------------------------------------------


async def test_server_greets_node_clients_and_reports_them_gone() -> None:
    """A trizmq SERVER with hello_msg and disconnect_msg, libzmq CLIENTs (zeromq.js)."""
    with trio.fail_after(15):
        async with trizmq.Server(
            bind="tcp://127.0.0.1:0", hello_msg=b"HELLO", disconnect_msg=b"GONE"
        ) as server:
            endpoint = server.statistics()["bound"][0]
            args = ("--type", "client", "--connect", endpoint, "--recv", "1")
            async with node_peer(*args, "--send", "1", "--body", "hi") as peer:
                await peer.ready()
                msg = await server.recv_message()
                assert msg.data == b"hi"
                assert (await peer.message())["body"] == b"HELLO"
                await peer.done()
            gone = await server.recv_message()
            assert (gone.data, gone.routing_id) == (b"GONE", msg.routing_id)


async def test_trizmq_client_greets_a_node_server() -> None:
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    with trio.fail_after(15):
        async with node_peer("--type", "server", "--bind", endpoint, "--recv", "1") as peer:
            await peer.ready()
            async with trizmq.Client(connect=endpoint, hello_msg=b"HI"):
                assert (await peer.message())["body"] == b"HI"
