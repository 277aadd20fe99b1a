"""Cost that does not grow with the crowd: a receive looks only at peers with input.

Counted, not timed: how often the receiving socket's peer queues are looked at
(``Pipe.poll``, ``Pipe.poll_message`` and ``Pipe.__bool__``) while it reads 200
messages from one busy peer, with 1 and with 1,000 idle peers connected (after a
first receive, which looks at each newly attached peer once). inproc
links are made synchronously by ``connect()``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
import trio

import trizmq
from trizmq.nursery.pipe import Pipe

_NAMES = itertools.count()


class Looks:
    """Counts calls to the Pipe methods a receive uses to look at a peer's input."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.on = False
        for name in ("poll", "poll_message", "__bool__"):
            monkeypatch.setattr(Pipe, name, self._counting(getattr(Pipe, name)))

    def _counting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(pipe: Pipe, *args: Any) -> Any:
            if self.on:
                self.count += 1
            return method(pipe, *args)

        return counted


async def looks_per_receive(
    looks: Looks, receiver: type[trizmq.Socket], sender: type[trizmq.Socket], idle: int
) -> float:
    endpoint = f"inproc://crowd-{next(_NAMES)}"
    async with receiver(bind=endpoint) as sink, AsyncExitStack() as stack:
        for _ in range(idle):
            await stack.enter_async_context(sender(connect=endpoint))
        busy = await stack.enter_async_context(sender(connect=endpoint))
        assert sink.statistics()["live_peers"] == idle + 1
        # a peer attached is ready until a receive finds it empty (libzmq activates
        # the pipes it attaches): the first receive looks at each peer once
        busy.send_multipart_nowait([b"first"])
        assert (await sink.recv_multipart())[-1] == b"first"
        for i in range(200):
            busy.send_multipart_nowait([b"%d" % i])
        looks.count, looks.on = 0, True
        for i in range(200):
            assert (await sink.recv_multipart())[-1] == b"%d" % i
        looks.on = False
        return looks.count / 200


async def stop_peers(proc: trio.Process) -> None:
    """Close the peers' process's stdin (they close and exit) and wait for it, shielded
    and killing it after 10 s: a failed test leaves no crowd running into the next."""
    with trio.CancelScope(shield=True):
        assert proc.stdin is not None
        await proc.stdin.aclose()
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize(
    ("receiver", "sender"),
    [(trizmq.Pull, trizmq.Push), (trizmq.Router, trizmq.Dealer), (trizmq.Sub, trizmq.Pub)],
)
async def test_a_thousand_quiet_peers_cost_a_receive_nothing(
    monkeypatch: pytest.MonkeyPatch, receiver: type[trizmq.Socket], sender: type[trizmq.Socket]
) -> None:
    looks = Looks(monkeypatch)
    with trio.fail_after(120):
        if receiver is trizmq.Sub:
            receiver = _subscribed_to_everything  # type: ignore[assignment]
        few = await looks_per_receive(looks, receiver, sender, idle=1)
        crowd = await looks_per_receive(looks, receiver, sender, idle=1000)
    assert crowd == few
    assert few <= 3


def _subscribed_to_everything(**kwargs: Any) -> trizmq.Sub:
    return trizmq.Sub(subscribe=b"", **kwargs)


# -- the listen backlog -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["tcp", "ipc"])
async def test_the_backlog_option_reaches_listen(
    monkeypatch: pytest.MonkeyPatch, scheme: str, tmp_path: Any
) -> None:
    from trizmq.transport.base import DEFAULT_BACKLOG, effective_backlog

    probe = trio.socket.socket()
    socket_class = type(probe)
    probe.close()
    seen: list[int] = []
    listen = socket_class.listen

    def spying(self: Any, backlog: int) -> None:
        seen.append(backlog)
        listen(self, backlog)

    monkeypatch.setattr(socket_class, "listen", spying)
    endpoint = "tcp://127.0.0.1:0" if scheme == "tcp" else f"ipc://{tmp_path}/sock"
    with trio.fail_after(10):
        async with trizmq.Pull(bind=endpoint, backlog=7):
            pass
        async with trizmq.Pull(bind=endpoint):
            pass
    assert seen == [7, effective_backlog(DEFAULT_BACKLOG)]
    assert effective_backlog(DEFAULT_BACKLOG) == min(1024, _somaxconn())
    assert effective_backlog(10**9) == _somaxconn()


def _somaxconn() -> int:
    with open("/proc/sys/net/core/somaxconn") as f:
        return int(f.read())


# -- one descriptor per connection ----------------------------------------------------

_LIBZMQ_CROWD = r"""
import sys, zmq
ctx = zmq.Context()
socks = []
for _ in range(int(sys.argv[2])):
    s = ctx.socket(zmq.PUSH)
    s.linger = 0
    s.connect(sys.argv[1])
    s.send(b"hi")
    socks.append(s)
sys.stdin.read()  # until the test closes our stdin
for s in socks:
    s.close()
ctx.term()
"""


async def test_a_crowd_of_connections_costs_one_descriptor_each() -> None:
    """50 libzmq peers: the accepted connections are the only new descriptors (the
    duplicate that read-through waits on is made only when a task reads through)."""
    import os
    import subprocess
    import sys

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    peers = 50
    with trio.fail_after(60):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as pull:
            endpoint = pull.statistics()["bound"][0]
            before = fds()
            async with pull.monitor() as events:
                proc = await trio.lowlevel.open_process(
                    [sys.executable, "-c", _LIBZMQ_CROWD, endpoint, str(peers)],
                    stdin=subprocess.PIPE,
                )
                try:
                    greeted = 0
                    async for event in events:
                        if isinstance(event, trizmq.HandshakeSucceeded):
                            greeted += 1
                            if greeted == peers:
                                break
                    for _ in range(peers):
                        assert await pull.recv() == b"hi"
                    # the connections, plus the helper's stdin pipe and its pidfd
                    # (with a duplicate per connection this was 2 x peers)
                    assert peers <= fds() - before <= peers + 3
                finally:
                    await stop_peers(proc)


async def test_a_connected_peer_keeps_nothing_of_its_handshake() -> None:
    """50 libzmq peers, handshaken and idle: no handshake slot (its cancel scope, its
    closure) stays with a connection, and each costs a bounded number of objects the
    cyclic garbage collector walks (its tasks, pipes, codec and socket: ~94 here;
    every full collection visits them all, so a crowd of idle peers must stay lean).
    Frames are not counted: Python 3.10 keeps a frame object for each suspended
    coroutine (~14 a peer), where 3.11 and later keep the frame inside the coroutine;
    the interpreter's, not trizmq's."""
    import gc
    import subprocess
    import sys
    import types

    from trizmq.nursery.slots import HandshakeSlot

    def tracked() -> list[object]:
        gc.collect()
        return [o for o in gc.get_objects() if not isinstance(o, types.FrameType)]

    peers = 50
    with trio.fail_after(60):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as pull:
            endpoint = pull.statistics()["bound"][0]
            before = len(tracked())
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-c", _LIBZMQ_CROWD, endpoint, str(peers)],
                stdin=subprocess.PIPE,
            )
            try:
                for _ in range(peers):
                    assert await pull.recv() == b"hi"
                await trio.testing.wait_all_tasks_blocked()
                objects = tracked()
                assert not [o for o in objects if type(o) is HandshakeSlot]
                per_peer = (len(objects) - before) / peers
                assert per_peer <= 100, per_peer
            finally:
                await stop_peers(proc)


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_queued_one_frame_messages_are_not_walked_by_the_garbage_collector(
    transport: str, tmp_path: Any
) -> None:
    """2,000 messages queued in a PULL, unread: the one-frame ones wait as their bytes,
    which Python's cyclic garbage collector does not track (a list per message would
    be walked by every collection while it waits, and queues of thousands make it
    walk the whole heap again and again); they come out as lists, in order, with a
    message of several frames among them kept whole."""
    import gc

    endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp_path}/q"
    count = 2000
    with trio.fail_after(30):
        async with trizmq.Pull(bind=endpoint, rcvhwm=10 * count) as pull:
            bound = pull.statistics()["bound"][0]
            async with trizmq.Push(connect=bound) as push:
                await push.send_multipart([b"hello"])
                assert await pull.recv_multipart() == [b"hello"]
                sent = [[b"%d" % i] for i in range(count)]
                sent[count // 2] = [b"two", b"frames"]
                gc.collect()
                before = len(gc.get_objects())
                assert await push.send_many(sent) == count
                await trio.testing.wait_all_tasks_blocked()
                assert pull.statistics()["queued_in"] == count
                gc.collect()
                # what the garbage collector tracks grew by one object of the
                # multi-frame message, not by one per queued message
                assert len(gc.get_objects()) - before < count // 10
                got: list[list[bytes]] = []
                while len(got) < count:
                    got += await pull.recv_many()
                assert got == sent
                assert all(type(msg) is list for msg in got)


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_a_published_batch_leaves_no_garbage_for_the_cyclic_collector(
    transport: str, tmp_path: Any
) -> None:
    """A batch published to several subscribers is wrapped once (a run of shared
    messages); once every subscriber has it, what was made for it is freed by
    reference counting alone. A run and its wrappers that held each other would wait
    for Python's cyclic collector, which then had a third of a publisher's CPU at 16
    subscribers. Counted with the collector off: nothing of the run is left."""
    import gc

    from trizmq.zmtp.queue_items import Fanout, FanoutRun

    endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else f"ipc://{tmp_path}/fan"
    batches, size = 20, 64
    with trio.fail_after(30):
        async with trizmq.Pub(bind=endpoint) as pub:
            bound = pub.statistics()["bound"][0]
            async with (
                trizmq.Sub(connect=bound, subscribe=b"") as a,
                trizmq.Sub(connect=bound, subscribe=b"") as b,
            ):
                while pub.statistics()["subscriptions"] < 2:
                    await trio.sleep(0.01)
                gc.collect()
                gc.disable()
                try:
                    for n in range(batches):
                        await pub.send_many([[b"%d" % (n * size + i)] for i in range(size)])
                    for sub in (a, b):
                        got: list[list[bytes]] = []
                        while len(got) < batches * size:
                            got += await sub.recv_many()
                        assert got == [[b"%d" % i] for i in range(batches * size)]
                    await trio.testing.wait_all_tasks_blocked()
                    assert pub.statistics()["queued_out"] == 0
                    left = [o for o in gc.get_objects() if type(o) in (Fanout, FanoutRun)]
                finally:
                    gc.enable()
                assert left == []


# -- a burst of well-behaved peers ------------------------------------------------------

_LIBZMQ_BURST = r"""
import sys, zmq
ctx = zmq.Context()
ctx.set(zmq.MAX_SOCKETS, 4096)
socks = []
for i in range(int(sys.argv[2])):
    s = ctx.socket(zmq.DEALER)
    s.linger = 0
    s.connect(sys.argv[1])
    s.send(b"%d" % i)
    socks.append(s)
sys.stdin.read()  # until the test closes our stdin
for s in socks:
    s.close()
ctx.term()
"""


async def test_a_burst_of_peers_larger_than_the_handshake_slots_loses_nobody() -> None:
    """600 libzmq DEALERs connect at once to a ROUTER with 20 handshake slots, each
    sending one message at once: every message arrives. (A newcomer used to evict
    a handshake accepted a moment before, whose peer had already written its
    greeting and message: the message was lost with the connection.)"""
    import subprocess
    import sys

    peers = 600
    with trio.fail_after(60):
        async with trizmq.Router(bind="tcp://127.0.0.1:0", max_handshakes=20) as router:
            endpoint = router.statistics()["bound"][0]
            proc = await trio.lowlevel.open_process(
                [sys.executable, "-c", _LIBZMQ_BURST, endpoint, str(peers)],
                stdin=subprocess.PIPE,
            )
            try:
                got = set()
                while len(got) < peers:
                    for _rid, body in await router.recv_many():
                        got.add(int(body))
                assert got == set(range(peers))
            finally:
                await stop_peers(proc)
