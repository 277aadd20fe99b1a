"""examples/graceful_shutdown.py drains accepted work on SIGTERM and exits 0."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import trizmq

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "graceful_shutdown.py"


async def free_endpoint() -> str:
    async with trizmq.Pull(bind="tcp://127.0.0.1:0") as probe:
        endpoint: str = probe.statistics()["bound"][0]
        return endpoint


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    while b"\n" not in buffer:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise AssertionError(f"the example ended early; output so far: {bytes(buffer)!r}")
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_sigterm_drains_accepted_work_and_exits_zero(signum: signal.Signals) -> None:
    with trio.fail_after(30):
        front, results = await free_endpoint(), await free_endpoint()
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(EXAMPLE), "--front", front, "--results", results],
            stdout=subprocess.PIPE,
            # a non-interactive parent may have left SIGINT ignored; the example needs it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert proc.stdout is not None
        buffer = bytearray()
        try:
            assert await read_line(proc.stdout, buffer) == "serving"
            async with (
                trizmq.Push(connect=front) as push,
                trizmq.Sub(connect=results, subscribe=b"result") as sub,
            ):
                # phase 1: probe until a result shows the subscription is in place
                probes = 0
                while True:
                    await push.send(b"0")
                    probes += 1
                    with trio.move_on_after(0.05):
                        await sub.recv_multipart()
                        break
                # phase 2: a stream of numbered jobs, interrupted half-way
                base = 1000
                received: set[int] = set()
                for job in range(base, base + 400):
                    await push.send(b"%d" % job)
                while len(received) < 100:
                    _topic, job, _square = await sub.recv_multipart()
                    if int(job) >= base:
                        received.add(int(job))
                proc.send_signal(signum)
                for job in range(base + 400, base + 2000):
                    try:
                        push.send_nowait(b"%d" % job)  # some of these are never accepted
                    except trio.WouldBlock:
                        break
                assert await read_line(proc.stdout, buffer) == f"{signum.name}: draining"
                summary = await read_line(proc.stdout, buffer)
                match = re.fullmatch(r"accepted (\d+) published (\d+)", summary)
                assert match, summary
                accepted, published = int(match[1]), int(match[2])
                assert accepted == published, "accepted work was lost"
                # accepted jobs are a prefix of what one PUSH sent, in order
                phase2 = accepted - probes
                assert 100 <= phase2 < 2000
                while len(received) < phase2:
                    _topic, job, _square = await sub.recv_multipart()
                    if int(job) >= base:
                        received.add(int(job))
                assert received == set(range(base, base + phase2))
            assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
