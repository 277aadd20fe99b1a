"""RADIO/DISH over udp: one RADIO broadcasts telemetry, several DISHes pick their groups.

    RADIO --connect--> udp://239.192.0.1:5600 (multicast) <--bind-- DISH temperature
      groups: temperature,                                 <--bind-- DISH pressure
              pressure, humidity                           <--bind-- DISH climate

One RADIO sends a reading on each of the groups ``temperature``, ``pressure`` and
``humidity`` every round (``--rate`` rounds a second). Each DISH binds the same
multicast address (the udp transport sets SO_REUSEPORT, so several dishes on one
host can share the port; the kernel gives each a copy of every datagram) and joins
its own groups; a DISH keeps only the groups it joined, whatever arrives. Each
prints what it receives, and the program ends with a summary: the messages sent per
group and, per dish, the messages received per group.

udp is lossy and has no connection: the RADIO cannot know who listens, a message
is one datagram, and what nobody receives is gone. The dishes bind before the
RADIO starts, so on one host they normally see everything.

The run stops after ``--count`` rounds or ``--duration`` seconds (forever if
neither is given), or at the first SIGINT (Ctrl-C) or SIGTERM, and exits with
status 0 in every case.

    python examples/radio_dish.py [--endpoint udp://239.192.0.1:5600] [--rate 10]
        [--count N | --duration S] [--quiet]
    python examples/radio_dish.py --unicast [--port 5600]   # one dish only

An endpoint may name the interface multicast uses, as in libzmq:
``udp://127.0.0.1;239.192.0.1:5600`` keeps the demo on the loopback interface.
With port 0 the first dish's bound port is used by the others and by the RADIO.
In unicast mode (``udp://127.0.0.1:PORT``) each datagram reaches one socket only,
so a single dish joins every group.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import random
import signal
import sys
import time
from collections import Counter

import trio

import trizmq

GROUPS = ("temperature", "pressure", "humidity")
#: multicast mode: dish name -> the groups it joins
MULTICAST_DISHES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "pressure": ("pressure",),
    "climate": ("temperature", "humidity"),
}
#: unicast mode: each datagram reaches one socket only
UNICAST_DISHES: dict[str, tuple[str, ...]] = {"everything": GROUPS}
#: how long the dishes keep listening after the last reading went out
DRAIN = 0.5


def is_multicast(endpoint: str) -> bool:
    """Whether a ``udp://[IFACE;]HOST:PORT`` endpoint names a multicast group."""
    address = endpoint.partition("://")[2].rpartition(";")[2]
    host = address.rpartition(":")[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def reading(group: str, n: int) -> bytes:
    """A made-up sensor value for ``group``: ``b"<sequence> <value>"``."""
    base, swing, unit = {
        "temperature": (21.0, 3.0, "C"),
        "pressure": (1013.0, 8.0, "hPa"),
        "humidity": (45.0, 10.0, "%"),
    }[group]
    value = base + swing * math.sin(n / 10) + random.uniform(-0.2, 0.2)
    return f"{n} {value:.2f} {unit}".encode()


async def dish(
    name: str,
    endpoint: str,
    groups: tuple[str, ...],
    received: Counter[str],
    quiet: bool,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Bind ``endpoint``, join ``groups``, print and count what arrives until cancelled."""
    async with trizmq.Dish() as sock:
        bound = await sock.bind(endpoint)
        for group in groups:
            sock.join(group)
        task_status.started(bound)
        try:
            while True:
                msg = await sock.recv_message()
                assert msg.group is not None
                group = msg.group.decode()
                received[group] += 1
                if not quiet:
                    print(f"  [{name}] {group}: {msg.data.decode()}")
        finally:
            stats = sock.statistics()
            bad = stats["datagrams_malformed"] + stats["datagrams_dropped"]
            if bad:
                print(f"  [{name}] {bad} datagrams malformed or dropped (queue full)")


async def radio(
    endpoint: str, rate: float, count: int | None, duration: float | None, sent: Counter[str]
) -> None:
    """Send one reading per group per round, ``rate`` rounds a second."""
    async with trizmq.Radio(connect=endpoint) as sock:
        started = trio.current_time()
        deadline = started + duration if duration is not None else math.inf
        n = 0
        while (count is None or n < count) and trio.current_time() < deadline:
            for group in GROUPS:
                await sock.send(reading(group, n), group=group)  # never blocks
                sent[group] += 1
            n += 1
            # pace on the clock, not on the loop, so the rate holds over time
            await trio.sleep_until(min(started + n / rate, deadline))


async def stop_on_signal(scope: trio.CancelScope) -> None:
    """Cancel ``scope`` at the first SIGINT or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            print(f"{signal.Signals(signum).name}: shutting down")
            scope.cancel()
            return


async def broadcast(
    endpoint: str,
    dishes: dict[str, tuple[str, ...]],
    rate: float,
    count: int | None,
    duration: float | None,
    quiet: bool,
    sent: Counter[str],
    received: dict[str, Counter[str]],
) -> None:
    """Bind every dish, then run the RADIO; stop the dishes once it is done."""
    async with trio.open_nursery() as nursery:
        for name, groups in dishes.items():
            # the first bind resolves a port of 0; the others share that port
            endpoint = await nursery.start(dish, name, endpoint, groups, received[name], quiet)
        print(f"{len(dishes)} dish(es) bound to {endpoint}; broadcasting at {rate:g} rounds/s")
        await radio(endpoint, rate, count, duration, sent)
        await trio.sleep(DRAIN)  # the last datagrams are still on their way
        nursery.cancel_scope.cancel()


async def main(args: argparse.Namespace) -> None:
    endpoint = args.endpoint or (
        f"udp://127.0.0.1:{args.port}" if args.unicast else f"udp://239.192.0.1:{args.port}"
    )
    dishes = MULTICAST_DISHES if is_multicast(endpoint) else UNICAST_DISHES
    sent: Counter[str] = Counter()
    received: dict[str, Counter[str]] = {name: Counter() for name in dishes}
    started = time.perf_counter()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_on_signal, nursery.cancel_scope)
            await broadcast(
                endpoint, dishes, args.rate, args.count, args.duration, args.quiet, sent, received
            )
            nursery.cancel_scope.cancel()  # done by itself: stop the signal task
    finally:
        elapsed = time.perf_counter() - started
        print(f"summary after {elapsed:.2f}s:")
        print(f"radio: sent {sum(sent.values())} ({tally(sent)})")
        for name, groups in dishes.items():
            counts = received[name]
            print(
                f"dish {name} [{','.join(sorted(groups))}]: "
                f"received {sum(counts.values())} ({tally(counts)})"
            )


def tally(counts: Counter[str]) -> str:
    return ", ".join(f"{group} {n}" for group, n in sorted(counts.items())) or "nothing"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--endpoint", help="udp://[IFACE;]HOST:PORT (default: multicast)")
    where.add_argument("--unicast", action="store_true", help="use udp://127.0.0.1:PORT, one dish")
    parser.add_argument("--port", type=int, default=5600, help="port of the default endpoint")
    parser.add_argument("--rate", type=float, default=10.0, help="rounds of readings a second")
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--count", type=int, help="stop after this many rounds")
    stop.add_argument("--duration", type=float, help="stop after this many seconds")
    parser.add_argument("--quiet", action="store_true", help="print the summary only")
    args = parser.parse_args()
    if args.rate <= 0:
        parser.error("--rate must be > 0")
    return args


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    trio.run(main, parse_args())
