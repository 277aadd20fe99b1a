"""The runtime's direct socket calls: write-through, raw reads and writes, big frames.

The reader and writer of a tcp/ipc connection call ``recv``/``send`` on a duplicate
of the stream's descriptor (``trizmq.nursery.fastpath``), an idle writer lets the
sending task write a message itself, and frames of 64 KiB or more are written from
the caller's object. These tests check what that must never change: every message
arrives whole and in order whatever the kernel accepts, no descriptor leaks, and a
flooded reader still lets other tasks run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
import trio.testing
import zmq

import trizmq
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.direct_io import RawSocket
from trizmq.nursery.fastpath.socket_state import FastPath
from trizmq.nursery.fastpath.write_through import RawOutput
from trizmq.nursery.peers import Peer
from trizmq.nursery.pipe import Pipe
from trizmq.nursery.waiters import Waiters
from trizmq.nursery.writer import run_writer
from trizmq.patterns.routing import FairQueue
from trizmq.zmtp.outbound import Outbound
from trizmq.zmtp.queue_items import Unsent

TRANSPORTS = ["tcp", "ipc"]


def bind_address(transport: str) -> str:
    return "tcp://127.0.0.1:0" if transport == "tcp" else "ipc://*"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def libzmq_pull(
    transport: str, mechanism: str, tmp_path: Any, rcvhwm: int = 1000
) -> Iterator[tuple[zmq.Socket[bytes], str, dict[str, Any]]]:
    """A bound libzmq PULL, a server of ``mechanism``: it, its endpoint and the options
    a trizmq sender needs to connect to it."""
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = rcvhwm
    pull.rcvtimeo = 20_000  # a receive that never comes fails, it does not hang
    pull.linger = 0
    security: dict[str, Any] = {}
    if mechanism == "curve":
        public, secret = zmq.curve_keypair()
        pull.curve_server = True
        pull.curve_secretkey = secret
        mine, my_secret = trizmq.curve_keypair()
        security["security"] = trizmq.CurveClient(
            server_key=public, public_key=mine, secret_key=my_secret
        )
    try:
        if transport == "tcp":
            port = pull.bind_to_random_port("tcp://127.0.0.1")
            endpoint = f"tcp://127.0.0.1:{port}"
        else:
            endpoint = f"ipc://{tmp_path}/pull.ipc"
            pull.bind(endpoint)
        yield pull, endpoint, security
    finally:
        pull.close()
        ctx.term()


@pytest.mark.fastpath
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_write_through_under_back_pressure_keeps_messages_whole(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sends that alternate with yields (the write-through path) into a kernel buffer
    that fills up: partial direct writes leave the rest of their message to the
    writer, and the receiver gets every byte in order."""
    # under BIG_FRAME: each send is written by the sending task until the kernel
    # buffer is full, so the one that does not fit is cut short
    sizes = [1, 300, 20_000, 60_000, 65_535]
    messages = [bytes([i % 251]) * sizes[i % len(sizes)] for i in range(400)]
    partial = deferred = 0
    real_write_now = RawOutput.write_now

    def counting(output: RawOutput) -> bool:
        nonlocal partial, deferred
        pipe = output.actor.peer.out_pipe
        written = real_write_now(output)
        if not written:
            deferred += 1
            if pipe and pipe.peek().__class__ is Unsent:
                partial += 1
        return written

    monkeypatch.setattr(RawOutput, "write_now", counting)
    with trio.fail_after(30):
        async with trizmq.Pull(rcvhwm=5) as pull:
            endpoint = await pull.bind(bind_address(transport))
            async with trizmq.Push(connect=endpoint, sndhwm=1000) as push:
                await push.send(b"hello")
                assert await pull.recv() == b"hello"
                for message in messages:
                    # as after a wait of the socket: the next send may write through
                    push._fast.waited()  # type: ignore[union-attr]
                    await push.send(message)
                    await trio.sleep(0)
                for expected in messages:
                    got = await pull.recv()
                    assert len(got) == len(expected) and got == expected
    # the kernel buffer filled while the puller did not read: a direct write was
    # refused or (tcp, which takes what fits) cut short, and the writer took over
    assert deferred > 0
    if transport == "tcp":
        assert partial > 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_request_reply_alternation_against_libzmq(transport: str) -> None:
    """Strict alternation is the write-through path's home: 2000 round trips with a
    libzmq REP, every reply matching its request."""
    ctx: Any = zmq.Context.instance()
    rep = ctx.socket(zmq.REP)
    rep.linger = 0
    try:
        if transport == "tcp":
            port = rep.bind_to_random_port("tcp://127.0.0.1")
            endpoint = f"tcp://127.0.0.1:{port}"
        else:
            rep.bind("ipc://*")
            endpoint = rep.getsockopt_string(zmq.LAST_ENDPOINT)

        def serve(count: int) -> None:
            for _ in range(count):
                rep.send(rep.recv()[::-1])

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, serve, 2000)
                async with trizmq.Req(connect=endpoint) as req:
                    for i in range(2000):
                        request = b"request %d" % i
                        await req.send(request)
                        assert await req.recv() == request[::-1]
    finally:
        rep.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_big_frames_written_from_the_callers_object(transport: str) -> None:
    """Frames of 64 KiB and more skip the batch copy; multipart messages mixing them
    with small frames keep their frames, flags and order."""
    big = bytes(range(256)) * 4096  # 1 MiB
    messages = [
        [big],
        [b"head", big, b"tail"],
        [big, big[:65_536]],
        [b"x" * 65_535, b"y" * 65_536, b""],
        [b"small"],
    ] * 3
    with trio.fail_after(30):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind(bind_address(transport))
            async with trizmq.Push(connect=endpoint) as push:
                for message in messages:
                    await push.send_multipart(message)
                for message in messages:
                    assert await pull.recv_multipart() == message


async def test_no_descriptor_leaks_across_connections() -> None:
    """Each connection's duplicate descriptor is closed with it."""
    with trio.fail_after(30):
        async with trizmq.Pull() as pull, pull.monitor() as events:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(connect=endpoint) as push:
                await push.send(b"warm-up")
                await pull.recv()
            disconnected = 0

            async def hang_ups(count: int) -> None:
                nonlocal disconnected
                async for event in events:
                    if isinstance(event, trizmq.Disconnected):
                        disconnected += 1
                        if disconnected == count:
                            return

            await hang_ups(1)
            before = open_fds()
            for i in range(50):
                async with trizmq.Push(connect=endpoint, linger=1) as push:
                    await push.send(b"%d" % i)
                    assert await pull.recv() == b"%d" % i
            # the Pull has let every peer go once it reported each hang-up
            await hang_ups(51)
            assert pull.statistics()["live_peers"] == 0
            assert open_fds() <= before


@pytest.mark.fastpath
async def test_raw_socket_only_for_os_socket_streams() -> None:
    """Anything but a POSIX trio.SocketStream keeps trio's stream calls."""
    left, _right = trio.testing.memory_stream_pair()
    assert RawSocket.of(left) is None
    a, b = trio.socket.socketpair()
    stream = trio.SocketStream(a)
    raw = RawSocket.of(stream)
    assert raw is not None
    try:
        assert raw.send(b"ping") == 4
        assert await b.recv(10) == b"ping"
        await b.send(b"pong")
        await raw.wait_readable()
        assert raw.recv(10) == b"pong"
        with pytest.raises(BlockingIOError):
            raw.recv(10)
    finally:
        raw.close()
        await stream.aclose()
        b.close()


@pytest.mark.fastpath
async def test_a_raw_socket_of_its_own_parks_a_second_reader() -> None:
    """Where trio keeps no stdlib socket under its own, the raw socket makes one on
    a duplicate: a second reader parks on that one until data comes (it does not
    fail at once, which would spin a receiving task), ends on interrupt, and close
    releases the duplicate once."""

    a, b = trio.socket.socketpair()
    # a stream whose trio socket has no stdlib socket under it
    bare = SimpleNamespace(fileno=a.fileno, family=a.family, type=a.type, proto=a.proto)
    raw = RawSocket(cast("trio.SocketStream", SimpleNamespace(socket=bare)))
    before = open_fds()
    outcomes: list[str] = []

    async def second_reader() -> None:
        try:
            await raw.wait_readable_too()
            outcomes.append("readable")
        except trio.ClosedResourceError:
            outcomes.append("interrupted")

    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(second_reader)
                await trio.testing.wait_all_tasks_blocked()
                assert outcomes == []  # parked, not failed
                await b.send(b"ping")
            assert outcomes == ["readable"]
            assert raw.recv(10) == b"ping"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(second_reader)
                await trio.testing.wait_all_tasks_blocked()
                raw.interrupt()
            assert outcomes == ["readable", "interrupted"]
        assert open_fds() == before  # no descriptor beyond the socket of its own
    finally:
        raw.close()
        raw.close()
        a.close()
        b.close()
    assert open_fds() == before - 3  # its own socket, a and b
    assert raw.closed


async def test_flooded_reader_lets_other_tasks_run() -> None:
    """A reader that always finds data still yields: a sleeping task wakes on time
    while a libzmq PUSH floods an unbounded PULL."""
    ctx: Any = zmq.Context.instance()
    push = ctx.socket(zmq.PUSH)
    push.linger = 0
    push.sndtimeo = 50
    port = push.bind_to_random_port("tcp://127.0.0.1")
    stop = False

    def flood() -> None:
        payload = b"z" * 60_000
        while not stop:
            with contextlib.suppress(zmq.Again):
                push.send(payload)

    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, flood)
                async with trizmq.Pull(connect=f"tcp://127.0.0.1:{port}", rcvhwm=0) as pull:
                    await pull.recv()
                    woke = 0
                    for _ in range(20):
                        with trio.move_on_after(1) as scope:
                            await trio.sleep(0.001)
                        assert not scope.cancelled_caught
                        woke += 1
                    assert woke == 20
                stop = True
    finally:
        stop = True
        push.close()


class _FakeConn:
    """The part of a ZMTP Connection the writer uses, with a switch to end it."""

    class mechanism:  # mirrors conn.mechanism.encrypts and .runs
        encrypts = False
        runs = False

    #: plain ZMTP: one encoding serves every connection
    shares_encoding = True

    def __init__(self) -> None:
        self.closed = False

    def message_encoder(self) -> Any:
        def encode(out: bytearray, frames: list[bytes]) -> None:
            for frame in frames:
                out += bytes([len(frame)]) + frame

        return encode

    def short_frame_overhead(self) -> int | None:
        return 1  # the one length byte before each frame


class _HalfSocket:
    """A RawSocket whose kernel takes half of the first write and nothing after."""

    send_all = RawSocket.send_all

    def __init__(self) -> None:
        self.written = bytearray()

    def send(self, data: Any) -> int:
        if self.written:
            raise BlockingIOError
        half = bytes(data)[: len(data) // 2]
        self.written += half
        return len(half)

    async def wait_writable(self) -> None:
        await trio.sleep_forever()


class _FakeActor:
    """The part of a ConnectionActor the writer uses."""

    def __init__(self, peer: Peer, conn: _FakeConn, raw: _HalfSocket, fast: FastPath) -> None:
        self.peer = peer
        self.codec = conn
        self.where = "test"
        self.runtime: Any = type("Runtime", (), {"closing": False})()
        self.outbound = Outbound(conn)  # type: ignore[arg-type]
        self.output = RawOutput(raw, self, fast, self.outbound)  # type: ignore[arg-type]
        self.closed = False

    def close(self) -> None:
        self.closed = True


async def test_half_written_message_is_dropped_when_its_connection_ends() -> None:
    """The rest of a message cut short belongs to that connection: when the
    connection ends before the writer sends it, it is dropped from the queue (a
    whole message after it stays queued for the next connection)."""
    out_pipe = Pipe(100)
    peer = Peer("tcp://test", out_pipe, Pipe(100))
    conn = _FakeConn()
    raw = _HalfSocket()
    fast = FastPath(FairQueue(), Waiters())
    actor = _FakeActor(peer, conn, raw, fast)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_writer, actor)
            await trio.testing.wait_all_tasks_blocked()
            assert out_pipe.on_readable is not None  # the idle writer offers write-through

            def route(msg: list[bytes]) -> bool:
                out_pipe.put(msg)
                return True

            # written by us, the routing task, half taken by the kernel
            assert fast.route(route, [b"first message"])
            assert bytes(raw.written) == (b"\x0dfirst message")[:7]
            assert out_pipe.peek().__class__ is Unsent  # the rest waits for the writer
            out_pipe.put([b"second"])
            conn.closed = True  # the connection ends before the writer runs
        assert actor.closed
    assert list(out_pipe.drain()) == [[b"second"]]


async def test_the_switch_turns_direct_io_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the fast path off, no stream gets direct socket calls."""
    a, b = trio.socket.socketpair()
    stream = trio.SocketStream(a)
    try:
        monkeypatch.setattr(fastpath, "ENABLED", False)
        assert RawSocket.of(stream) is None
    finally:
        await stream.aclose()
        b.close()


@pytest.mark.fastpath
@pytest.mark.parametrize("mechanism", ["null", "curve"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_batches_written_through_under_back_pressure_arrive_whole(
    transport: str, mechanism: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """``send_many`` batches written by the sending task (one call per connection per
    batch) into a kernel buffer that fills up: the rest of a cut message and the
    messages after it go to the writer, and a libzmq receiver gets every message in
    order (encrypted too: what was boxed and not written is owed as it was boxed)."""
    # under BIG_FRAME (written by the writer from the sender's object); batches of
    # up to ~80 KB, more than one write-through takes (WRITE_BATCH)
    sizes = [1, 300, 5_000, 20_000, 60_000]
    messages = [bytes([i % 251]) * sizes[i % len(sizes)] for i in range(300)]
    batches = [messages[i : i + 4] for i in range(0, len(messages), 4)]
    written = partial = 0
    real = RawOutput.write_queue_now

    def counting(output: RawOutput) -> bool:
        nonlocal written, partial
        done = real(output)
        pipe = output.actor.peer.out_pipe
        if done:
            written += 1
        elif pipe and pipe.peek().__class__ is Unsent:
            partial += 1  # cut short: the rest of a message is owed first
        return done

    monkeypatch.setattr(RawOutput, "write_queue_now", counting)
    with (
        libzmq_pull(transport, mechanism, tmp_path, rcvhwm=5) as (pull, endpoint, security),
        trio.fail_after(30),
    ):
        async with trizmq.Push(connect=endpoint, sndhwm=1000, **security) as push:
            # connected and idle first: the batches then find the writer idle
            # until the kernel's buffers fill
            await push.send(b"hello")
            assert await trio.to_thread.run_sync(pull.recv) == b"hello"
            for batch in batches:
                # as after a wait of the socket, when the writer may be idle again
                push._fast.waited()  # type: ignore[union-attr]
                assert await push.send_many([[m] for m in batch]) == len(batch)
                await trio.sleep(0)
            # read only now, so that the kernel buffer filled meanwhile
            got = [await trio.to_thread.run_sync(pull.recv) for _ in messages]
            assert got == messages
    assert written > 0 and partial > 0


@pytest.mark.fastpath
@pytest.mark.parametrize("mechanism", ["null", "curve"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_batches_of_every_shape_written_through_arrive_as_sent(
    transport: str, mechanism: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A write-through of a batch frames a short one-frame message itself (as the
    writer does; CURVE boxes a run of them in its own loop) and the rest with the
    codec: every shape of message, the edges of the short headers' sizes included,
    reaches a libzmq receiver as it was sent."""
    shapes: list[list[bytes | bytearray]] = [
        [b""],
        [b"a"],
        [b"j" * 222],
        [b"k" * 223],
        [b"b" * 255],
        [b"c" * 256],
        [b"d", b"", b"e" * 300],
        [b"f" * 255, b"g"],
        [b"h" * 70_000],
        [bytearray(b"i" * 10)],
    ]
    messages = [shapes[i % len(shapes)] for i in range(80)]
    calls = 0
    real = RawOutput.write_queue_now

    def counting(output: RawOutput) -> bool:
        nonlocal calls
        calls += 1
        return real(output)

    monkeypatch.setattr(RawOutput, "write_queue_now", counting)
    with (
        libzmq_pull(transport, mechanism, tmp_path) as (pull, endpoint, security),
        trio.fail_after(30),
    ):
        async with trizmq.Push(connect=endpoint, **security) as push:
            await push.send(b"hello")
            assert await trio.to_thread.run_sync(pull.recv) == b"hello"
            for start in range(0, len(messages), 8):
                push._fast.waited()  # type: ignore[union-attr]
                await push.send_many(messages[start : start + 8])
                await trio.sleep(0)
            got = [await trio.to_thread.run_sync(pull.recv_multipart) for _ in messages]
    assert got == [[bytes(frame) for frame in msg] for msg in messages]
    assert calls > 0
