"""The shortest ways of ``recv`` and ``send``: one flag each says the socket is entered,
open, and has no message part-read (``recv``: ``_recv_ready``) or no frames kept
with ``more=True`` (``send``: ``_send_ready``).

A message of several frames read with ``recv`` leaves its other frames for the next
calls, and until they are taken no call may take a new message. The first tests take
a message's rest every way there is (``recv``, ``recv_nowait``, ``recv_multipart``,
``recv_multipart_nowait``, ``recv_many``, ``recv_message``) between one-frame
messages from a libzmq peer, and check the order, ``rcvmore``, and that ``recv`` is
back on its shortest way once the rest is taken (so the way is not lost for good
after one multipart message). The others do the same for frames kept with ``more=True``,
which the next one-frame ``send`` must join, not overtake.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
import trio.testing
import zmq

import trizmq


async def _by_recv(sock: trizmq.Socket) -> list[bytes]:
    frames = [await sock.recv()]
    while sock.rcvmore:
        frames.append(await sock.recv())
    return frames


async def _by_recv_nowait(sock: trizmq.Socket) -> list[bytes]:
    frames = [sock.recv_nowait()]
    while sock.rcvmore:
        frames.append(sock.recv_nowait())
    return frames


async def _by_recv_multipart(sock: trizmq.Socket) -> list[bytes]:
    return await sock.recv_multipart()


async def _by_recv_multipart_nowait(sock: trizmq.Socket) -> list[bytes]:
    return sock.recv_multipart_nowait()


async def _by_recv_many(sock: trizmq.Socket) -> list[bytes]:
    (frames,) = await sock.recv_many(1)
    return frames


async def _by_recv_message(sock: trizmq.Socket) -> list[bytes]:
    return (await sock.recv_message()).frames


@contextmanager
def libzmq_socket(kind: int) -> Iterator[Any]:
    """A libzmq socket of ``kind`` whose calls give up after 5 s; closed on exit."""
    ctx: Any = zmq.Context.instance()
    sock = ctx.socket(kind)
    sock.linger = 0
    sock.sndtimeo = sock.rcvtimeo = 5000
    try:
        yield sock
    finally:
        sock.close()


REST_TAKERS: dict[str, Callable[[trizmq.Socket], Awaitable[list[bytes]]]] = {
    "recv": _by_recv,
    "recv_nowait": _by_recv_nowait,
    "recv_multipart": _by_recv_multipart,
    "recv_multipart_nowait": _by_recv_multipart_nowait,
    "recv_many": _by_recv_many,
    "recv_message": _by_recv_message,
}


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("taker", sorted(REST_TAKERS))
async def test_the_rest_of_a_message_comes_before_the_next(transport: str, taker: str) -> None:
    take_rest = REST_TAKERS[taker]
    with libzmq_socket(zmq.PUSH) as push, trio.fail_after(10):
        pull = trizmq.Pull()
        assert not pull._recv_ready  # not entered yet
        async with pull:
            assert pull._recv_ready
            push.connect(await pull.bind("tcp://127.0.0.1:0" if transport == "tcp" else "ipc://*"))
            push.send_multipart([b"a", b"b", b"c"])
            push.send(b"d")
            push.send_multipart([b"e", b"f"])
            push.send(b"g")
            assert await pull.recv() == b"a"
            assert pull.rcvmore
            assert not pull._recv_ready
            assert await take_rest(pull) == [b"b", b"c"]
            assert not pull.rcvmore
            assert pull._recv_ready
            assert await pull.recv() == b"d"
            assert await pull.recv() == b"e"
            assert not pull._recv_ready
            assert await take_rest(pull) == [b"f"]
            assert pull._recv_ready
            assert await pull.recv() == b"g"
            assert not pull.rcvmore
            # a message half read when the socket closes: its rest is dropped
            push.send_multipart([b"h", b"i"])
            assert await pull.recv() == b"h"
        assert not pull._recv_ready
        with pytest.raises(trio.ClosedResourceError):
            await pull.recv()


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
@pytest.mark.parametrize("nowait", [False, True], ids=["send", "send_nowait"])
async def test_frames_kept_with_more_go_out_with_the_next_send(
    transport: str, nowait: bool
) -> None:
    with libzmq_socket(zmq.PULL) as pull, trio.fail_after(10):
        push = trizmq.Push(linger=1)
        assert not push._send_ready  # not entered yet
        async with push:
            assert push._send_ready
            if transport == "tcp":
                port = pull.bind_to_random_port("tcp://127.0.0.1")
                await push.connect(f"tcp://127.0.0.1:{port}")
            else:
                pull.bind("ipc://*")
                await push.connect(pull.last_endpoint.decode())
            await push.send(b"a")
            if nowait:
                push.send_nowait(b"b", more=True)
            else:
                await push.send(b"b", more=True)
            assert not push._send_ready
            await push.send(b"c")  # the last frame of b's message
            assert push._send_ready
            await push.send(b"d")
            await push.send(bytearray(b"e"), more=True)  # copied, and kept
            with trio.CancelScope() as scope:
                scope.cancel()
                await push.send(b"never")  # cancelled: e and this are dropped
            assert push._send_ready
            await push.send(b"f")
            await push.aclose()
        assert not push._send_ready
        got = [await trio.to_thread.run_sync(pull.recv_multipart) for _ in range(4)]
        assert got == [[b"a"], [b"b", b"c"], [b"d"], [b"f"]]


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_whole_messages_take_the_shortest_ways_too(transport: str) -> None:
    """send_multipart and recv_multipart on the shortest ways: a whole message either
    way, frames kept with send(more=True) left out of a send_multipart (as ever),
    and a cancelled call that sends or takes nothing."""
    with libzmq_socket(zmq.DEALER) as peer, trio.fail_after(10):
        async with trizmq.Dealer() as dealer:
            peer.connect(
                await dealer.bind("tcp://127.0.0.1:0" if transport == "tcp" else "ipc://*")
            )
            await dealer.send_multipart([b"a", b"b"])
            await dealer.send(b"k", more=True)
            await dealer.send_multipart([bytearray(b"whole")])  # k stays kept
            await dealer.send(b"l")
            with trio.CancelScope() as scope:
                scope.cancel()
                await dealer.send_multipart([b"never"])
            assert dealer._send_ready
            got = [await trio.to_thread.run_sync(peer.recv_multipart) for _ in range(3)]
            assert got == [[b"a", b"b"], [b"whole"], [b"k", b"l"]]
            peer.send_multipart([b"c", b"d"])
            peer.send(b"e")
            assert await dealer.recv_multipart() == [b"c", b"d"]
            assert dealer._recv_ready
            with trio.CancelScope() as scope:
                scope.cancel()
                await dealer.recv_multipart()  # cancelled: takes nothing
            assert await dealer.recv_multipart() == [b"e"]
            # and one that waits for its message
            got_f: list[list[bytes]] = []

            async def receive() -> None:
                got_f.append(await dealer.recv_multipart())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                await trio.testing.wait_all_tasks_blocked()
                assert not got_f
                peer.send(b"f")
            assert got_f == [[b"f"]]


def test_a_closed_socket_says_so_in_another_threads_run() -> None:
    """Once closed, a socket's calls take the portable checkpoint, which reads the
    running task of the calling thread: in another thread's trio.run they say the
    socket belongs to another run (as in a later run of the same thread), not a
    lookup error from the first thread's run context."""
    push = trizmq.Push()

    async def use_and_close() -> None:
        async with push:
            assert push._send_ready

    trio.run(use_and_close)
    raised: list[BaseException] = []

    async def use_again() -> None:
        with trio.fail_after(5):
            for call in (push.send(b"x"), push.send_multipart([b"x"]), push.recv()):
                try:
                    await call
                except BaseException as exc:  # kept for the assertion
                    raised.append(exc)

    thread = threading.Thread(target=trio.run, args=(use_again,))
    thread.start()
    thread.join(10)
    assert [type(exc) for exc in raised] == [RuntimeError] * 3, raised
    assert all("belongs to another trio.run" in str(exc) for exc in raised), raised
