"""CPU time per message, both ends in one process: what a change of the hot paths costs.

    python -m benchmarks.cpu                          # every case, this tree
    python -m benchmarks.cpu --compare /tmp/before    # that tree against this one
    python -m benchmarks.cpu --only reqrep --rounds 10 --compare /tmp/before

Throughput over two busy cores, shared with other work, moves by ±10 % from one run
to the next; a change of a few percent does not show there. This measures instead
the CPU time (``time.process_time``) each message costs with both sockets in one
trio run, the best of ``--runs`` runs (interference only ever adds time), and with
``--compare`` the two source trees interleaved, round by round, in fresh processes
(``--tree`` puts a tree first on ``sys.path``; make the other with ``git worktree``).
Each ratio is printed from the best and from the median of the rounds.

Cases: PUSH/PULL inproc 64 B, tcp 16 B, 64 B, 300 B, 4 KiB, ipc 300 B; a PUB with 1
and 4 SUBs (tcp, 64 B); REQ/REP and DEALER/ROUTER round trips (tcp, 64 B); a CURVE
REQ/REP round trip (64 B); CURVE PUSH/PULL 64 B and 4 KiB; a pyzmq PUSH (another
process) into a trizmq PULL (the PULL's CPU only).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

CASES = [
    "inproc64",
    "tcp16",
    "tcp64",
    "tcp300",
    "tcp4k",
    "ipc300",
    "pub1",
    "pub4",
    "reqrep",
    "dealerrouter",
    "curvereqrep",
    "curve64",
    "curve4k",
    "libzmq2trizmq",
]

LIBZMQ_PUSH = """
import sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.PUSH); s.connect(sys.argv[1])
p = b"x" * 64
for _ in range(int(sys.argv[2]) + 1):
    s.send(p)
s.close(linger=-1); ctx.term()
"""


def measure(case: str, n: int) -> float:
    """Nanoseconds of CPU a message (a round trip, for the round-trip cases)."""
    import trio

    import trizmq

    async def pushpull(endpoint: str, size: int, **security: Any) -> float:
        async with (
            trizmq.Pull(**security.get("server", {})) as pull,
            trizmq.Push(**security.get("client", {})) as push,
        ):
            await push.connect(await pull.bind(endpoint))
            payload = b"x" * size
            await push.send(payload)
            await pull.recv()

            async def send() -> None:
                for _ in range(n):
                    await push.send(payload)

            start = time.process_time()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send)
                for _ in range(n):
                    await pull.recv()
            return (time.process_time() - start) / n * 1e9

    async def pubsub(subscribers: int) -> float:
        async with trizmq.Pub(sndhwm=0) as pub, contextlib.AsyncExitStack() as stack:
            endpoint = await pub.bind("tcp://127.0.0.1:0")
            subs = [
                await stack.enter_async_context(
                    trizmq.Sub(connect=endpoint, subscribe=b"", rcvhwm=0)
                )
                for _ in range(subscribers)
            ]
            while pub.statistics()["subscriptions"] < subscribers:
                await trio.sleep(0.01)
            payload = b"x" * 64

            async def drain(sub: trizmq.Sub) -> None:
                for _ in range(n):
                    await sub.recv()

            start = time.process_time()
            async with trio.open_nursery() as nursery:
                for sub in subs:
                    nursery.start_soon(drain, sub)
                for _ in range(n):
                    await pub.send(payload)
            return (time.process_time() - start) / n * 1e9

    def curve_pair() -> dict[str, dict[str, Any]]:
        server_public, server_secret = trizmq.curve_keypair()
        public, secret = trizmq.curve_keypair()
        return {
            "server": {"security": trizmq.CurveServer(secret_key=server_secret)},
            "client": {
                "security": trizmq.CurveClient(
                    server_key=server_public, public_key=public, secret_key=secret
                )
            },
        }

    async def roundtrip(kind: str, **security: dict[str, Any]) -> float:
        served, sent = security.get("server", {}), security.get("client", {})
        server = trizmq.Rep(**served) if kind == "reqrep" else trizmq.Router(**served)
        client = trizmq.Req(**sent) if kind == "reqrep" else trizmq.Dealer(**sent)
        count = max(1, n // 10)
        async with server, client:
            await client.connect(await server.bind("tcp://127.0.0.1:0"))
            payload = b"x" * 64

            async def serve() -> None:
                for _ in range(count + 1):
                    await server.send_multipart(await server.recv_multipart())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                await client.send(payload)
                await client.recv()
                start = time.process_time()
                for _ in range(count):
                    await client.send(payload)
                    await client.recv()
                return (time.process_time() - start) / count * 1e9

    async def curve(size: int) -> float:
        return await pushpull("tcp://127.0.0.1:0", size, **curve_pair())

    async def from_libzmq() -> float:
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-c", LIBZMQ_PUSH, endpoint, str(n)]
            )
            await pull.recv()
            start = time.process_time()
            for _ in range(n):
                await pull.recv()
            took = (time.process_time() - start) / n * 1e9
            await proc.wait()
            return took

    with tempfile.TemporaryDirectory() as tmp:
        runs: dict[str, Callable[[], Awaitable[float]]] = {
            "inproc64": lambda: pushpull("inproc://cpu", 64),
            "tcp16": lambda: pushpull("tcp://127.0.0.1:0", 16),
            "tcp64": lambda: pushpull("tcp://127.0.0.1:0", 64),
            "tcp300": lambda: pushpull("tcp://127.0.0.1:0", 300),
            "tcp4k": lambda: pushpull("tcp://127.0.0.1:0", 4096),
            "ipc300": lambda: pushpull(f"ipc://{tmp}/cpu.ipc", 300),
            "pub1": lambda: pubsub(1),
            "pub4": lambda: pubsub(4),
            "reqrep": lambda: roundtrip("reqrep"),
            "dealerrouter": lambda: roundtrip("dealerrouter"),
            "curvereqrep": lambda: roundtrip("reqrep", **curve_pair()),
            "curve64": lambda: curve(64),
            "curve4k": lambda: curve(4096),
            "libzmq2trizmq": from_libzmq,
        }
        return trio.run(runs[case])


def run_in(tree: str | None, case: str, n: int, runs: int) -> float | None:
    """The best of ``runs`` measurements of ``case`` in a fresh process, with ``tree``
    first on ``sys.path`` (this tree if None); None if it failed."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = [sys.executable, "-m", "benchmarks.cpu", "--run", case, "-n", str(n)]
    argv += ["--runs", str(runs), "--tree", tree or here]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=here, timeout=900)
    try:
        return float(done.stdout.split()[-1])
    except (IndexError, ValueError):
        sys.stderr.write(done.stderr[-2000:])
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="TREE", help="a source tree to compare with")
    parser.add_argument("--only", action="append", help="cases whose name contains this")
    parser.add_argument("--rounds", type=int, default=6, help="rounds with --compare")
    parser.add_argument("--runs", type=int, default=5, help="runs a measurement is the best of")
    parser.add_argument("-n", type=int, default=100_000, help="messages a run")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        sys.path.insert(0, os.path.abspath(args.tree))  # its trizmq, before this tree's
        import trizmq

        assert trizmq.__file__.startswith(os.path.abspath(args.tree)), trizmq.__file__
        print(f"{min(measure(args.run, args.n) for _ in range(args.runs)):.1f}")
        return 0
    cases = [c for c in CASES if not args.only or any(o in c for o in args.only)]
    if not args.compare:
        for case in cases:
            print(f"{case:14s} {run_in(None, case, args.n, args.runs)} ns", flush=True)
        return 0
    seen: dict[str, dict[str, list[float]]] = {}
    for round_ in range(args.rounds):
        for case in cases:
            sides = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
            for side in sides:
                tree = args.compare if side == "before" else None
                value = run_in(tree, case, args.n, args.runs)
                if value is not None:
                    seen.setdefault(case, {}).setdefault(side, []).append(value)
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    print("| case | before, ns | after, ns | ratio (median of rounds) | ratio (best) |")
    print("|---|---|---|---|---|")
    for case, sides in seen.items():
        before, after = sides.get("before", []), sides.get("after", [])
        if not before or not after:
            continue
        median_b, median_a = statistics.median(before), statistics.median(after)
        print(
            f"| {case} | {median_b:.0f} | {median_a:.0f} | {median_a / median_b:.3f} "
            f"| {min(after) / min(before):.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
