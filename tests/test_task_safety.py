"""The "thread-safe" draft family in trio terms: many tasks, and other threads, on ONE socket.

RFCs 41/48/49 require these sockets to be usable from many threads at once, every
send and receive moving one whole message. Here 20 trio tasks send on one socket
while 20 others receive on one socket (and worker threads join in through
``trio.from_thread.run``); every message must arrive exactly once and intact,
never interleaved with another. Messages are large enough (up to ~70 kB) to span
many tcp reads and writes.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio

import trizmq

TASKS = 20
PER_TASK = 10
THREADS = 4
PER_THREAD = 10

_NAMES = itertools.count()


def make(origin: str, seq: int) -> bytes:
    """A self-checking message: header, a body sized by its content, and a digest."""
    header = f"{origin}:{seq}:".encode()
    size = (int.from_bytes(hashlib.sha256(header).digest()[:2], "big") % 70_000) + 1
    body = (header * (size // len(header) + 1))[:size]
    return header + body + hashlib.sha256(header + body).digest()


def check(data: bytes) -> str:
    """The ``origin:seq`` of an intact message; AssertionError if it was cut or mixed."""
    origin, seq, _rest = data.split(b":", 2)
    key = f"{origin.decode()}:{int(seq)}"
    assert data == make(origin.decode(), int(seq)), f"message {key} corrupted"
    return key


@dataclass
class Link:
    """One sending socket, one receiving socket, and how to use them."""

    sender: trizmq.Socket
    receiver: trizmq.Socket
    send: Callable[[bytes], Awaitable[None]]
    recv: Callable[[], Awaitable[bytes]]


@asynccontextmanager
async def open_link(kind: str, transport: str) -> AsyncIterator[Link]:
    endpoint = f"inproc://safety-{next(_NAMES)}" if transport == "inproc" else "tcp://127.0.0.1:0"
    # unbounded queues: RADIO and DISH drop when full, which this test is not about
    if kind == "radio-dish":
        async with trizmq.Radio(sndhwm=0) as radio, trizmq.Dish(rcvhwm=0) as dish:
            dish.join(b"g")
            await dish.connect(await radio.bind(endpoint))
            while True:  # JOIN is not awaitable: probe
                await radio.send(b"probe", group=b"g")
                with trio.move_on_after(0.02):
                    await dish.recv()
                    break
            await radio.send(b"end", group=b"g")
            while await dish.recv() != b"end":
                pass
            yield Link(radio, dish, functools.partial(radio.send, group=b"g"), dish.recv)
        return
    if kind == "scatter-gather":
        async with trizmq.Gather(sndhwm=0, rcvhwm=0) as gather, trizmq.Scatter() as scatter:
            await scatter.connect(await gather.bind(endpoint))
            yield Link(scatter, gather, scatter.send, gather.recv)
        return
    async with trizmq.Server() as server, trizmq.Client() as client:
        await client.connect(await server.bind(endpoint))
        if kind == "client-server":
            yield Link(client, server, client.send, server.recv)
            return
        await client.send(b"hello")
        rid = (await server.recv_message()).routing_id
        assert rid is not None
        yield Link(server, client, functools.partial(server.send, routing_id=rid), client.recv)


KINDS = ["client-server", "server-client", "scatter-gather", "radio-dish"]


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
@pytest.mark.parametrize("kind", KINDS)
async def test_many_tasks_on_one_socket(kind: str, transport: str) -> None:
    with trio.fail_after(20):
        received: Counter[str] = Counter()
        async with open_link(kind, transport) as link:

            async def sender(task: int) -> None:
                for seq in range(PER_TASK):
                    await link.send(make(f"t{task}", seq))

            async def receiver() -> None:
                for _ in range(PER_TASK):
                    received[check(await link.recv())] += 1

            async with trio.open_nursery() as nursery:
                for _ in range(TASKS):
                    nursery.start_soon(receiver)
                for task in range(TASKS):
                    nursery.start_soon(sender, task)
        wanted = {f"t{t}:{s}" for t in range(TASKS) for s in range(PER_TASK)}
        assert set(received) == wanted
        assert set(received.values()) == {1}


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
@pytest.mark.parametrize("kind", KINDS)
async def test_threads_and_tasks_share_one_socket(kind: str, transport: str) -> None:
    with trio.fail_after(20):
        received: Counter[str] = Counter()
        async with open_link(kind, transport) as link:

            def thread_sender(thread: int) -> None:
                for seq in range(PER_THREAD):
                    trio.from_thread.run(link.send, make(f"th{thread}", seq))

            def thread_receiver() -> list[str]:
                return [check(trio.from_thread.run(link.recv)) for _ in range(PER_THREAD)]

            async def in_thread(fn: Callable[..., Any], *args: Any) -> None:
                result = await trio.to_thread.run_sync(fn, *args)
                if result is not None:
                    received.update(result)

            async def sender(task: int) -> None:
                for seq in range(PER_TASK):
                    await link.send(make(f"t{task}", seq))

            async def receiver() -> None:
                for _ in range(PER_TASK):
                    received[check(await link.recv())] += 1

            async with trio.open_nursery() as nursery:
                for _ in range(THREADS):
                    nursery.start_soon(in_thread, thread_receiver)
                for _ in range(TASKS):
                    nursery.start_soon(receiver)
                for thread in range(THREADS):
                    nursery.start_soon(in_thread, thread_sender, thread)
                for task in range(TASKS):
                    nursery.start_soon(sender, task)
        wanted = {f"t{t}:{s}" for t in range(TASKS) for s in range(PER_TASK)}
        wanted |= {f"th{t}:{s}" for t in range(THREADS) for s in range(PER_THREAD)}
        assert set(received) == wanted
        assert set(received.values()) == {1}


async def test_blocked_senders_and_receivers_all_complete() -> None:
    """Tasks parked on a full queue and on an empty one all wake up, none twice."""
    with trio.fail_after(10):
        async with trizmq.Gather(rcvhwm=1) as gather, trizmq.Scatter(sndhwm=1) as scatter:
            await scatter.connect(await gather.bind(f"inproc://safety-{next(_NAMES)}"))
            got: list[str] = []

            async def receiver() -> None:
                got.append(check(await gather.recv()))

            async with trio.open_nursery() as nursery:
                for task in range(TASKS):
                    nursery.start_soon(scatter.send, make(f"t{task}", 0))
                await trio.testing.wait_all_tasks_blocked()
                for _ in range(TASKS):
                    nursery.start_soon(receiver)
            assert sorted(got) == sorted(f"t{t}:0" for t in range(TASKS))


async def test_cancelled_receivers_never_swallow_a_message() -> None:
    with trio.fail_after(10):
        async with trizmq.Dish() as dish, trizmq.Radio() as radio:
            dish.join(b"g")
            await radio.connect(await dish.bind(f"inproc://safety-{next(_NAMES)}"))
            got: list[bytes] = []

            async def receiver(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
                with trio.CancelScope() as scope:
                    task_status.started(scope)
                    got.append(await dish.recv())

            async with trio.open_nursery() as nursery:
                scopes = [await nursery.start(receiver) for _ in range(TASKS)]
                await trio.testing.wait_all_tasks_blocked()
                for scope in scopes[::2]:
                    scope.cancel()
                await trio.testing.wait_all_tasks_blocked()
                for i in range(TASKS // 2):
                    await radio.send(b"%d" % i, group=b"g")
            assert sorted(got) == sorted(b"%d" % i for i in range(TASKS // 2))


@pytest.mark.parametrize("kind", ["server-client", "radio-dish"])
async def test_close_wakes_every_blocked_task_and_thread(kind: str) -> None:
    with trio.fail_after(10):
        outcomes: list[str] = []
        async with open_link(kind, "tcp") as link:

            async def receiver() -> None:
                try:
                    await link.recv()
                except trio.ClosedResourceError:
                    outcomes.append("task")

            def thread_receiver() -> None:
                try:
                    trio.from_thread.run(link.recv)
                except trio.ClosedResourceError:
                    outcomes.append("thread")

            async with trio.open_nursery() as nursery:
                for _ in range(TASKS):
                    nursery.start_soon(receiver)
                for _ in range(THREADS):
                    nursery.start_soon(trio.to_thread.run_sync, thread_receiver)
                while link.receiver.statistics()["receivers_waiting"] < TASKS + THREADS:
                    await trio.sleep(0.001)  # threads are not awaitable until they park
                await link.receiver.aclose()
        assert sorted(outcomes) == ["task"] * TASKS + ["thread"] * THREADS


async def test_full_server_queue_blocks_then_resumes() -> None:
    with trio.fail_after(10):
        async with trizmq.Server(sndhwm=1) as server, trizmq.Client(rcvhwm=1) as client:
            await client.connect(await server.bind(f"inproc://safety-{next(_NAMES)}"))
            await client.send(b"hello")
            rid = (await server.recv_message()).routing_id
            assert rid is not None
            sent = 0
            while True:
                try:
                    server.send_nowait(make("s", sent), routing_id=rid)
                except trio.WouldBlock:
                    break
                sent += 1
            assert sent >= 1
            async with trio.open_nursery() as nursery:
                for task in range(TASKS):
                    nursery.start_soon(
                        functools.partial(server.send, make("t", task), routing_id=rid)
                    )
                await trio.testing.wait_all_tasks_blocked()
                got = [check(await client.recv()) for _ in range(sent + TASKS)]
            assert sorted(got) == sorted(
                [f"s:{i}" for i in range(sent)] + [f"t:{i}" for i in range(TASKS)]
            )
