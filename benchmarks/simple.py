"""The simplest throughput check there is: PUSH/PULL over tcp, trizmq against pyzmq.

    python -m benchmarks.simple [--count 150000] [--size 64] [--repetitions 3]

Each side is a plain program of about twenty lines (below: ``tz_pull``/``tz_push``
and ``zmq_pull``/``zmq_push``), run as its own process: the PULL binds and prints
its port, the PUSH connects and sends ``count`` messages, the PULL times from the
first message to the last and prints the rate. The libraries alternate (trizmq,
pyzmq, trizmq, ...) and the medians are compared, as a check of ``python -m
benchmarks`` with nothing of its machinery (issue 19).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def tz_pull(count: int) -> None:
    import trio

    import trizmq

    async def main() -> None:
        async with trizmq.Pull(bind="tcp://127.0.0.1:0", rcvhwm=1000) as pull:
            print(pull.statistics()["bound"][0].rpartition(":")[2], flush=True)
            await pull.recv()
            t0 = time.perf_counter()
            for _ in range(count - 1):
                await pull.recv()
            print(f"{(count - 1) / (time.perf_counter() - t0):.0f}", flush=True)

    trio.run(main)


def tz_push(port: int, count: int, size: int) -> None:
    import trio

    import trizmq

    async def main() -> None:
        async with trizmq.Push(connect=f"tcp://127.0.0.1:{port}", sndhwm=1000) as push:
            payload = b"x" * size
            for _ in range(count):
                await push.send(payload)

    trio.run(main)


def zmq_pull(count: int) -> None:
    import zmq

    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = 1000
    print(pull.bind_to_random_port("tcp://127.0.0.1"), flush=True)
    pull.recv()
    t0 = time.perf_counter()
    for _ in range(count - 1):
        pull.recv()
    print(f"{(count - 1) / (time.perf_counter() - t0):.0f}", flush=True)
    pull.close()
    ctx.term()


def zmq_push(port: int, count: int, size: int) -> None:
    import zmq

    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = 1000
    push.connect(f"tcp://127.0.0.1:{port}")
    payload = b"x" * size
    for _ in range(count):
        push.send(payload)
    push.close(linger=-1)
    ctx.term()


def one_run(library: str, count: int, size: int) -> float:
    """Messages per second of one PUSH process to one PULL process of ``library``."""
    me = [sys.executable, __file__]
    pull = subprocess.Popen([*me, "pull", library, str(count)], stdout=subprocess.PIPE, text=True)
    assert pull.stdout is not None
    port = pull.stdout.readline().strip()
    push = subprocess.run([*me, "push", library, port, str(count), str(size)], timeout=300)
    rate = float(pull.stdout.readline())
    pull.wait(timeout=60)
    if push.returncode or pull.returncode:
        raise RuntimeError(f"{library}: a side failed ({push.returncode}, {pull.returncode})")
    return rate


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["pull"]:
        (tz_pull if args[1] == "trizmq" else zmq_pull)(int(args[2]))
        return 0
    if args[:1] == ["push"]:
        (tz_push if args[1] == "trizmq" else zmq_push)(int(args[2]), int(args[3]), int(args[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=150_000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repetitions", type=int, default=3)
    options = parser.parse_args(args)
    rates: dict[str, list[float]] = {"trizmq": [], "pyzmq": []}
    for _ in range(options.repetitions):
        for library in rates:
            rates[library].append(one_run(library, options.count, options.size))
    tz, zq = (statistics.median(rates[name]) for name in ("trizmq", "pyzmq"))
    print(f"PUSH/PULL tcp {options.size} B, {options.count} messages, medians of "
          f"{options.repetitions}: trizmq {tz:,.0f} msg/s, pyzmq {zq:,.0f} msg/s, "
          f"ratio {tz / zq:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
