"""The example of docs/testing.md, verbatim, so the page cannot rot."""

from __future__ import annotations

import trio

import trizmq


async def test_the_worker_reconnects_after_a_cut(autojump_clock, virtual_network, zmq_sockets):  # type: ignore[no-untyped-def]
    with trio.fail_after(60):  # virtual seconds
        pull = await zmq_sockets(trizmq.Pull, bind="tcp://127.0.0.1:5555")
        push = await zmq_sockets(trizmq.Push, connect="tcp://127.0.0.1:5555", reconnect_ivl=2.0)
        events = push.monitor()
        await push.send(b"before")
        assert await pull.recv() == b"before"

        virtual_network.cut("tcp://127.0.0.1:5555")  # both ends see a reset
        cut_at = trio.current_time()
        async for event in events:  # wait for the reconnection
            if isinstance(event, trizmq.HandshakeSucceeded) and trio.current_time() > cut_at:
                break
        assert 1.8 <= trio.current_time() - cut_at <= 2.2  # reconnect_ivl ± 10 % jitter
        await push.send(b"after")
        assert await pull.recv() == b"after"
