"""A handshake flood must not lock new clients out (``greeting_ivl``, eviction).

* an accepted connection that has not sent its greeting and first handshake command
  within ``greeting_ivl`` of its accept is cut then, however steadily it trickles
  bytes (a deadline, not an idle timer); once they are in, ``handshake_ivl`` alone
  bounds the rest of the handshake;
* when all ``max_handshakes`` slots are taken, a newcomer is accepted anyway and
  evicts the oldest handshake (of the address holding the most slots): a silent
  flood can no longer keep a well-behaved peer waiting;
* over real TCP, with thousands of silent or trickling connections arriving for as
  long as the test lasts, a libzmq PUSH connects and its messages arrive; the
  process holds at most ``max_handshakes`` connections in their handshake (file
  descriptors counted), and once the flood stops arriving, the server cuts what is
  left of it at ``greeting_ivl``.

Deadlines and eviction order are checked in virtual time over the virtual network;
the real-TCP tests bound only how long the whole thing may take.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import pytest
import trio
import trio.testing
import zmq
from line_process import LineProcess, line_process

import trizmq
from trizmq import transport
from trizmq._endpoint import parse_endpoint
from trizmq.nursery.slots import EVICTION_GRACE, HandshakeSlots, address_group
from trizmq.patterns.sockets import socket_type
from trizmq.patterns.sockets.table import options_for
from trizmq.testing import VirtualNetwork
from trizmq.transport.base import effective_backlog
from trizmq.zmtp import Connection, CurveClientMechanism

# -- raw bytes, independent of trizmq.zmtp ---------------------------------------------

NULL_GREETING = (
    b"\xff" + b"\x00" * 7 + b"\x01\x7f\x03\x01" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
)
assert len(NULL_GREETING) == 64
PUSH_READY = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"

GREETING_IVL = 2.0
HANDSHAKE_IVL = 10.0


async def closed_by_server(stream: trio.abc.Stream) -> None:
    """Read until trizmq hangs up (EOF or reset)."""
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while await stream.receive_some(65536):
            pass


async def raw_connect(endpoint: str) -> trio.abc.Stream:
    """A raw stream to ``endpoint`` (through the virtual network when one is installed)."""
    return await transport.connect(parse_endpoint(endpoint, for_bind=False))


def failures(events: list[trizmq.MonitorEvent]) -> list[str]:
    return [e.reason for e in events if isinstance(e, trizmq.HandshakeFailed)]


class Recording(list[trizmq.MonitorEvent]):
    """A socket's monitor events so far, counted by kind; :meth:`until` awaits more."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[type] = Counter()
        self._lot = trio.lowlevel.ParkingLot()

    def add(self, event: trizmq.MonitorEvent) -> None:
        self.append(event)
        self.counts[type(event)] += 1
        self._lot.unpark_all()

    async def until(self, condition: Callable[[], object]) -> None:
        """Return once ``condition()`` is true, looking again after each event."""
        while not condition():
            await self._lot.park()


@asynccontextmanager
async def recorded(sock: trizmq.Socket) -> AsyncIterator[Recording]:
    """Every monitor event of ``sock`` while the block runs."""
    seen = Recording()
    async with sock.monitor(capacity=100_000) as events, trio.open_nursery() as nursery:

        async def record() -> None:
            async for event in events:
                seen.add(event)

        nursery.start_soon(record)
        yield seen
        nursery.cancel_scope.cancel()


# -- the greeting deadline, in virtual time -------------------------------------------


@pytest.mark.parametrize(
    "sends",
    [b"", NULL_GREETING[:40], NULL_GREETING, NULL_GREETING + PUSH_READY[:5]],
    ids=["nothing", "part-of-the-greeting", "the-greeting-only", "a-partial-command"],
)
async def test_a_connection_without_greeting_and_command_is_cut_at_greeting_ivl(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    caplog: pytest.LogCaptureFixture,
    sends: bytes,
) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(100):
        async with trizmq.Pull(greeting_ivl=GREETING_IVL, handshake_ivl=HANDSHAKE_IVL) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:
                stream = await raw_connect(endpoint)
                start = trio.current_time()
                await stream.send_all(sends)
                await closed_by_server(stream)
                elapsed = trio.current_time() - start
                await events.until(lambda: failures(events))
            await stream.aclose()
    assert GREETING_IVL <= elapsed < GREETING_IVL + 0.01, elapsed
    assert failures(events) == [f"greeting timed out after {GREETING_IVL}s"]
    assert any("greeting timed out" in r.getMessage() for r in caplog.records)


async def test_a_trickle_does_not_extend_the_greeting_deadline(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    script = NULL_GREETING + PUSH_READY
    sent = 0
    with trio.fail_after(100):
        async with trizmq.Pull(greeting_ivl=GREETING_IVL, handshake_ivl=HANDSHAKE_IVL) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:
                stream = await raw_connect(endpoint)
                start = trio.current_time()

                async def trickle() -> None:
                    nonlocal sent
                    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                        for i in range(len(script)):
                            await stream.send_all(script[i : i + 1])
                            sent += 1
                            await trio.sleep(0.5)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trickle)
                    await closed_by_server(stream)
                    elapsed = trio.current_time() - start
                    nursery.cancel_scope.cancel()
                await events.until(lambda: failures(events))
            await stream.aclose()
    # a byte every 0.5 s kept arriving; the deadline held all the same
    assert GREETING_IVL <= elapsed < GREETING_IVL + 0.01, elapsed
    assert 4 <= sent <= 5, sent  # at 0, 0.5, 1, 1.5 (and perhaps 2.0) s
    assert failures(events) == [f"greeting timed out after {GREETING_IVL}s"]


async def test_the_first_command_lifts_the_greeting_deadline(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    """A CURVE client that sends its greeting and HELLO at once, then stalls before
    INITIATE: handshake_ivl, not greeting_ivl, ends it."""
    server_public, server_secret = trizmq.curve_keypair()
    public, secret = trizmq.curve_keypair()
    client = Connection(
        "PUSH",
        **socket_type("PUSH").handshake_facts(),
        mechanism=CurveClientMechanism(
            trizmq.z85_decode(server_public), trizmq.z85_decode(public), trizmq.z85_decode(secret)
        ),
    )
    with trio.fail_after(100):
        async with trizmq.Pull(
            security=trizmq.CurveServer(secret_key=server_secret),
            greeting_ivl=GREETING_IVL,
            handshake_ivl=HANDSHAKE_IVL,
        ) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:
                stream = await raw_connect(endpoint)
                start = trio.current_time()
                await stream.send_all(client.start())
                sent = b""
                while b"HELLO" not in sent:  # the rest of our greeting, then our HELLO
                    client.receive_data(await stream.receive_some(65536))
                    out = client.data_to_send()
                    await stream.send_all(out)
                    sent += out
                # WELCOME comes back; INITIATE never goes out
                await closed_by_server(stream)
                elapsed = trio.current_time() - start
                await events.until(lambda: failures(events))
            await stream.aclose()
    assert HANDSHAKE_IVL <= elapsed < HANDSHAKE_IVL + 0.01, elapsed
    assert failures(events) == ["handshake timed out"]


@pytest.mark.parametrize("greeting_ivl", [None, 2 * HANDSHAKE_IVL])
async def test_handshake_ivl_alone_bounds_a_silent_connection_without_a_shorter_greeting_ivl(
    autojump_clock: trio.testing.MockClock,
    virtual_network: VirtualNetwork,
    greeting_ivl: float | None,
) -> None:
    with trio.fail_after(100):
        async with trizmq.Pull(greeting_ivl=greeting_ivl, handshake_ivl=HANDSHAKE_IVL) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:
                stream = await raw_connect(endpoint)
                start = trio.current_time()
                await closed_by_server(stream)
                elapsed = trio.current_time() - start
                await events.until(lambda: failures(events))
            await stream.aclose()
    assert HANDSHAKE_IVL <= elapsed < HANDSHAKE_IVL + 0.01, elapsed
    assert failures(events) == ["handshake timed out"]


async def test_a_prompt_peer_is_not_held_to_the_greeting_deadline(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    """Past its handshake, a connection may stay silent as long as it likes."""
    with trio.fail_after(100):
        async with (
            trizmq.Pull(greeting_ivl=GREETING_IVL) as pull,
            recorded(pull) as events,
        ):
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(connect=endpoint) as push:
                await push.send(b"first")
                assert await pull.recv() == b"first"
                await trio.sleep(10 * GREETING_IVL)
                await push.send(b"much later")
                assert await pull.recv() == b"much later"
    assert failures(events) == []


# -- eviction, in virtual time ------------------------------------------------------------


async def test_a_newcomer_evicts_the_oldest_handshake(
    autojump_clock: trio.testing.MockClock, virtual_network: VirtualNetwork
) -> None:
    """Three silent connections fill max_handshakes=3 with no deadline at all: each
    newcomer is accepted at once and cuts the oldest handshake, in accept order; an
    established connection is never a victim."""
    with trio.fail_after(100):
        async with trizmq.Pull(max_handshakes=3, greeting_ivl=None, handshake_ivl=None) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:

                def accepted() -> int:
                    return events.counts[trizmq.Accepted]

                silent = []
                for i in range(3):
                    silent.append(await raw_connect(endpoint))
                    await events.until(lambda n=i + 1: accepted() == n)
                async with trizmq.Push(connect=endpoint) as push:
                    await push.send(b"newcomer")
                    assert await pull.recv() == b"newcomer"
                    # the oldest silent connection made room, the other two are still open
                    await closed_by_server(silent[0])
                    for stream in silent[1:]:
                        with trio.move_on_after(10) as still_open:
                            await closed_by_server(stream)
                        assert still_open.cancelled_caught
                    # the Push's handshake is over and its slot free: one more silent
                    # connection takes it, and the next evicts the next oldest, never
                    # the established Push
                    silent.append(await raw_connect(endpoint))
                    await events.until(lambda: accepted() == 5)
                    silent.append(await raw_connect(endpoint))
                    await closed_by_server(silent[1])
                    await push.send(b"still here")
                    assert await pull.recv() == b"still here"
                for stream in silent:
                    await stream.aclose()
                await events.until(lambda: len(failures(events)) == 5)
    evicted = [r for r in failures(events) if r.startswith("evicted")]
    assert len(evicted) == 2, failures(events)
    in_flight = most = 0
    for event in events:
        if isinstance(event, trizmq.Accepted):
            in_flight += 1
            most = max(most, in_flight)
        elif isinstance(event, (trizmq.HandshakeFailed, trizmq.HandshakeSucceeded)):
            in_flight -= 1
    assert most == 3


@pytest.mark.parametrize(
    ("address", "group"),
    [
        ("192.0.2.7:5555", "192.0.2.7"),
        ("[2001:db8:1:2:3:4:5:6]:5555", "2001:db8:1:2::/64"),
        ("[2001:db8:1:2:ffff::9]:80", "2001:db8:1:2::/64"),
        ("[::ffff:192.0.2.7]:5555", "192.0.2.7"),
        ("", ""),  # ipc: one group
        ("virtual:7f3a", "virtual"),
    ],
)
def test_eviction_counts_handshakes_by_host_or_ipv6_network(address: str, group: str) -> None:
    assert address_group(address) == group


async def test_eviction_picks_the_oldest_handshake_of_the_busiest_address(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the slots of one socket, as its acceptor uses them
    options = options_for("PULL", {"max_handshakes": 5})
    slots = HandshakeSlots(options)
    lone = slots.take("192.0.2.1:1000")  # the oldest of all
    busy = [slots.take(f"192.0.2.2:{port}") for port in range(2000, 2003)]
    other = slots.take("192.0.2.3:3000")
    # none is evictable before the grace: the acceptor is told how long to wait
    assert slots.evict("tcp://test") == pytest.approx(EVICTION_GRACE)
    assert slots.evicted == 0
    await trio.sleep(EVICTION_GRACE)
    # the busiest address loses its oldest, however old the others are
    for victim in busy[:2]:
        slots.evict("tcp://test")
        assert victim.evicted and victim.scope.cancel_called
    # three addresses with one handshake each: the oldest goes
    for victim in (lone, busy[2], other):
        slots.evict("tcp://test")
        assert victim.evicted and victim.scope.cancel_called
    assert slots.handshaking == {}
    assert slots.evicted == 5
    # nothing left to evict: the acceptor then just waits for a slot
    slots.evict("tcp://test")
    assert slots.evicted == 5


# -- real TCP floods against a libzmq peer ---------------------------------------------

FLOOD_CLIENT = Path(__file__).with_name("flood_client.py")
MAX_HANDSHAKES = 100


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@asynccontextmanager
async def flood(endpoint: str, count: int, mode: str, source: str) -> AsyncIterator[LineProcess]:
    """The flood_client.py process; closing its stdin (EOF) makes it reset its
    connections and exit."""
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    argv = [sys.executable, str(FLOOD_CLIENT), host, port, str(count), mode, source, "2000"]
    async with line_process(argv, "flood client") as process:
        yield process


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts fds in /proc")
@pytest.mark.parametrize(
    ("mode", "source"),
    [("silent", "127.0.0.1"), ("trickle", "127.0.0.2")],
    ids=["silent-from-the-same-address", "trickling-from-another-address"],
)
async def test_a_libzmq_peer_gets_through_a_flood(mode: str, source: str) -> None:
    # the flood client raises its own soft limit up to the hard one
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    count = 2000 if hard == resource.RLIM_INFINITY else min(2000, hard - 200)
    # and the whole flood fits in the listen queue: a connection the kernel finds no
    # room for is left half-open and retried on the kernel's back-off (1, 2, 4, 8,
    # 16 s), which would time the end of the flood, not trizmq
    backlog = effective_backlog(4096)
    count = min(count, backlog - MAX_HANDSHAKES)
    if count < 500:
        pytest.skip(f"the file limit ({hard}) or somaxconn ({backlog}) is too low for a flood")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.setsockopt(zmq.RECONNECT_IVL, 50)
        async with trizmq.Pull(
            max_handshakes=MAX_HANDSHAKES,
            greeting_ivl=GREETING_IVL,
            handshake_ivl=60.0,
            backlog=backlog,
        ) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with recorded(pull) as events:
                baseline = open_fds()
                most = baseline

                async def count_fds() -> None:
                    nonlocal most
                    while True:
                        most = max(most, open_fds())
                        await trio.sleep(0.02)

                async with (
                    flood(endpoint, count, mode, source) as client,
                    trio.open_nursery() as nursery,
                ):
                    nursery.start_soon(count_fds)
                    with trio.fail_after(40):
                        await client.expect("flooding")
                        # each connection cut is replaced at once: the flood has gone
                        # through the slots one and a half times
                        await events.until(lambda: events.counts[trizmq.Accepted] >= 1.5 * count)
                    # every slot is taken and more keep arriving: the libzmq peer now
                    push.connect(endpoint)
                    for i in range(10):
                        push.send(b"%d" % i, zmq.NOBLOCK)  # queued until connected
                    with trio.fail_after(30):
                        for i in range(10):
                            assert await pull.recv() == b"%d" % i
                    # the flood stops arriving: what is left of it is cut at greeting_ivl,
                    # although it keeps trickling (handshake_ivl is a minute)
                    await client.tell("stop")
                    with trio.fail_after(30):
                        await client.expect("all closed")
                    nursery.cancel_scope.cancel()
                # the server closes what it cuts before the flood sees the reset: the
                # libzmq connection is all that is left, its libzmq end and ours (whose
                # reader holds a duplicate of the fd)
                assert open_fds() <= baseline + 3, (open_fds(), baseline)
                push.send(b"after", zmq.NOBLOCK)
                with trio.fail_after(10):
                    assert await pull.recv() == b"after"
    finally:
        ctx.destroy(linger=0)
    accepted = events.counts[trizmq.Accepted]
    reasons = failures(events)
    # the flood went through the slots: far more connections than slots were accepted,
    # and cut by eviction or by the greeting deadline
    assert accepted > 2 * MAX_HANDSHAKES, accepted
    assert any(r.startswith("evicted") for r in reasons)
    assert any(r.startswith("greeting timed out") for r in reasons)
    # at most max_handshakes connections in a handshake, plus the acceptor's newcomer,
    # the libzmq connection and its sockets of our process, whatever the flood's size
    assert most - baseline <= MAX_HANDSHAKES + 15, (most, baseline)
    if source != "127.0.0.1":
        # a flood from another address only ever evicts its own connections
        ours = [
            e
            for e in events
            if isinstance(e, trizmq.HandshakeFailed) and e.address.startswith("127.0.0.1:")
        ]
        assert ours == [], ours
