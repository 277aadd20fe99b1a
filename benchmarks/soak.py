"""Soak test: PUSH/PULL and PUB/SUB with peers that come and go, for a given time.

    python benchmarks/soak.py --duration 60 [--transport tcp|ipc] [--json out.json]

Two workloads run side by side over real sockets:

* **pipeline**: one PULL sink stays bound; PUSH peers come and go, each sending a
  numbered batch and closing with ``linger=None`` (so all of it is flushed). Every
  message sent between live peers must arrive: the report's ``lost`` must be 0.
* **pub-sub**: one PUB stays bound with a small ``sndhwm``; SUB peers come and go,
  some of them slow readers. A full subscriber costs the publisher nothing but the
  messages it drops for that subscriber (``dropped by design``).

At the end it prints messages sent, received, dropped by design, lost, and the
peak resident memory, and exits 1 if any pipeline message was lost. Pub-sub
deliveries and drops are counted per subscriber, so they can exceed what was
published.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import struct
import sys
import tempfile
import time
from pathlib import Path

import trio

import trizmq

SEQ = struct.Struct("!IQ")


def peak_rss_mib() -> float:
    """Peak resident memory of this process, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def pipeline(endpoint: str, deadline: float, report: dict[str, int]) -> None:
    """PUSH peers come and go; the PULL counts what each one sent."""
    received: dict[int, set[int]] = {}
    sent: dict[int, int] = {}
    async with trizmq.Pull(bind=endpoint) as pull:
        endpoint = pull.statistics()["bound"][0]

        async def pusher(pusher_id: int) -> None:
            count = random.randint(1000, 20000)
            async with trizmq.Push(connect=endpoint, linger=None) as push:
                for seq in range(count):
                    await push.send(SEQ.pack(pusher_id, seq))
            sent[pusher_id] = count

        async def churn() -> None:
            pusher_id = 0
            async with trio.open_nursery() as nursery:
                while trio.current_time() < deadline:
                    nursery.start_soon(pusher, pusher_id)
                    pusher_id += 1
                    await trio.sleep(random.uniform(0.01, 0.2))

        async def sink(cancel: trio.CancelScope) -> None:
            async for (frame,) in pull:
                pusher_id, seq = SEQ.unpack(frame)
                received.setdefault(pusher_id, set()).add(seq)
                if cancel.cancel_called:
                    break

        async with trio.open_nursery() as nursery:
            sink_scope = trio.CancelScope()

            async def run_sink() -> None:
                with sink_scope:
                    await sink(sink_scope)

            nursery.start_soon(run_sink)
            await churn()
            # every pusher flushed before it closed: wait until the sink has it all
            total = sum(sent.values())
            with trio.move_on_after(30):
                while sum(len(v) for v in received.values()) < total:
                    await trio.sleep(0.05)
            sink_scope.cancel()
    report["pipeline_sent"] = sum(sent.values())
    report["pipeline_received"] = sum(len(v) for v in received.values())
    report["pipeline_lost"] = sum(count - len(received.get(pid, ())) for pid, count in sent.items())


async def pubsub(endpoint: str, deadline: float, report: dict[str, int]) -> None:
    """SUB peers come and go (some slow); the PUB never blocks and drops for the full ones."""
    received = 0
    sent = 0
    async with trizmq.Pub(bind=endpoint, sndhwm=100) as pub:
        endpoint = pub.statistics()["bound"][0]

        async def subscriber(slow: bool) -> None:
            nonlocal received
            async with trizmq.Sub(connect=endpoint, subscribe=b"t", rcvhwm=100) as sub:
                with trio.move_on_after(random.uniform(0.2, 2.0)):
                    async for _msg in sub:
                        received += 1
                        if slow:
                            await trio.sleep(0.001)

        async def churn() -> None:
            async with trio.open_nursery() as nursery:
                while trio.current_time() < deadline:
                    nursery.start_soon(subscriber, random.random() < 0.3)
                    await trio.sleep(random.uniform(0.05, 0.3))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(churn)
            payload = b"x" * 64
            while trio.current_time() < deadline:
                for _ in range(100):
                    pub.send_multipart_nowait([b"t", payload])
                    sent += 1
                await trio.sleep(0)
        # deliveries and drops are per subscriber: one message reaches (or misses) many
        report["pubsub_published"] = sent
        report["pubsub_delivered"] = received
        report["pubsub_dropped_by_design"] = pub.statistics()["dropped"]


async def main(duration: float, transport: str) -> dict[str, int]:
    deadline = trio.current_time() + duration
    report: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if transport == "ipc":
            pipe_ep, pub_ep = f"ipc://{tmp}/pipe", f"ipc://{tmp}/pub"
        else:
            pipe_ep = pub_ep = "tcp://127.0.0.1:0"
        started = time.monotonic()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pipeline, pipe_ep, deadline, report)
            nursery.start_soon(pubsub, pub_ep, deadline, report)
        report["seconds"] = round(time.monotonic() - started)
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--transport", choices=["tcp", "ipc"], default="tcp")
    parser.add_argument("--json", type=Path, help="also write the report as JSON")
    args = parser.parse_args()
    result = trio.run(main, args.duration, args.transport)
    result["peak_rss_mib"] = round(peak_rss_mib())
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value:>12,}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    sys.exit(1 if result["pipeline_lost"] else 0)
