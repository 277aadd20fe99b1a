"""A libzmq peer frozen with SIGSTOP: trizmq's heartbeats drop it, and it comes back.

The libzmq side is a subprocess (a pyzmq ROUTER echoing every message). Frozen, its
kernel still accepts our bytes but nothing answers: trizmq must drop the connection
within ``heartbeat_ivl + heartbeat_timeout``. Thawed with SIGCONT, the connection is
made again (trizmq reconnects when it connected; libzmq does when trizmq bound) and
messages flow once more.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
import trio

import trizmq

PEER = textwrap.dedent(
    """
    import sys, zmq
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.reconnect_ivl = 50
    if sys.argv[1] == "bind":
        port = router.bind_to_random_port("tcp://127.0.0.1")
        print(f"tcp://127.0.0.1:{port}", flush=True)
    else:
        router.connect(sys.argv[2])
        print("ready", flush=True)
    while True:
        rid, body = router.recv_multipart()
        router.send_multipart([rid, b"echo " + body])
    """
)

IVL = 0.2
TIMEOUT = 0.4
#: scheduling slack on a loaded machine, on top of IVL + TIMEOUT
SLACK = 1.0


async def start_peer(*args: str) -> tuple[trio.Process, str]:
    """Start the libzmq echo peer; returns it and the first line it printed."""
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", PEER, *args], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await proc.stdout.receive_some(256)
            assert chunk, "the libzmq peer exited before it was ready"
            line += chunk
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc, line.decode().strip()


async def next_event(events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]) -> None:
    async for event in events:
        if isinstance(event, kind):
            return


async def echo(dealer: trizmq.Dealer, body: bytes) -> None:
    await dealer.send(body)
    assert await dealer.recv() == b"echo " + body


@pytest.mark.parametrize("trizmq_binds", [False, True], ids=["trizmq-connects", "trizmq-binds"])
async def test_a_frozen_libzmq_peer_is_dropped_then_reconnected(trizmq_binds: bool) -> None:
    options = {"heartbeat_ivl": IVL, "heartbeat_timeout": TIMEOUT, "reconnect_ivl": 0.05}
    proc: trio.Process | None = None
    with trio.fail_after(30):
        try:
            async with (
                trizmq.Dealer(linger=0, **options) as dealer,
                dealer.monitor() as events,
            ):
                if trizmq_binds:
                    endpoint = await dealer.bind("tcp://127.0.0.1:0")
                    proc, _ = await start_peer("connect", endpoint)
                else:
                    proc, endpoint = await start_peer("bind")
                    await dealer.connect(endpoint)
                await next_event(events, trizmq.HandshakeSucceeded)
                await echo(dealer, b"before")

                proc.send_signal(signal.SIGSTOP)
                stopped = trio.current_time()
                await next_event(events, trizmq.Disconnected)
                took = trio.current_time() - stopped
                print(f"dropped {took:.3f}s after SIGSTOP (ivl {IVL}, timeout {TIMEOUT})")
                assert took <= IVL + TIMEOUT + SLACK, f"dropped {took:.3f}s after SIGSTOP"

                proc.send_signal(signal.SIGCONT)
                await next_event(events, trizmq.HandshakeSucceeded)
                await echo(dealer, b"after")
        finally:
            if proc is not None:
                proc.kill()  # SIGKILL ends a stopped process too
                with trio.move_on_after(5):
                    await proc.wait()
