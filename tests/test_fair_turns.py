"""When a socket's calls yield to the scheduler on their own.

A ``send`` or ``recv`` that did not wait yields once every ``YIELD_EVERY`` calls, so a
task that never waits cannot starve the others. A call that waited has given the
others their turn already: it starts the count again instead of adding to it. A
request-reply loop, where every receive waits, then never pays an extra scheduler
pass (on this VM that pass, every 64th round trip of each side, set the p99 of the
latency rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import trio

import trizmq
from trizmq._lifecycle import SocketLife
from trizmq._sending import YIELD_EVERY


@contextmanager
def counting_yields(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the calls of the periodic yield, on every socket."""
    calls = [0]
    original = SocketLife._yield_turn

    async def counted(self: SocketLife) -> None:
        calls[0] += 1
        await original(self)

    monkeypatch.setattr(SocketLife, "_yield_turn", counted)
    yield calls


@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_receives_that_wait_never_add_a_yield(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else "inproc://fair-turns"
    with counting_yields(monkeypatch) as calls, trio.fail_after(30):
        async with trizmq.Rep() as rep, trizmq.Req() as req:
            await req.connect(await rep.bind(endpoint))

            async def serve() -> None:
                for _ in range(4 * YIELD_EVERY):
                    await rep.send(await rep.recv())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve)
                for i in range(4 * YIELD_EVERY):
                    await req.send(b"%d" % i)
                    assert await req.recv() == b"%d" % i
    # each side's receive waits every time: 512 round trips, no extra pass
    assert calls[0] == 0


async def test_calls_that_never_wait_still_yield(monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_yields(monkeypatch) as calls, trio.fail_after(30):
        async with trizmq.Pull() as pull, trizmq.Push() as push:
            await push.connect(await pull.bind("inproc://fair-turns-flood"))
            count = 4 * YIELD_EVERY
            for i in range(count):
                push.send_nowait(b"%d" % i)  # all queued: no receive below waits
            calls[0] = 0
            for i in range(count):
                assert await pull.recv() == b"%d" % i
            assert calls[0] == count // YIELD_EVERY
