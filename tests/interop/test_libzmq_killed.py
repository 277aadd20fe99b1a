"""A libzmq peer killed mid-stream (SIGKILL) and restarted: trizmq reconnects and resumes.

The libzmq side is a subprocess (pyzmq ROUTER) that acknowledges every message it
receives. The trizmq DEALER keeps each message until it is acknowledged and resends
the unacknowledged ones when a reply does not come, so no acknowledged message is
lost and every message is eventually acknowledged, across the crash.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import trio

import trizmq

PEER = textwrap.dedent(
    """
    import sys, zmq
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(sys.argv[1])
    print("ready", flush=True)
    while True:
        rid, seq = router.recv_multipart()
        router.send_multipart([rid, b"ack", seq])
    """
)

TOTAL = 3000
WINDOW = 50


async def start_peer(endpoint: str) -> trio.Process:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", PEER, endpoint], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        chunk = await proc.stdout.receive_some(64)
        assert chunk, "the libzmq peer exited before it was ready"
        line += chunk
    assert line == b"ready\n"
    return proc


async def test_libzmq_peer_killed_and_restarted() -> None:
    with trio.fail_after(60):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as probe:
            endpoint = probe.statistics()["bound"][0]
        peer = await start_peer(endpoint)
        acked: set[int] = set()
        handshakes = 0
        killed = False
        try:
            async with trizmq.Dealer(connect=endpoint, reconnect_ivl=0.05) as dealer:
                events = dealer.monitor()
                unacked: dict[int, None] = {}
                next_seq = 0
                while len(acked) < TOTAL:
                    while next_seq < TOTAL and len(unacked) < WINDOW:
                        unacked[next_seq] = None
                        await dealer.send(str(next_seq).encode())
                        next_seq += 1
                    with trio.move_on_after(0.5) as timer:
                        kind, seq = await dealer.recv_multipart()
                        assert kind == b"ack"
                        acked.add(int(seq))
                        unacked.pop(int(seq), None)
                    if timer.cancelled_caught:
                        # a lost reply: resend everything still unacknowledged
                        for seq in list(unacked):
                            await dealer.send(str(seq).encode())
                    if not killed and len(acked) >= TOTAL // 3:
                        peer.send_signal(signal.SIGKILL)
                        await peer.wait()
                        killed = True
                        peer = await start_peer(endpoint)
                print(f"acked {len(acked)}, killed at {TOTAL // 3}")
                events.close()
                handshakes = sum([isinstance(e, trizmq.HandshakeSucceeded) async for e in events])
        finally:
            peer.kill()
            await peer.wait()
        assert killed, "the peer was never killed"
        assert acked == set(range(TOTAL))
        assert handshakes >= 2, "the DEALER should have reconnected to the restarted peer"
