"""RADIO/DISH end to end, trizmq talking to trizmq (48/RADIO-DISH, libzmq's udp://).

Over the ZMTP transports (inproc, tcp, ipc) a RADIO only learns a DISH's groups from
its JOIN commands, which no public call can await: :func:`joined` probes, the RADIO
sending until the DISH has received one message of the group. Over udp a datagram
may in principle be lost, so the udp tests send until the first one is seen (short
polling loops); everything else is awaited.
"""

from __future__ import annotations

import itertools
import socket as stdsocket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from memory_transport import registered
from trio.testing import wait_all_tasks_blocked

import trizmq
from trizmq.zmtp.datagram import MAX_DATAGRAM, encode_datagram

_NAMES = itertools.count()


@pytest.fixture(params=["inproc", "tcp", "ipc", "memory", "ws"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    # memory:// is a test-only transport registered through the public seam
    with registered(str(request.param)) as name:
        yield name


def fresh(transport: str, tmp_path: Path) -> str:
    n = next(_NAMES)
    if transport == "inproc":
        return f"inproc://radiodish-{n}"
    if transport == "memory":
        return f"memory://radiodish-{n}"
    if transport == "ipc":
        return f"ipc://{tmp_path}/rd{n}"
    if transport == "ws":
        return f"ws://127.0.0.1:0/rd{n}"
    return "tcp://127.0.0.1:0"


def free_tcp_port() -> int:
    with stdsocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_of(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


@asynccontextmanager
async def radio_dish(
    transport: str, tmp_path: Path, *, radio_binds: bool = True, **dish_options: object
) -> AsyncIterator[tuple[trizmq.Radio, trizmq.Dish]]:
    """An entered RADIO and DISH linked over a ZMTP transport (handshake awaited)."""
    radio, dish = trizmq.Radio(), trizmq.Dish(**dish_options)
    binder, connecter = (radio, dish) if radio_binds else (dish, radio)
    async with radio, dish:
        events = binder.monitor()
        endpoint = await binder.bind(fresh(transport, tmp_path))
        await connecter.connect(endpoint)
        if transport != "inproc":
            async for event in events:
                if isinstance(event, trizmq.HandshakeSucceeded):
                    break
        events.close()
        yield radio, dish


async def joined(radio: trizmq.Radio, dish: trizmq.Dish, group: bytes) -> None:
    """Probe until ``dish`` receives ``group`` from ``radio``; leave no probe behind."""
    while True:
        await radio.send(b"#probe", group=group)
        with trio.move_on_after(0.02):
            msg = await dish.recv_message()
            assert msg.group == group
            break
    await radio.send(b"#end", group=group)
    while (await dish.recv_message()).data != b"#end":
        pass


async def joined_all(radio: trizmq.Radio, dishes: list[trizmq.Dish], group: bytes) -> None:
    """:func:`joined` for several dishes of one group."""
    waiting = set(dishes)
    while waiting:
        await radio.send(b"#probe", group=group)
        with trio.move_on_after(0.02):
            for dish in list(waiting):
                assert (await dish.recv_message()).group == group
                waiting.discard(dish)
    await radio.send(b"#end", group=group)
    for dish in dishes:
        while (await dish.recv_message()).data != b"#end":
            pass


async def nothing_more(dish: trizmq.Dish) -> None:
    await wait_all_tasks_blocked()
    with pytest.raises(trio.WouldBlock):
        dish.recv_nowait()


async def udp_joined(radio: trizmq.Radio, dishes: list[trizmq.Dish], group: bytes) -> None:
    """Probe until every dish got a ``group`` message over udp (a datagram may be lost).

    Probes stay queued behind: read on with :func:`real`, which skips them.
    """
    waiting = list(dishes)
    while waiting:
        radio.send_nowait(b"#probe", group=group)
        with trio.move_on_after(0.02):
            while waiting:
                assert (await waiting[0].recv_message()).group == group
                waiting.pop(0)


async def real(dish: trizmq.Dish) -> trizmq.Message:
    """The next message that is not a probe."""
    while True:
        msg = await dish.recv_message()
        if not msg.data.startswith(b"#"):
            return msg


# -- ZMTP transports -----------------------------------------------------------------------


@pytest.mark.parametrize("radio_binds", [True, False], ids=["radio-binds", "dish-binds"])
async def test_exact_group_matching(transport: str, tmp_path: Path, radio_binds: bool) -> None:
    with trio.fail_after(10):
        async with radio_dish(transport, tmp_path, radio_binds=radio_binds) as (radio, dish):
            dish.join(b"weather")
            dish.join("sport")  # str is UTF-8 encoded
            await joined(radio, dish, b"weather")
            await joined(radio, dish, b"sport")
            for group in (b"weath", b"weather.uk", b"Weather", b"", b"sports", b"spor"):
                await radio.send(b"not for you", group=group)
            await radio.send(b"sunny", group=b"weather")
            await radio.send(bytearray(b"goal"), group="sport")
            msg = await dish.recv_message()
            assert (msg.group, msg.data, msg.frames) == (b"weather", b"sunny", [b"sunny"])
            assert msg.routing_id is None
            # recv() gives the body only, as one whole message
            assert await dish.recv() == b"goal"
            assert not dish.rcvmore
            await nothing_more(dish)


async def test_empty_and_longest_groups_and_bodies(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with radio_dish(transport, tmp_path) as (radio, dish):
            longest = bytes(range(1, 256))
            assert len(longest) == 255
            dish.join(b"")
            dish.join(longest)
            await joined(radio, dish, b"")
            await joined(radio, dish, longest)
            await radio.send(b"", group=longest)
            await radio.send(b"x" * 100_000, group=b"")
            msg = await dish.recv_message()
            assert (msg.group, msg.data) == (longest, b"")
            msg = await dish.recv_message()
            assert (msg.group, msg.data) == (b"", b"x" * 100_000)


async def test_join_and_leave(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with radio_dish(transport, tmp_path) as (radio, dish):
            dish.join(b"a")
            dish.join(b"b")
            await joined(radio, dish, b"a")
            await joined(radio, dish, b"b")
            with pytest.raises(ValueError):
                dish.join(b"a")  # twice: EINVAL in libzmq
            dish.leave(b"a")
            with pytest.raises(ValueError):
                dish.leave(b"a")  # not joined
            with pytest.raises(ValueError):
                dish.leave(b"never")
            await radio.send(b"gone", group=b"a")
            await radio.send(b"still", group=b"b")
            assert (await dish.recv_message()).data == b"still"
            await nothing_more(dish)
            # joining again works
            dish.join(b"a")
            await joined(radio, dish, b"a")
            await radio.send(b"back", group=b"a")
            msg = await dish.recv_message()
            assert (msg.group, msg.data) == (b"a", b"back")


async def test_leave_reaches_the_radio(transport: str, tmp_path: Path) -> None:
    """After LEAVE the RADIO stops sending the group (filtering on the RADIO side)."""
    with trio.fail_after(10):
        async with radio_dish(transport, tmp_path) as (radio, dish):
            dish.join(b"a")
            await joined(radio, dish, b"a")
            assert radio.statistics()["groups"] == 1
            dish.leave(b"a")
            while radio.statistics()["groups"]:  # the LEAVE is not awaitable
                await trio.sleep(0.005)
            await radio.send(b"dropped at the radio", group=b"a")
            assert dish.statistics()["queued_in"] == 0
            await nothing_more(dish)


async def test_several_dishes_get_only_their_groups(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with trizmq.Radio() as radio, trizmq.Dish() as d1, trizmq.Dish() as d2:
            endpoint = await radio.bind(fresh(transport, tmp_path))
            await d1.connect(endpoint)
            await d2.connect(endpoint)
            d1.join(b"one")
            d1.join(b"both")
            d2.join(b"two")
            d2.join(b"both")
            await joined(radio, d1, b"one")
            await joined(radio, d2, b"two")
            await joined_all(radio, [d1, d2], b"both")
            for group in (b"one", b"two", b"both"):
                await radio.send(group + b"!", group=group)
            assert [(await d1.recv_message()).data for _ in range(2)] == [b"one!", b"both!"]
            assert [(await d2.recv_message()).data for _ in range(2)] == [b"two!", b"both!"]
            await nothing_more(d1)
            await nothing_more(d2)


async def test_group_and_message_rules() -> None:
    with trio.fail_after(5):
        async with trizmq.Radio() as radio, trizmq.Dish() as dish:
            for bad in (b"g" * 256, "é" * 128, b"nul\x00inside"):
                with pytest.raises(ValueError):
                    await radio.send(b"x", group=bad)
                with pytest.raises(ValueError):
                    radio.send_nowait(b"x", group=bad)
                with pytest.raises(ValueError):
                    dish.join(bad)
            await radio.send(b"x", group=b"g" * 255)  # the longest group is fine
            dish.join(b"g" * 255)
            with pytest.raises(ValueError):
                await radio.send(b"x", group=b"g", more=True)
            with pytest.raises(ValueError):
                radio.send_nowait(b"x", group=b"g", more=True)
            with pytest.raises(TypeError):
                await radio.send_multipart([b"a", b"b"])
            with pytest.raises(TypeError):
                radio.send_multipart_nowait([b"a"])
            with pytest.raises(TypeError):
                await radio.send(b"no group")  # type: ignore[call-arg]
            with pytest.raises(TypeError):
                await radio.send("text", group=b"g")
            with pytest.raises(trizmq.NotSupportedError):
                await radio.recv()
            with pytest.raises(trizmq.NotSupportedError):
                dish.send_nowait(b"x")
            with pytest.raises(trizmq.NotSupportedError):
                await dish.send(b"x")
        with pytest.raises(trio.ClosedResourceError):
            dish.join(b"late")
        with pytest.raises(trio.ClosedResourceError):
            await radio.send(b"late", group=b"g")


async def test_radio_without_dishes_never_blocks(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(5):
        async with trizmq.Radio(sndhwm=1) as radio:
            await radio.bind(fresh(transport, tmp_path))
            for i in range(1000):
                radio.send_nowait(b"%d" % i, group=b"g")
                await radio.send(b"%d" % i, group=b"g")


async def test_radio_drops_for_a_full_dish(transport: str, tmp_path: Path) -> None:
    """A dish that does not read: RADIO never blocks, the excess is dropped."""
    with trio.fail_after(15):
        radio, dish = trizmq.Radio(sndhwm=4), trizmq.Dish(rcvhwm=4)
        async with radio, dish:
            events = radio.monitor()
            endpoint = await radio.bind(fresh(transport, tmp_path))
            await dish.connect(endpoint)
            if transport != "inproc":
                async for event in events:
                    if isinstance(event, trizmq.HandshakeSucceeded):
                        break
            events.close()
            dish.join(b"g")
            await joined(radio, dish, b"g")
            body = b"x" * 1024
            sent = 1000
            for i in range(sent):  # no checkpoint in between: the queues fill at once
                radio.send_nowait(i.to_bytes(4, "big") + body, group=b"g")  # never WouldBlock
            for i in range(sent, 2 * sent):
                await radio.send(i.to_bytes(4, "big") + body, group=b"g")  # never waits
            sent *= 2
            assert radio.statistics()["dropped"] > 0
            await wait_all_tasks_blocked()
            got = []
            while True:
                with trio.move_on_after(0.2):
                    got.append(int.from_bytes((await dish.recv())[:4], "big"))
                    continue
                break
            assert 0 < len(got) < sent
            assert got == sorted(set(got))  # in order, no duplicates
            # the link still works after the flood
            await joined(radio, dish, b"g")


async def test_join_replayed_after_the_radio_restarts() -> None:
    with trio.fail_after(15):
        endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
        async with trizmq.Dish(reconnect_ivl=0.02) as dish:
            dish.join(b"a")
            dish.join(b"b")
            await dish.connect(endpoint)
            for round_ in range(3):
                groups = [b"a", b"b"] if round_ == 0 else [b"b", b"c"]
                async with trizmq.Radio(bind=endpoint) as radio:
                    for group in groups:
                        await joined(radio, dish, group)
                    assert radio.statistics()["groups"] == 2
                    await radio.send(b"gone", group=b"a" if round_ else b"c")
                    await radio.send(b"round %d" % round_, group=b"b")
                    msg = await dish.recv_message()
                    assert (msg.group, msg.data) == (b"b", b"round %d" % round_)
                if round_ == 0:
                    dish.leave(b"a")  # while no radio is there: the replay has b and c
                    dish.join(b"c")


# -- udp -----------------------------------------------------------------------------------


async def test_udp_unicast() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish() as dish, trizmq.Radio() as radio:
            endpoint = await dish.bind("udp://127.0.0.1:0")
            assert endpoint.startswith("udp://127.0.0.1:")
            assert port_of(endpoint) != 0
            assert dish.statistics()["bound"] == [endpoint]
            dish.join(b"grp")
            await radio.connect(endpoint)
            assert radio.statistics()["connected"] == [endpoint]
            await udp_joined(radio, [dish], b"grp")
            # every message goes out (no JOIN on udp); the dish filters exactly
            for group in (b"gr", b"grp2", b"GRP", b"", b"other"):
                await radio.send(b"not for you", group=group)
            await radio.send(b"\x00\xff" * 100, group=b"grp")
            msg = await real(dish)
            assert (msg.group, msg.data) == (b"grp", b"\x00\xff" * 100)
            await radio.send(b"body only", group=b"grp")
            while (body := await dish.recv()).startswith(b"#"):
                pass
            assert body == b"body only"
            dish.leave(b"grp")
            dish.join(b"new")
            await radio.send(b"left", group=b"grp")
            await radio.send(b"joined", group=b"new")
            msg = await dish.recv_message()
            assert (msg.group, msg.data) == (b"new", b"joined")
            assert dish.statistics()["datagrams_malformed"] == 0


async def test_one_radio_over_udp_and_tcp() -> None:
    """udp gets every message (the DISH filters), tcp only the joined groups."""
    with trio.fail_after(10):
        async with (
            trizmq.Radio() as radio,
            trizmq.Dish() as over_udp,
            trizmq.Dish() as over_tcp,
        ):
            udp_endpoint = await over_udp.bind("udp://127.0.0.1:0")
            await radio.connect(udp_endpoint)
            await over_tcp.connect(await radio.bind("tcp://127.0.0.1:0"))
            over_udp.join(b"u")
            over_tcp.join(b"t")
            await udp_joined(radio, [over_udp], b"u")
            await joined(radio, over_tcp, b"t")
            assert radio.statistics()["groups"] == 1  # only the tcp dish sends JOIN
            await radio.send(b"to t", group=b"t")
            await radio.send(b"to u", group=b"u")
            msg = await real(over_udp)
            assert (msg.group, msg.data) == (b"u", b"to u")
            msg = await over_tcp.recv_message()
            assert (msg.group, msg.data) == (b"t", b"to t")
            await nothing_more(over_tcp)
            await radio.disconnect(udp_endpoint)
            assert radio.statistics()["connected"] == []
            await radio.send(b"after disconnect", group=b"t")
            assert await over_tcp.recv() == b"after disconnect"


async def test_udp_largest_datagram_and_too_large_message() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish() as dish, trizmq.Radio() as radio:
            endpoint = await dish.bind("udp://127.0.0.1:0")
            dish.join(b"g")
            await radio.connect(endpoint)
            await udp_joined(radio, [dish], b"g")
            biggest = bytes(i % 251 for i in range(MAX_DATAGRAM - 2))
            while True:  # a datagram may be lost: send until one arrives
                await radio.send(b"too big" + biggest, group=b"g")  # dropped, never sent
                await radio.send(biggest, group=b"g")
                with trio.move_on_after(0.05):
                    msg = await real(dish)
                    break
            assert (msg.group, msg.data) == (b"g", biggest)
            assert radio.statistics()["datagrams_dropped"] > 0


async def test_udp_port_zero_resolves_on_any_interface() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish() as dish, trizmq.Radio() as radio:
            endpoint = await dish.bind("udp://*:0")
            port = port_of(endpoint)
            assert port != 0
            assert dish.statistics()["bound"] == [endpoint]
            dish.join(b"g")
            await radio.connect(f"udp://127.0.0.1:{port}")
            await udp_joined(radio, [dish], b"g")
            await dish.unbind(endpoint)
            assert dish.statistics()["bound"] == []


@pytest.mark.parametrize("interface", ["127.0.0.1;", "lo;", ""], ids=["addr", "name", "default"])
async def test_udp_multicast(interface: str) -> None:
    """A multicast group, joined and sent on loopback (or the default interface)."""
    with trio.fail_after(10):
        async with trizmq.Dish() as d1, trizmq.Dish() as d2, trizmq.Radio() as radio:
            if interface == "lo;" and "lo" not in {name for _, name in stdsocket.if_nameindex()}:
                pytest.skip("no network interface named lo")
            try:
                endpoint = await d1.bind(f"udp://{interface}239.255.42.99:0")
            except OSError as exc:
                where = f"on {interface[:-1]}" if interface else "on the default interface"
                pytest.skip(f"this machine refuses an IPv4 multicast join {where}: {exc}")
            port = port_of(endpoint)
            assert endpoint == f"udp://{interface}239.255.42.99:{port}"
            # a second dish on the same host shares the port (SO_REUSEPORT)
            await d2.bind(endpoint)
            d1.join(b"mc")
            d2.join(b"mc")
            await radio.connect(endpoint)  # sends on loopback, multicast loop on
            await udp_joined(radio, [d1, d2], b"mc")
            for group in (b"m", b"mcx", b"mc"):
                await radio.send(b"to " + group, group=group)
            for dish in (d1, d2):
                msg = await real(dish)
                assert (msg.group, msg.data) == (b"mc", b"to mc")


async def test_udp_malformed_datagrams_are_dropped_and_counted() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish() as dish:
            endpoint = await dish.bind("udp://127.0.0.1:0")
            address = ("127.0.0.1", port_of(endpoint))
            dish.join(b"g")
            malformed = [
                b"",  # empty
                b"\x05abc",  # the group length runs past the end
                b"\xff",
                encode_datagram(b"g", b"x" * (MAX_DATAGRAM - 2)) + b"!",  # over the limit
            ]
            with stdsocket.socket(stdsocket.AF_INET, stdsocket.SOCK_DGRAM) as raw:
                for data in malformed:
                    raw.sendto(data, address)
                # loopback datagrams are not lost, but nothing here can be awaited
                while dish.statistics()["datagrams_malformed"] < len(malformed):
                    await trio.sleep(0.005)
                while True:
                    raw.sendto(encode_datagram(b"g", b"good"), address)
                    with trio.move_on_after(0.02):
                        msg = await dish.recv_message()
                        break
                assert (msg.group, msg.data) == (b"g", b"good")
                raw.sendto(encode_datagram(b"other", b"filtered"), address)
                raw.sendto(encode_datagram(b"", b"filtered"), address)
                raw.sendto(encode_datagram(b"g", b""), address)  # empty body is fine
                while True:
                    msg = await dish.recv_message()
                    if msg.data != b"good":
                        break
                assert (msg.group, msg.data) == (b"g", b"")
            assert dish.statistics()["datagrams_malformed"] == len(malformed)


async def test_udp_dish_drops_when_full() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish(rcvhwm=2) as dish:
            endpoint = await dish.bind("udp://127.0.0.1:0")
            address = ("127.0.0.1", port_of(endpoint))
            dish.join(b"g")
            with stdsocket.socket(stdsocket.AF_INET, stdsocket.SOCK_DGRAM) as raw:
                for i in range(20):
                    raw.sendto(encode_datagram(b"g", b"%d" % i), address)
                while dish.statistics()["datagrams_dropped"] < 18:  # not awaitable
                    await trio.sleep(0.005)
            assert [await dish.recv() for _ in range(2)] == [b"0", b"1"]
            await nothing_more(dish)


async def test_udp_endpoint_roles() -> None:
    with trio.fail_after(5):
        async with trizmq.Radio() as radio, trizmq.Dish() as dish:
            with pytest.raises(trizmq.EndpointError):
                await radio.bind("udp://127.0.0.1:0")
            with pytest.raises(trizmq.EndpointError):
                await dish.connect("udp://127.0.0.1:5555")
            assert radio.statistics()["bound"] == []
            assert dish.statistics()["connected"] == []
        for cls in (trizmq.Pub, trizmq.Sub, trizmq.Push, trizmq.Pull, trizmq.Pair,
                    trizmq.Dealer, trizmq.Router, trizmq.Req, trizmq.Rep, trizmq.Client,
                    trizmq.Server, trizmq.Scatter, trizmq.Gather, trizmq.Channel,
                    trizmq.Peer):  # fmt: skip
            async with cls() as sock:
                with pytest.raises(trizmq.EndpointError):
                    await sock.bind("udp://127.0.0.1:0")
                with pytest.raises(trizmq.EndpointError):
                    await sock.connect("udp://127.0.0.1:5555")
        # from the constructor, raised as itself on entry
        with pytest.raises(trizmq.EndpointError):
            async with trizmq.Radio(bind="udp://127.0.0.1:0"):
                pass  # pragma: no cover
        with pytest.raises(trizmq.EndpointError):
            async with trizmq.Dish(connect="udp://127.0.0.1:5555"):
                pass  # pragma: no cover
        with pytest.raises(trizmq.EndpointError):
            async with trizmq.Push(connect="udp://127.0.0.1:5555"):
                pass  # pragma: no cover
