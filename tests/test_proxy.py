"""trizmq.proxy and trizmq.proxy_steerable forward whole messages, as zmq_proxy does."""

from __future__ import annotations

import itertools
import logging
import struct
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trizmq

_names = itertools.count()


def endpoint(transport: str) -> str:
    """A fresh inproc name, or a tcp endpoint on a free port (resolved by bind)."""
    if transport == "inproc":
        return f"inproc://proxy-test-{next(_names)}"
    return "tcp://127.0.0.1:0"


@asynccontextmanager
async def running(
    frontend: trizmq.Socket,
    backend: trizmq.Socket,
    capture: trizmq.Socket | None = None,
) -> AsyncIterator[None]:
    """Run trizmq.proxy in the background for the body, then cancel it."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trizmq.proxy, frontend, backend, capture)
        yield
        nursery.cancel_scope.cancel()


async def settle() -> None:
    """Let every task (the proxy's and the sockets', all inproc here) run until blocked."""
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


def unpack_stats(frames: list[bytes]) -> list[int]:
    assert len(frames) == 8
    return [struct.unpack("=Q", frame)[0] for frame in frames]


# -- the three classic devices -------------------------------------------------------


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_streamer_pull_push(transport: str) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as frontend, trizmq.Push() as backend:
            fe = await frontend.bind(endpoint(transport))
            be = await backend.bind(endpoint(transport))
            async with (
                trizmq.Push(connect=fe) as producer,
                trizmq.Pull(connect=be) as consumer,
                running(frontend, backend),
            ):
                for i in range(300):
                    await producer.send_multipart([b"job", str(i).encode()])
                for i in range(300):
                    assert await consumer.recv_multipart() == [b"job", str(i).encode()]


async def test_streamer_keeps_back_pressure() -> None:
    """A slow consumer behind small queues loses nothing: the proxy waits instead."""
    with trio.fail_after(10):
        fe, be = endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Pull(bind=fe, rcvhwm=5) as frontend,
            trizmq.Push(bind=be, sndhwm=5) as backend,
            trizmq.Push(connect=fe, sndhwm=5) as producer,
            trizmq.Pull(connect=be, rcvhwm=5) as consumer,
            running(frontend, backend),
        ):

            async def produce() -> None:
                for i in range(500):
                    await producer.send(str(i).encode())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(produce)
                for i in range(500):
                    if i % 50 == 0:
                        await settle()  # let every queue on the way fill up
                    assert await consumer.recv() == str(i).encode()


async def wait_until_subscribed(pub: trizmq.Pub, sub: trizmq.Sub, topic: bytes) -> None:
    """Publish probes on ``topic`` until one reaches ``sub``: the subscription is upstream.

    PUB drops what nobody subscribed to, so the only sign that a subscription has
    travelled up is a message coming down; the probes are then skipped by the caller.
    """
    while True:
        pub.send_multipart_nowait([topic + b"-probe"])
        with trio.move_on_after(0.05):
            assert await sub.recv_multipart() == [topic + b"-probe"]
            return


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_forwarder_xsub_xpub(transport: str) -> None:
    with trio.fail_after(10):
        async with (
            trizmq.Pub() as publisher,
            trizmq.XSub() as frontend,
            trizmq.XPub() as backend,
            trizmq.Pair() as capture,
            trizmq.Pair() as captured,
        ):
            up = await publisher.bind(endpoint(transport))
            await frontend.connect(up)
            down = await backend.bind(endpoint(transport))
            cap = await captured.bind(endpoint("inproc"))
            await capture.connect(cap)
            async with (
                running(frontend, backend, capture),
                trizmq.Sub(connect=down, subscribe=b"weather") as subscriber,
            ):
                # the subscription travels up through the proxy as a message
                assert await captured.recv_multipart() == [b"\x01weather"]
                await wait_until_subscribed(publisher, subscriber, b"weather")
                await publisher.send_multipart([b"sports", b"nobody asked"])
                await publisher.send_multipart([b"weather", b"sunny"])
                while (msg := await subscriber.recv_multipart()) == [b"weather-probe"]:
                    pass
                assert msg == [b"weather", b"sunny"]
                # the publisher filtered: the unsubscribed topic never reached the proxy
                while (seen := await captured.recv_multipart()) == [b"weather-probe"]:
                    pass
                assert seen == [b"weather", b"sunny"]


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_queue_router_dealer(transport: str) -> None:
    """REQ clients and REP workers through a ROUTER/DEALER queue: every reply finds its client."""
    with trio.fail_after(10):
        async with trizmq.Router() as frontend, trizmq.Dealer() as backend:
            fe = await frontend.bind(endpoint(transport))
            be = await backend.bind(endpoint(transport))

            async def worker(name: bytes, task_status: trio.TaskStatus[None]) -> None:
                async with trizmq.Rep(connect=be) as rep:
                    task_status.started()
                    while True:
                        request = await rep.recv_multipart()
                        await rep.send_multipart([*request, name])

            async def client(n: int) -> None:
                async with trizmq.Req(connect=fe) as req:
                    for i in range(10):
                        request = f"client {n} request {i}".encode()
                        await req.send(request)
                        reply = await req.recv_multipart()
                        assert reply[0] == request
                        served[n].add(reply[1])

            served: dict[int, set[bytes]] = {n: set() for n in range(4)}
            async with running(frontend, backend), trio.open_nursery() as workers:
                for name in (b"w1", b"w2"):
                    await workers.start(worker, name)
                async with trio.open_nursery() as clients:
                    for n in range(4):
                        clients.start_soon(client, n)
                workers.cancel_scope.cancel()
            assert all(names <= {b"w1", b"w2"} and names for names in served.values())


# -- capture, cancellation, closing, errors -------------------------------------------


async def test_capture_receives_every_forwarded_message() -> None:
    with trio.fail_after(10):
        fe, be, cap = endpoint("inproc"), endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Router(bind=fe) as frontend,
            trizmq.Dealer(bind=be) as backend,
            trizmq.Pair(bind=cap, rcvhwm=0) as captured,
            trizmq.Pair(connect=cap, sndhwm=0) as capture,
            trizmq.Dealer(connect=fe, routing_id=b"client") as client,
            trizmq.Dealer(connect=be) as server,
            running(frontend, backend, capture),
        ):
            for i in range(20):
                await client.send_multipart([b"", b"ask %d" % i])
                request = await server.recv_multipart()
                assert request == [b"client", b"", b"ask %d" % i]
                await server.send_multipart([b"client", b"", b"answer %d" % i])
                assert await client.recv_multipart() == [b"", b"answer %d" % i]
            for i in range(20):
                assert await captured.recv_multipart() == [b"client", b"", b"ask %d" % i]
                assert await captured.recv_multipart() == [b"client", b"", b"answer %d" % i]
            await settle()
            with pytest.raises(trio.WouldBlock):
                captured.recv_multipart_nowait()


async def test_capture_that_would_block_never_stalls_the_data_path() -> None:
    with trio.fail_after(10):
        fe, be = endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Pull(bind=fe) as frontend,
            trizmq.Push(bind=be) as backend,
            trizmq.Push() as capture,  # no peer: every copy would block
            trizmq.Push(connect=fe) as producer,
            trizmq.Pull(connect=be) as consumer,
            running(frontend, backend, capture),
        ):
            for i in range(50):
                await producer.send(b"%d" % i)
            for i in range(50):
                assert await consumer.recv() == b"%d" % i


async def test_cancellation_stops_the_proxy_promptly() -> None:
    with trio.fail_after(10):
        fe, be = endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Pull(bind=fe) as frontend,
            trizmq.Push(bind=be) as backend,
            trizmq.Push(connect=fe) as producer,
            trizmq.Pull(connect=be) as consumer,
        ):
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trizmq.proxy, frontend, backend)
                    await producer.send(b"before")
                    assert await consumer.recv() == b"before"
                    scope.cancel()
            assert scope.cancelled_caught
            # the proxy is gone: a message now stays in the frontend
            await producer.send(b"after")
            assert await frontend.recv() == b"after"


async def test_closing_a_socket_ends_the_proxy() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as frontend, trizmq.Push() as backend:
            await frontend.bind(endpoint("inproc"))
            await backend.bind(endpoint("inproc"))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(frontend.aclose)
                await trizmq.proxy(frontend, backend)  # returns instead of raising


async def test_nothing_to_forward_raises_value_error() -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as a, trizmq.Push() as b, trizmq.Pull() as c:
            with pytest.raises(ValueError, match="PUSH frontend and a PUSH backend"):
                await trizmq.proxy(a, b)
            with pytest.raises(ValueError, match="PULL capture socket cannot send"):
                await trizmq.proxy(c, a, capture=c)
            with pytest.raises(ValueError, match="PUSH control socket cannot receive"):
                await trizmq.proxy_steerable(c, a, control=b)


def test_public_names() -> None:
    assert trizmq.proxy.__module__ == "trizmq"
    assert trizmq.proxy_steerable.__module__ == "trizmq"
    assert {"proxy", "proxy_steerable"} <= set(trizmq.__all__)


# -- steerable -------------------------------------------------------------------------


async def test_steerable_pause_resume_statistics_terminate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(10):
        fe, be, ctl = endpoint("inproc"), endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Pull(bind=fe) as frontend,
            trizmq.Push(bind=be) as backend,
            trizmq.Rep(bind=ctl) as control,
            trizmq.Push(connect=fe) as producer,
            trizmq.Pull(connect=be) as consumer,
            trizmq.Req(connect=ctl) as steer,
        ):

            async def command(name: bytes) -> list[bytes]:
                await steer.send(name)
                return await steer.recv_multipart()

            done = trio.Event()

            async def run() -> None:
                await trizmq.proxy_steerable(frontend, backend, control=control)
                done.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                await producer.send_multipart([b"one", b"12345"])
                assert await consumer.recv_multipart() == [b"one", b"12345"]

                assert await command(b"PAUSE") == [b""]
                for i in range(5):
                    await producer.send(b"paused %d" % i)
                await settle()
                with pytest.raises(trio.WouldBlock):
                    consumer.recv_multipart_nowait()

                with caplog.at_level(logging.WARNING, logger="trizmq"):
                    assert await command(b"BOGUS") == [b""]  # REP stays in step
                assert "BOGUS" in caplog.text

                assert await command(b"RESUME") == [b""]
                for i in range(5):
                    assert await consumer.recv() == b"paused %d" % i

                stats = unpack_stats(await command(b"STATISTICS"))
                # frontend: 6 in (8 + 5*8 bytes), nothing out; backend: the mirror image
                assert stats == [6, 48, 0, 0, 0, 0, 6, 48]

                assert await command(b"TERMINATE") == [b""]
                await done.wait()
            # the proxy has returned and the sockets are still open
            await producer.send(b"after")
            assert await frontend.recv() == b"after"


async def test_steerable_statistics_count_both_ways() -> None:
    with trio.fail_after(10):
        fe, be, ctl = endpoint("inproc"), endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Router(bind=fe) as frontend,
            trizmq.Dealer(bind=be) as backend,
            trizmq.Pair(bind=ctl) as control,
            trizmq.Req(connect=fe, routing_id=b"c") as client,
            trizmq.Rep(connect=be) as worker,
            trizmq.Pair(connect=ctl) as steer,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(lambda: trizmq.proxy_steerable(frontend, backend, control=control))
            for _ in range(3):
                await client.send(b"abc")
                await worker.send(await worker.recv() + b"de")
                assert await client.recv() == b"abcde"
            await steer.send(b"STATISTICS")
            # frontend in: [c, "", abc] = 4 bytes; backend in: [c, "", abcde] = 6 bytes
            assert unpack_stats(await steer.recv_multipart()) == [3, 12, 3, 18, 3, 18, 3, 12]
            await steer.send(b"TERMINATE")
            assert await steer.recv_multipart() == [b""]  # a PAIR gets replies too


async def test_steerable_with_a_control_that_cannot_reply() -> None:
    with trio.fail_after(10):
        fe, be, ctl = endpoint("inproc"), endpoint("inproc"), endpoint("inproc")
        async with (
            trizmq.Pull(bind=fe) as frontend,
            trizmq.Push(bind=be) as backend,
            trizmq.Sub(bind=ctl, subscribe=b"") as control,
            trizmq.Pub(connect=ctl) as steer,
            trizmq.Push(connect=fe) as producer,
            trizmq.Pull(connect=be) as consumer,
        ):
            await settle()  # the Sub's subscription reaches the Pub (inproc)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: trizmq.proxy_steerable(frontend, backend, control=control)
                )
                await producer.send(b"x")
                assert await consumer.recv() == b"x"
                await steer.send(b"STATISTICS")  # no reply, and no failure
                await steer.send(b"TERMINATE")
            await producer.send(b"after")
            assert await frontend.recv() == b"after"


# -- interop -----------------------------------------------------------------------------


async def test_proxy_between_libzmq_req_clients_and_rep_workers() -> None:
    zmq: Any = pytest.importorskip("zmq")
    with trio.fail_after(10):
        async with trizmq.Router() as frontend, trizmq.Dealer() as backend:
            fe = await frontend.bind("tcp://127.0.0.1:0")
            be = await backend.bind("tcp://127.0.0.1:0")
            ctx = zmq.Context()
            stop = threading.Event()
            try:

                def open_socket(kind: int, where: str, timeout_ms: int) -> Any:
                    sock = ctx.socket(kind)
                    sock.setsockopt(zmq.LINGER, 0)
                    sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
                    sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
                    sock.connect(where)
                    return sock

                # short worker timeouts only let a worker notice `stop`
                workers = [open_socket(zmq.REP, be, 50) for _ in range(2)]
                clients = [open_socket(zmq.REQ, fe, 5000) for _ in range(3)]

                def serve(rep: Any) -> None:
                    while not stop.is_set():
                        try:
                            request = rep.recv_multipart()
                        except zmq.Again:
                            continue
                        rep.send_multipart([*request, b"done"])

                def ask(req: Any, n: int) -> None:
                    for i in range(5):
                        body = b"client %d request %d" % (n, i)
                        req.send(body)
                        assert req.recv_multipart() == [body, b"done"]

                async with running(frontend, backend), trio.open_nursery() as nursery:
                    for rep in workers:
                        nursery.start_soon(trio.to_thread.run_sync, serve, rep)
                    try:
                        async with trio.open_nursery() as asking:
                            for n, req in enumerate(clients):
                                asking.start_soon(trio.to_thread.run_sync, ask, req, n)
                    finally:
                        stop.set()
            finally:
                stop.set()
                ctx.destroy(linger=0)


async def test_addressed_draft_types_are_refused_up_front() -> None:
    with trio.fail_after(5):
        async with trizmq.Dish(bind="inproc://proxy-dish") as dish, trizmq.Radio(
            connect="inproc://proxy-radio-nowhere"
        ) as radio:
            with pytest.raises(ValueError, match="cannot be proxied"):
                await trizmq.proxy(dish, radio)
