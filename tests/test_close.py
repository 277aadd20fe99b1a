"""A close that an enclosing cancellation always cuts short (trio's rule for aclose).

``linger`` bounds how long a close flushes; ``linger=None`` waits until every queued
message is written. Whatever the linger, a cancellation around the ``async with``
(or the ``aclose``) abandons the flush: the socket still closes at once, every task
and descriptor released, and the cancellation goes on as itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import trizmq
from trizmq.testing import open_virtual_network


def all_tasks() -> list[trio.lowlevel.Task]:
    """Every task of the current run."""
    found: list[trio.lowlevel.Task] = []

    def walk(task: trio.lowlevel.Task) -> None:
        found.append(task)
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                walk(child)

    walk(trio.lowlevel.current_root_task())
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))





def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


QUIET_PULL = """
import sys, zmq
ctx = zmq.Context()
pull = ctx.socket(zmq.PULL)
pull.rcvhwm = 1
pull.setsockopt(zmq.RCVBUF, 4096)
port = pull.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
sys.stdin.read()  # never reads a message; ends when the test closes stdin
"""


@pytest.fixture
def quiet_libzmq_pull() -> Iterator[str]:
    """A libzmq PULL in another process (its descriptors are not ours to count) that
    is bound but never reads, with a tiny receive queue."""
    proc = subprocess.Popen(
        [sys.executable, "-c", QUIET_PULL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"tcp://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize("forever", [None, -1])
async def test_cancel_scope_cuts_a_forever_linger_short(
    autojump_clock: Any, forever: int | None
) -> None:
    """linger=None (or libzmq's -1) and a message nobody can take: leaving ``async with``
    inside ``move_on_after(2)`` returns at 2 s, closed, with no task left behind."""
    async with open_virtual_network():
        before = len(all_tasks())
        with trio.fail_after(60):
            start = trio.current_time()
            with trio.move_on_after(2) as scope:
                async with trizmq.Push(connect="tcp://127.0.0.1:5555", linger=forever) as push:
                    push.send_nowait(b"never delivered")
            assert scope.cancelled_caught
            assert trio.current_time() - start == pytest.approx(2)
            assert push.closed
            with pytest.raises(trio.ClosedResourceError):
                await push.send(b"after")
        assert len(all_tasks()) == before


async def test_cancelled_aclose_still_closes(autojump_clock: Any) -> None:
    async with open_virtual_network():
        before = len(all_tasks())
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                push = trizmq.Push(connect="tcp://127.0.0.1:5555", linger=None)

                async def own_it(task_status: trio.TaskStatus[None]) -> None:
                    async with push:
                        push.send_nowait(b"stuck")
                        task_status.started()
                        await trio.sleep_forever()

                await nursery.start(own_it)
                with trio.move_on_after(1) as scope:
                    await push.aclose()
                assert scope.cancelled_caught
                assert push.closed
                nursery.cancel_scope.cancel()
        assert len(all_tasks()) == before


async def test_a_long_linger_is_abandoned_when_cancelled(autojump_clock: Any) -> None:
    async with open_virtual_network():
        with trio.fail_after(60):
            start = trio.current_time()
            with trio.move_on_after(1) as scope:
                async with trizmq.Push(connect="tcp://127.0.0.1:5555", linger=10) as push:
                    push.send_nowait(b"stuck")
            assert scope.cancelled_caught
            assert trio.current_time() - start == pytest.approx(1)


async def test_an_uncancelled_forever_linger_delivers_everything(autojump_clock: Any) -> None:
    """With nothing cancelling it, linger=None waits: a peer that appears late gets
    every message queued before the close."""
    async with open_virtual_network():
        with trio.fail_after(600):
            async with trio.open_nursery() as nursery:
                closed = trio.Event()

                async def sender() -> None:
                    async with trizmq.Push(connect="tcp://127.0.0.1:5556", linger=None) as push:
                        for i in range(50):
                            push.send_nowait(b"%d" % i)
                    closed.set()

                nursery.start_soon(sender)
                await trio.sleep(100)  # the close has been waiting all this time
                assert not closed.is_set()
                async with trizmq.Pull(bind="tcp://127.0.0.1:5556") as pull:
                    got = [await pull.recv() for _ in range(50)]
                    await closed.wait()
        assert got == [b"%d" % i for i in range(50)]


async def test_a_second_closer_is_released_by_the_cancelled_first(autojump_clock: Any) -> None:
    async with open_virtual_network():
        with trio.fail_after(60):
            push = trizmq.Push(connect="tcp://127.0.0.1:5555", linger=None)
            second_done = trio.Event()
            async with trio.open_nursery() as nursery:

                async def own_it(task_status: trio.TaskStatus[None]) -> None:
                    with trio.move_on_after(3):
                        async with push:
                            push.send_nowait(b"stuck")
                            task_status.started()
                    # the owner's close was cut short here

                async def second() -> None:
                    await push.aclose()
                    second_done.set()

                await nursery.start(own_it)
                nursery.start_soon(second)
            assert second_done.is_set()
            assert push.closed


async def test_cancelled_close_releases_every_descriptor_with_libzmq(
    quiet_libzmq_pull: str, tmp_path: Path
) -> None:
    """Real sockets: a PUSH whose libzmq peer never reads and whose queue is full,
    with linger=None, closed inside a cancel scope: the scope ends it, the bound
    tcp port and ipc file are released, and no descriptor stays open."""
    endpoint = quiet_libzmq_pull
    ipc = tmp_path / "push.ipc"
    port = unused_port()
    before = open_fds()
    with trio.fail_after(30):
        with trio.move_on_after(1) as scope:
            async with trizmq.Push(
                connect=endpoint,
                bind=[f"tcp://127.0.0.1:{port}", f"ipc://{ipc}"],
                linger=None,
                sndhwm=10,
            ) as push:
                payload = b"x" * 100_000
                # fill the peer, the kernel buffers and our queue
                with trio.move_on_after(0.5):
                    while True:
                        await push.send(payload)
                assert push.statistics()["queued_out"] > 0
        assert scope.cancelled_caught
        assert not ipc.exists()
        async with trizmq.Pull(bind=f"tcp://127.0.0.1:{port}"):
            pass  # the port is free again
    assert open_fds() <= before
