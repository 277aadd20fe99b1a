"""The pipeline pattern (30/PIPELINE): a ventilator, a pool of workers and a sink.

One trio program: the ventilator PUSHes tasks, the workers PULL them, compute,
and PUSH results to the sink, which PULLs and tallies them. One of the workers is
libzmq itself (pyzmq, in a thread), to show that trizmq and libzmq share the wire.
The program prints progress and a summary, and shuts down cleanly on Ctrl-C or
SIGTERM: a signal receiver cancels the whole run, every socket closes on the way
out, and the program exits with status 0.

    python examples/pipeline.py [--tasks N] [--workers N]
"""

from __future__ import annotations

import argparse
import signal
import struct
import threading
import time
from collections import Counter

import trio

import trizmq

TASK = struct.Struct("!I")
RESULT = struct.Struct("!IQ")
STOP = b"stop"


def work(n: int) -> int:
    """The 'computation': a sum of squares, small enough to be quick."""
    return sum(i * i for i in range(n % 200))


async def ventilator(endpoint: str, tasks: int, workers: int, ready: trio.Event) -> None:
    """Bind, wait for every worker to connect, then push the tasks round-robin."""
    async with trizmq.Push(bind=endpoint) as push:
        ready.set()
        while push.statistics()["live_peers"] < workers:
            await trio.sleep(0.01)
        for n in range(tasks):
            await push.send(TASK.pack(n))
        for _ in range(workers):
            await push.send(STOP)


async def trio_worker(name: str, source: str, sink: str) -> None:
    """A trizmq worker: PULL tasks, PUSH results."""
    async with trizmq.Pull(connect=source) as pull, trizmq.Push(connect=sink) as push:
        async for (task,) in pull:
            if task == STOP:
                break
            (n,) = TASK.unpack(task)
            await push.send_multipart([name.encode(), RESULT.pack(n, work(n))])


def libzmq_worker(name: str, source: str, sink: str, stop: threading.Event) -> None:
    """The same worker on pyzmq (libzmq), run in a thread."""
    import zmq

    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    push = ctx.socket(zmq.PUSH)
    pull.linger = push.linger = 1000
    pull.connect(source)
    push.connect(sink)
    try:
        while not stop.is_set():
            if not pull.poll(100):
                continue
            task = pull.recv()
            if task == STOP:
                break
            (n,) = TASK.unpack(task)
            push.send_multipart([name.encode(), RESULT.pack(n, work(n))])
    finally:
        pull.close()
        push.close()
        ctx.term()


async def run_libzmq_worker(source: str, sink: str, stop: threading.Event) -> None:
    """Run the libzmq worker thread; on cancellation tell it to stop and move on."""
    try:
        await trio.to_thread.run_sync(
            libzmq_worker, "libzmq", source, sink, stop, abandon_on_cancel=True
        )
    finally:
        stop.set()


async def sink(endpoint: str, tasks: int, per_worker: Counter[str], ready: trio.Event) -> None:
    """Collect every result into ``per_worker``; print progress every 10%."""
    async with trizmq.Pull(bind=endpoint) as pull:
        ready.set()
        step = max(tasks // 10, 1)
        for count in range(1, tasks + 1):
            worker, _result = await pull.recv_multipart()
            per_worker[worker.decode()] += 1
            if count % step == 0:
                print(f"  sink: {count:>7} / {tasks} results")


async def main(tasks: int, workers: int) -> None:
    """Run the pipeline until it finishes or a SIGINT/SIGTERM arrives."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stop_on_signal, nursery.cancel_scope)
        await pipeline(tasks, workers)
        nursery.cancel_scope.cancel()


async def stop_on_signal(scope: trio.CancelScope) -> None:
    """Cancel ``scope`` at the first SIGINT or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            print(f"{signal.Signals(signum).name}: shutting down")
            scope.cancel()
            return


async def pipeline(tasks: int, workers: int) -> None:
    """Sink, ventilator and workers; prints a summary however the run ends."""
    source = "tcp://127.0.0.1:5557"
    results = "tcp://127.0.0.1:5558"
    stop = threading.Event()
    per_worker: Counter[str] = Counter()
    started = time.perf_counter()
    try:
        async with trio.open_nursery() as nursery:
            sink_ready, vent_ready = trio.Event(), trio.Event()
            nursery.start_soon(sink, results, tasks, per_worker, sink_ready)
            await sink_ready.wait()
            nursery.start_soon(ventilator, source, tasks, workers + 1, vent_ready)
            await vent_ready.wait()
            for i in range(workers):
                nursery.start_soon(trio_worker, f"trizmq-{i}", source, results)
            nursery.start_soon(run_libzmq_worker, source, results, stop)
    finally:
        stop.set()
        done = sum(per_worker.values())
        elapsed = time.perf_counter() - started
        print(
            f"{'done' if done == tasks else 'stopped'}: {done} of {tasks} results in {elapsed:.2f}s"
        )
        for worker, count in sorted(per_worker.items()):
            print(f"  {worker:<10} {count:>7} tasks")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()
    print(f"pipeline: {args.tasks} tasks, {args.workers} trizmq workers + 1 libzmq worker")
    trio.run(main, args.tasks, args.workers)
