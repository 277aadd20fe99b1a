"""Adding a socket type is its strategy, its row and its public class (docs/architecture.md,
"A new socket type"): a small type defined here that way, and nothing else, runs against
itself over every transport, with its options checked, its queues conflating, its counts
kept and its handshake refusing the types its row does not accept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.testing

import trizmq
from trizmq.patterns.sockets import SocketType, register_socket_type, unregister_socket_type
from trizmq.patterns.sockets.pipeline import RoundRobinOut


# 1. the strategy: the routing, with no I/O (here: round robin out, fair queue in)
class RelayStrategy(RoundRobinOut):
    """Round-robin out to peers of its own type, fair-queued in."""

    socket_type = "X-RELAY"


# 2. the row: what the type decides
RELAY = SocketType(
    RelayStrategy,
    peers={"X-RELAY"},
    conflate_out=True,
    conflate_in=True,
    own_options={"hello_msg"},
)


# 3. the public class: what its messages look like to the application
class Relay(trizmq.Socket):
    """A test-only socket type."""

    socket_type = "X-RELAY"


@pytest.fixture(autouse=True)
def relay_type() -> Iterator[SocketType]:
    register_socket_type(RELAY)
    try:
        yield RELAY
    finally:
        unregister_socket_type("X-RELAY")


@pytest.mark.parametrize("scheme", ["tcp", "ipc", "inproc"])
async def test_a_new_type_runs_against_itself(scheme: str, tmp_path: Any) -> None:
    endpoint = {
        "tcp": "tcp://127.0.0.1:0",
        "ipc": f"ipc://{tmp_path}/relay",
        "inproc": "inproc://relay",
    }[scheme]
    with trio.fail_after(20):
        async with Relay(bind=endpoint, hello_msg=b"hello") as server:
            bound = server.statistics()["bound"][0]
            async with Relay(connect=bound) as client:
                # the binder's hello_msg reaches the connecting side first
                assert await client.recv_multipart() == [b"hello"]
                await client.send_multipart([b"ping", b"1"])
                assert await server.recv_multipart() == [b"ping", b"1"]
                await server.send(b"pong")
                assert await client.recv() == b"pong"
                assert client.stats().messages_received == 2
                assert server.stats().messages_received == 1


async def test_its_options_are_its_rows() -> None:
    Relay(hello_msg=b"x", conflate=True, sndhwm=5)  # its own, implied and common ones
    with pytest.raises(TypeError, match="does not apply to a X-RELAY socket"):
        Relay(router_mandatory=True)
    with pytest.raises(TypeError, match=r"only to .*X-RELAY"):
        trizmq.Pub(hello_msg=b"x")


async def test_its_queues_conflate_as_its_row_says() -> None:
    with trio.fail_after(20):
        async with Relay(bind="tcp://127.0.0.1:0", conflate=True) as server:
            bound = server.statistics()["bound"][0]
            async with Relay(connect=bound, conflate=True) as client:
                await client.send(b"first")
                assert await server.recv() == b"first"  # connected
                for i in range(50):
                    client.send_nowait(b"%d" % i)
                await trio.testing.wait_all_tasks_blocked()
                # only the newest waits: the others were replaced, in one queue or the
                # other, and counted so
                assert await server.recv() == b"49"
                drops = client.stats().drops["conflate"] + server.stats().drops["conflate"]
                assert drops == 49


async def test_its_handshake_refuses_a_type_its_row_does_not_accept() -> None:
    with trio.fail_after(20):
        async with Relay(bind="tcp://127.0.0.1:0") as server:
            bound = server.statistics()["bound"][0]
            async with (
                server.monitor() as events,
                trizmq.Push(connect=bound) as push,
            ):
                async for event in events:
                    if isinstance(event, trizmq.HandshakeFailed):
                        break
                # whichever side reads the other's READY first refuses it for its type
                refusals = [
                    sock.stats().handshake_failure_causes["socket_type"] for sock in (server, push)
                ]
                assert sum(refusals) >= 1
                push.send_nowait(b"never")  # queued for a connection that never comes
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(trio.WouldBlock):
                    server.recv_nowait()
