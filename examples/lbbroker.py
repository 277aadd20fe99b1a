"""The load-balancing broker from the ZeroMQ guide (chapter 3), on trio.

Clients are REQ sockets connected to the broker's *frontend*, a ROUTER; workers are
REQ sockets connected to its *backend*, another ROUTER. A worker starts by sending
``READY`` and then sends each reply as its next request, so the broker knows that
every message from a worker means "this worker is free again". The broker keeps a
queue of available workers and reads the frontend only while that queue is not
empty: a request goes to the worker that has waited longest, and nobody is sent
work it cannot take.

Frames at each hop (``c`` is a client's routing id, ``w`` a worker's)::

    client REQ   sends  [b"HELLO"]                 (REQ adds the b"" delimiter)
    frontend     gets   [c, b"", b"HELLO"]
    backend      sends  [w, b"", c, b"", b"HELLO"]
    worker REQ   gets   [c, b"", b"HELLO"]         (REQ strips w and b"")
    worker REQ   sends  [c, b"", b"OK from w"]
    backend      gets   [w, b"", c, b"", b"OK from w"]
    frontend     sends  [c, b"", b"OK from w"]
    client REQ   gets   [b"OK from w"]

Clients, workers and the broker are tasks of one trio program; it prints a summary,
and shuts down cleanly on Ctrl-C or SIGTERM (a signal receiver cancels the run,
every socket closes on the way out, and the program exits with status 0).

    python examples/lbbroker.py [--clients N] [--workers N] [--requests N]
                                [--transport tcp|ipc|inproc]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import tempfile
import time
from collections import Counter

import trio

import trizmq

READY = b"READY"


async def client_task(name: str, endpoint: str, requests: int, replies: Counter[str]) -> None:
    """A REQ client: send HELLO, wait for the answer, ``requests`` times."""
    async with trizmq.Req(routing_id=name.encode(), connect=endpoint) as req:
        for _ in range(requests):
            await req.send(b"HELLO")
            reply = await req.recv()
            assert reply.startswith(b"OK from "), reply
            replies[name] += 1


async def worker_task(name: str, endpoint: str, served: Counter[str]) -> None:
    """A REQ worker: announce READY, then answer every request it is given."""
    async with trizmq.Req(routing_id=name.encode(), connect=endpoint) as req:
        await req.send(READY)
        while True:
            client, empty, request = await req.recv_multipart()
            assert empty == b"" and request == b"HELLO"
            served[name] += 1
            await req.send_multipart([client, b"", b"OK from " + name.encode()])


async def broker(
    frontend_at: str,
    backend_at: str,
    task_status: trio.TaskStatus[tuple[str, str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Bind both ROUTERs, report their endpoints, and route until cancelled."""
    async with (
        trizmq.Router(bind=frontend_at) as frontend,
        trizmq.Router(bind=backend_at) as backend,
    ):
        # the queue of available workers: routing ids, oldest first
        available_in, available_out = trio.open_memory_channel[bytes](math.inf)
        task_status.started((frontend.statistics()["bound"][0], backend.statistics()["bound"][0]))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(route_requests, frontend, backend, available_out)
            await route_replies(backend, frontend, available_in)


async def route_requests(
    frontend: trizmq.Router,
    backend: trizmq.Router,
    available: trio.MemoryReceiveChannel[bytes],
) -> None:
    """Take a free worker first, then the next client request, and pair them."""
    async for worker in available:
        client, empty, request = await frontend.recv_multipart()
        assert empty == b""
        await backend.send_multipart([worker, b"", client, b"", request])


async def route_replies(
    backend: trizmq.Router,
    frontend: trizmq.Router,
    available: trio.MemorySendChannel[bytes],
) -> None:
    """Every worker message frees that worker; a reply also goes back to its client."""
    while True:
        worker, empty, *rest = await backend.recv_multipart()
        assert empty == b""
        available.send_nowait(worker)
        if rest != [READY]:
            client, empty, reply = rest
            await frontend.send_multipart([client, b"", reply])


def endpoints(transport: str, directory: str) -> tuple[str, str]:
    """The frontend and backend endpoints to bind."""
    if transport == "tcp":
        return "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"
    if transport == "ipc":
        return f"ipc://{directory}/frontend.ipc", f"ipc://{directory}/backend.ipc"
    tag = os.getpid()
    return f"inproc://frontend-{tag}", f"inproc://backend-{tag}"


async def load_balance(clients: int, workers: int, requests: int, transport: str) -> None:
    """The broker, the workers and the clients; prints a summary however the run ends."""
    replies: Counter[str] = Counter()
    served: Counter[str] = Counter()
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="lbbroker-") as directory:
            async with trio.open_nursery() as nursery:
                front, back = await nursery.start(broker, *endpoints(transport, directory))
                print(f"broker: clients connect to {front}, workers to {back}")
                for i in range(workers):
                    nursery.start_soon(worker_task, f"worker-{i}", back, served)
                async with trio.open_nursery() as client_nursery:
                    for i in range(clients):
                        client_nursery.start_soon(
                            client_task, f"client-{i}", front, requests, replies
                        )
                # every client has its answers: stop the broker and the workers
                nursery.cancel_scope.cancel()
    finally:
        total = clients * requests
        done = sum(replies.values())
        elapsed = time.perf_counter() - started
        outcome = "done" if done == total else "stopped"
        print(f"{outcome}: {done} of {total} replies in {elapsed:.2f}s")
        for i in range(workers):
            print(f"  {f'worker-{i}':<10} served {served[f'worker-{i}']:>6} requests")


async def main(clients: int, workers: int, requests: int, transport: str) -> None:
    """Run the broker until it finishes or a SIGINT/SIGTERM arrives."""
    async with trio.open_nursery() as nursery:
        await nursery.start(stop_on_signal, nursery.cancel_scope)
        await load_balance(clients, workers, requests, transport)
        nursery.cancel_scope.cancel()


async def stop_on_signal(
    scope: trio.CancelScope, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Cancel ``scope`` at the first SIGINT or SIGTERM (handled from ``started()`` on)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            print(f"{signal.Signals(signum).name}: shutting down")
            scope.cancel()
            return


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100, help="requests per client")
    parser.add_argument("--transport", choices=["tcp", "ipc", "inproc"], default="tcp")
    args = parser.parse_args()
    print(
        f"lbbroker: {args.clients} clients x {args.requests} requests, "
        f"{args.workers} workers, over {args.transport}"
    )
    trio.run(main, args.clients, args.workers, args.requests, args.transport)
