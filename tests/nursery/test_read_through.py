"""Read-through: a receiving task reads a peer's connection itself.

A task that would park in a receive, on a socket whose only peer (or, among
several, the peer its last message came from) is a live tcp/ipc connection with
nothing queued, waits on the connection's socket alongside the
reader (``ReadThrough`` in ``trizmq.nursery.fastpath.read_through``); once it does, the reader
stands by rather than racing it for every message. These tests check what must
hold whoever reads: every message arrives once and in order, another peer's message
or the socket closing still wakes the task, a cancelled receive hands the
connection back to the reader, and a peer that hangs up is noticed.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
import zmq

import trizmq
from trizmq.nursery.fastpath.read_through import ReadThrough

TRANSPORTS = ["tcp", "ipc"]

pytestmark = pytest.mark.fastpath


def bind_address(transport: str) -> str:
    return "tcp://127.0.0.1:0" if transport == "tcp" else "ipc://*"


def libzmq_push(endpoint: str) -> Any:
    ctx: Any = zmq.Context.instance()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.sndtimeo = 5000
    push.connect(endpoint)
    return push


def only_read_through(sock: trizmq.Socket) -> ReadThrough:
    fast: Any = sock._fast
    (read_through,) = fast.readers.values()
    assert read_through is not None
    return read_through  # type: ignore[no-any-return]


class Receiver:
    """A task that receives in a loop and hands each message on at once (its loop
    goes straight back to waiting, as a server's would)."""

    def __init__(self, sock: trizmq.Socket) -> None:
        self.sock = sock
        self.send_channel, self.channel = trio.open_memory_channel[bytes](math.inf)

    async def run(self) -> None:
        """Receive until the socket closes, then close the channel."""
        with self.send_channel:
            while True:
                try:
                    msg = await self.sock.recv()
                except trio.ClosedResourceError:
                    return
                self.send_channel.send_nowait(msg)


@asynccontextmanager
async def standing_by(
    transport: str, **options: Any
) -> AsyncIterator[tuple[trizmq.Pull, Any, Receiver]]:
    """A bound Pull with one libzmq Push and a :class:`Receiver` parked in
    read-through, after a message that made the reader stand by."""
    async with trizmq.Pull(**options) as pull, trio.open_nursery() as nursery:
        endpoint = await pull.bind(bind_address(transport))
        push = libzmq_push(endpoint)
        try:
            receiver = Receiver(pull)
            nursery.start_soon(receiver.run)
            # The first message may come with the handshake, before the task waits;
            # one that arrives while it waits wakes the reader too, which then finds
            # the task waiting again and steps off the socket. Two are enough on a
            # quiet machine; on a loaded one a message can still find the reader on
            # the socket (the task not back yet), so a few more are allowed.
            for _ in range(8):
                await trio.to_thread.run_sync(push.send, b"warm-up")
                assert await receiver.channel.receive() == b"warm-up"
                await trio.testing.wait_all_tasks_blocked()
                rt = only_read_through(pull)
                assert rt.waiting is not None
                if len(rt._reader) == 1:
                    break
            assert len(rt._reader) == 1
            assert pull.statistics()["receivers_waiting"] == 1
            yield pull, push, receiver
            nursery.cancel_scope.cancel()
        finally:
            push.close()


async def received_from_a_new_peer(pull: trizmq.Pull, receiver: Receiver, data: bytes) -> None:
    """A libzmq Push connects afresh and sends ``data``; the receiving task gets it."""
    push = libzmq_push(pull.statistics()["bound"][0])
    try:
        await trio.to_thread.run_sync(push.send, data)
        assert await receiver.channel.receive() == data
    finally:
        push.close()


class ReadSpy:
    """Counts the messages ReadThrough.read handed on (read by a receiving task)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.messages = 0
        real = ReadThrough.read

        def read(rt: ReadThrough) -> None:
            pipe = rt.peer.in_pipe
            before = len(pipe)
            real(rt)
            self.messages += len(pipe) - before

        monkeypatch.setattr(ReadThrough, "read", read)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_waiting_task_reads_while_the_reader_stands_by(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = ReadSpy(monkeypatch)
    with trio.fail_after(10):
        async with standing_by(transport) as (_pull, push, receiver):
            before = spy.messages
            await trio.to_thread.run_sync(push.send, b"second")
            assert await receiver.channel.receive() == b"second"
            # only the receiving task was on the socket: it read the message
            assert spy.messages == before + 1
            for i in range(200):
                await trio.to_thread.run_sync(push.send, b"%d" % i)
            assert [await receiver.channel.receive() for _ in range(200)] == [
                b"%d" % i for i in range(200)
            ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_another_peers_message_interrupts_the_wait(transport: str) -> None:
    with trio.fail_after(10):
        async with standing_by(transport) as (pull, _push, receiver):
            # a second peer: its message lands in its own queue, and the task
            # waiting on the first peer's socket must still get it
            await received_from_a_new_peer(pull, receiver, b"from the other")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_among_idle_peers_the_task_reads_the_busy_one(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several peers, a task that finds none ready waits on the connection of
    the peer its last messages came from, and reads it while that peer's reader
    stands by; a message from any other peer still ends the wait, and the task
    parks until one peer's messages come in a row again."""
    spy = ReadSpy(monkeypatch)
    with trio.fail_after(10):
        async with trizmq.Pull() as pull, trio.open_nursery() as nursery:
            endpoint = await pull.bind(bind_address(transport))
            pushes = [libzmq_push(endpoint) for _ in range(4)]
            try:
                receiver = Receiver(pull)
                nursery.start_soon(receiver.run)
                for i, push in enumerate(pushes):  # each greets: all four are connected
                    await trio.to_thread.run_sync(push.send, b"hello %d" % i)
                    assert await receiver.channel.receive() == b"hello %d" % i
                fast: Any = pull._fast
                assert len(fast.readers) == 4
                busy = pushes[0]
                for _ in range(3):  # as in standing_by, after one to see it stays busy
                    await trio.to_thread.run_sync(busy.send, b"warm-up")
                    assert await receiver.channel.receive() == b"warm-up"
                    await trio.testing.wait_all_tasks_blocked()
                    rt = fast.reading
                    if rt is not None and len(rt._reader) == 1:
                        break
                assert rt is not None and rt.waiting is not None and len(rt._reader) == 1
                before = spy.messages
                for i in range(50):
                    await trio.to_thread.run_sync(busy.send, b"%d" % i)
                    assert await receiver.channel.receive() == b"%d" % i
                    await trio.testing.wait_all_tasks_blocked()
                    assert fast.reading is rt
                # the task read every one of them itself
                assert spy.messages == before + 50
                await trio.to_thread.run_sync(pushes[2].send, b"from another")
                assert await receiver.channel.receive() == b"from another"
                await trio.testing.wait_all_tasks_blocked()
                assert fast.reading is None  # parked: the source changed
                for _ in range(2):
                    await trio.to_thread.run_sync(busy.send, b"busy again")
                    assert await receiver.channel.receive() == b"busy again"
                    await trio.testing.wait_all_tasks_blocked()
                assert fast.reading is rt and rt.waiting is not None
                nursery.cancel_scope.cancel()
            finally:
                for push in pushes:
                    push.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancelled_receive_hands_the_connection_back(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull:
            push = libzmq_push(await pull.bind(bind_address(transport)))
            try:
                await trio.to_thread.run_sync(push.send, b"first")
                assert await pull.recv() == b"first"
                with trio.move_on_after(0.05) as scope:
                    await pull.recv()
                assert scope.cancelled_caught
                rt = only_read_through(pull)
                assert rt.waiting is None
                assert pull.statistics()["receivers_waiting"] == 0
                # nobody receives now: the reader must be back on the socket, queueing
                for i in range(3):
                    await trio.to_thread.run_sync(push.send, b"%d" % i)
                while pull.statistics()["queued_in"] < 3:
                    await trio.sleep(0.001)  # bytes from another thread: nothing to await
                assert [pull.recv_nowait() for _ in range(3)] == [b"0", b"1", b"2"]
            finally:
                push.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_receiving_in_a_loop_never_wakes_the_reader(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task comes back to wait before trio next waits for I/O: the reader, owed
    a wake-up each time the task leaves a wait, is never woken for it."""
    stand_bys = 0
    real = ReadThrough.stand_by

    async def counting(rt: ReadThrough) -> None:
        nonlocal stand_bys
        stand_bys += 1
        await real(rt)

    monkeypatch.setattr(ReadThrough, "stand_by", counting)
    with trio.fail_after(10):
        async with standing_by(transport) as (pull, push, receiver):
            rt = only_read_through(pull)
            before = stand_bys
            for i in range(100):
                await trio.to_thread.run_sync(push.send, b"%d" % i)
                assert await receiver.channel.receive() == b"%d" % i
                await trio.testing.wait_all_tasks_blocked()
                assert rt.waiting is not None
            # the reader stood by throughout: it was never woken to step off again
            assert stand_bys == before
            assert len(rt._reader) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_that_goes_away_hands_the_connection_back(transport: str) -> None:
    """The task read a message through and then waits for something else: before
    trio sleeps, the reader is woken and reads what comes next into the queue."""
    with trio.fail_after(10):
        async with trizmq.Pull() as pull:
            push = libzmq_push(await pull.bind(bind_address(transport)))
            try:
                for _ in range(2):  # the second is read through by this task
                    await trio.to_thread.run_sync(push.send, b"warm-up")
                    assert await pull.recv() == b"warm-up"
                rt = only_read_through(pull)
                assert rt.waiting is None
                # this task now waits for something else, never in a receive
                for i in range(3):
                    await trio.to_thread.run_sync(push.send, b"%d" % i)
                while pull.statistics()["queued_in"] < 3:
                    await trio.sleep(0.001)  # bytes from another thread: nothing to await
                assert not rt.reader_wake_due
                assert [pull.recv_nowait() for _ in range(3)] == [b"0", b"1", b"2"]
            finally:
                push.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_peer_hanging_up_during_the_wait_is_noticed(transport: str) -> None:
    with trio.fail_after(10):
        async with standing_by(transport) as (pull, push, receiver), pull.monitor() as events:
            rt = only_read_through(pull)
            push.close()  # only the receiving task watches the socket: it sees the end
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    break
            assert rt.ended
            # the task still waits, now for any peer
            await received_from_a_new_peer(pull, receiver, b"after")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_closing_the_socket_wakes_the_waiting_task(transport: str) -> None:
    with trio.fail_after(10):
        async with standing_by(transport) as (pull, _push, receiver):
            await pull.aclose()
            # the receiving task woke with ClosedResourceError and closed its channel
            with pytest.raises(trio.EndOfChannel):
                await receiver.channel.receive()


async def test_tasks_sharing_one_peer_get_each_message_once() -> None:
    count = 400
    with trio.fail_after(20):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(connect=endpoint) as push:
                got: list[bytes] = []

                async def receive() -> None:
                    while True:
                        msg = await pull.recv()
                        if msg == b"end":
                            return
                        got.append(msg)

                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(receive)
                    for i in range(count):
                        await push.send(b"%d" % i)
                        if i % 7 == 0:
                            await trio.testing.wait_all_tasks_blocked()
                    for _ in range(3):
                        await push.send(b"end")
        assert sorted(got, key=int) == [b"%d" % i for i in range(count)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_with_heartbeats_the_task_keeps_the_clock(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With heartbeats on, the peer's PONGs reach a task standing in for the reader:
    the time of the last read must move on, or the heartbeat task would drop a peer
    that answers every PING."""
    reads = 0
    real_read = ReadThrough.read

    def counting(rt: ReadThrough) -> None:
        nonlocal reads
        reads += 1
        real_read(rt)

    monkeypatch.setattr(ReadThrough, "read", counting)
    with trio.fail_after(10):
        options = {"heartbeat_ivl": 0.05, "heartbeat_timeout": 0.4}
        async with (
            standing_by(transport, **options) as (pull, push, receiver),
            pull.monitor() as events,
        ):
            before = reads
            with trio.move_on_after(1.2):  # 24 PINGs, three timeouts' worth
                async for event in events:
                    assert not isinstance(event, trizmq.Disconnected), event
            # the PONGs were read by the waiting task, not the reader
            assert reads > before + 5
            await trio.to_thread.run_sync(push.send, b"still here")
            assert await receiver.channel.receive() == b"still here"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_encrypted_connection_read_by_the_task(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CURVE: the waiting task decrypts what it reads, as the reader would."""
    spy = ReadSpy(monkeypatch)
    server_public, server_secret = trizmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    ctx: Any = zmq.Context.instance()
    req = ctx.socket(zmq.REQ)
    rounds = 200
    try:
        req.linger = 0
        req.rcvtimeo = req.sndtimeo = 5000
        req.curve_serverkey = server_public
        req.curve_publickey = client_public
        req.curve_secretkey = client_secret
        with trio.fail_after(20):
            async with trizmq.Rep(security=trizmq.CurveServer(secret_key=server_secret)) as rep:
                req.connect(await rep.bind(bind_address(transport)))

                def client() -> None:
                    for i in range(rounds):
                        req.send(b"request %d" % i)
                        assert req.recv() == b"reply %d" % i

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trio.to_thread.run_sync, client)
                    for i in range(rounds):
                        assert await rep.recv() == b"request %d" % i
                        await rep.send(b"reply %d" % i)
    finally:
        req.close()
    # Once the reader stood by (after the first request or two), the waiting task
    # read and decrypted the requests itself. A request that lands while the task is
    # between its send and its next recv is read by the reader instead, which a
    # loaded machine makes more frequent (193 of 200 seen in a clean-clone run), so
    # this asserts the task read most of them, not all but a few: with read-through
    # broken for CURVE it reads none.
    assert spy.messages >= rounds // 2
