"""A publisher attacked with huge subscriptions, run as a script by tests: it measures
its own peak memory while the attack lasts.

    python subscription_victim.py TYPE TRANSPORT REFUSALS

It binds a ``TYPE`` (``PUB`` or ``XPUB``) socket on ``TRANSPORT`` (``tcp`` or ``ws``)
at 127.0.0.1, port 0, and prints the endpoint. Once a subscriber holds one
subscription (the warm-up: the connection and its buffers are in use by then) it
resets the kernel's mark of its peak resident memory (``VmHWM``, through
``/proc/self/clear_refs``) and prints ``ready``. Once ``REFUSALS`` subscriptions
were refused and a second one is held, it publishes ``b"news flash"`` and prints
one JSON line: ``peak`` (bytes of resident memory at the peak over the memory at
``ready``), the socket's statistics and, for an XPUB, the subscriptions it reported
to its application. EOF on stdin ends it. Linux only (``/proc``).
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import suppress
from typing import Any

import trio

import trizmq

POLL = 0.01


def resident() -> tuple[int, int]:
    """(current, peak) resident memory of this process, in bytes."""
    with open("/proc/self/status") as status:
        text = status.read()
    current = int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1))  # type: ignore[union-attr]
    peak = int(re.search(r"VmHWM:\s+(\d+) kB", text).group(1))  # type: ignore[union-attr]
    return current * 1024, peak * 1024


def reset_peak() -> None:
    """Start the peak mark afresh from the current resident memory (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


async def main() -> None:
    socket_type, transport, refusals = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kind = {"PUB": trizmq.Pub, "XPUB": trizmq.XPub}[socket_type]
    reported: list[bytes] = []
    async with kind() as pub:

        async def until(condition: Any) -> None:
            # the statistics have nothing to wait on: they are looked at. An XPUB's
            # reports are taken at the same time: one is queued as the subscription it
            # reports is counted, so none of those counted is missed
            while True:
                if socket_type == "XPUB":
                    with suppress(trio.WouldBlock):
                        while True:
                            reported.append(pub.recv_multipart_nowait()[0][:16])
                if condition():
                    return
                await trio.sleep(POLL)

        where = "ws://127.0.0.1:0/zmq" if transport == "ws" else "tcp://127.0.0.1:0"
        print(await pub.bind(where), flush=True)
        await until(lambda: pub.statistics()["subscriptions"] >= 1)
        reset_peak()
        base, _ = resident()
        print("ready", flush=True)
        await until(
            lambda: (
                pub.statistics()["subscriptions_refused"] >= refusals
                and pub.statistics()["subscriptions"] >= 2
            )
        )
        await pub.send(b"news flash")
        _, peak = resident()
        stats = pub.statistics()
        report = {
            "peak": peak - base,
            "base": base,
            "stats": {name: stats[name] for name in ("peers", "live_peers", "subscriptions")},
            "refused": stats["subscriptions_refused"],
            "reported": [topic.decode("latin-1") for topic in reported],
        }
        print(json.dumps(report), flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)  # until EOF


if __name__ == "__main__":
    trio.run(main)
