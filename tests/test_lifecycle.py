"""A socket's life: entering, closing, linger, errors, cancellation and reconnection.

Linger and cancellation are timed in virtual time (pytest-trio's ``autojump_clock``)
on inproc and on tcp connects to a port where nothing listens.
"""

from __future__ import annotations

import itertools
import socket as stdsocket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

import trizmq

_NAMES = itertools.count()


def free_tcp_port() -> int:
    with stdsocket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nowhere(transport: str) -> str:
    """An endpoint nobody binds."""
    if transport == "inproc":
        return f"inproc://nowhere-{next(_NAMES)}"
    return f"tcp://127.0.0.1:{free_tcp_port()}"


async def handshakes(events: trizmq.Monitor, n: int) -> None:
    seen = 0
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            seen += 1
            if seen == n:
                return
    raise AssertionError("monitor ended before the handshakes")


async def next_of(events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]) -> None:
    async for event in events:
        if isinstance(event, kind):
            return
    raise AssertionError(f"monitor ended before a {kind.__name__} event")


def operations(sock: trizmq.Socket) -> list[tuple[str, Callable[[], Any]]]:
    """Every operation of the socket API, as zero-argument callables."""
    ops: list[tuple[str, Callable[[], Any]]] = [
        ("send", lambda: sock.send(b"x")),
        ("send more", lambda: sock.send(b"x", more=True)),
        ("send_multipart", lambda: sock.send_multipart([b"x"])),
        ("send_nowait", lambda: sock.send_nowait(b"x")),
        ("send_multipart_nowait", lambda: sock.send_multipart_nowait([b"x"])),
        ("bind", lambda: sock.bind("inproc://closed-bind")),
        ("connect", lambda: sock.connect("inproc://closed-connect")),
        ("unbind", lambda: sock.unbind("inproc://closed-bind")),
        ("disconnect", lambda: sock.disconnect("inproc://closed-connect")),
        ("monitor", sock.monitor),
    ]
    if isinstance(sock, trizmq.Pull | trizmq.Pair):
        ops += [
            ("recv", sock.recv),
            ("recv_multipart", sock.recv_multipart),
            ("recv_nowait", sock.recv_nowait),
            ("recv_multipart_nowait", sock.recv_multipart_nowait),
            ("recv_message", sock.recv_message),
        ]
        ops = [op for op in ops if not op[0].startswith("send") or isinstance(sock, trizmq.Pair)]
    if isinstance(sock, trizmq.XSub):
        ops += [
            ("subscribe", lambda: sock.subscribe(b"t")),
            ("unsubscribe", lambda: sock.unsubscribe(b"t")),
        ]
    return ops


async def assert_all_closed(sock: trizmq.Socket) -> None:
    for name, op in operations(sock):
        with pytest.raises(trio.ClosedResourceError):
            result = op()
            if isinstance(result, Awaitable):
                await result
            raise AssertionError(f"{name} did not raise")


@pytest.mark.parametrize("cls", [trizmq.Pair, trizmq.Push, trizmq.Pull, trizmq.Sub, trizmq.XSub])
async def test_every_operation_raises_after_aclose(cls: type[trizmq.Socket]) -> None:
    with trio.fail_after(5):
        async with cls(bind=f"inproc://aclose-{next(_NAMES)}") as sock:
            assert not sock.closed
            await sock.aclose()
            assert sock.closed
            await assert_all_closed(sock)
            await sock.aclose()  # idempotent
            await sock.aclose()
        await assert_all_closed(sock)
        assert "closed" in repr(sock)


@pytest.mark.parametrize("cls", [trizmq.Pair, trizmq.Push, trizmq.Pull, trizmq.XPub])
async def test_every_operation_raises_after_async_with(cls: type[trizmq.Socket]) -> None:
    with trio.fail_after(5):
        async with cls(bind="tcp://127.0.0.1:0") as sock:
            pass
        assert sock.closed
        await assert_all_closed(sock)
        await sock.aclose()
        with pytest.raises(RuntimeError):
            async with sock:
                pass


async def test_unread_frames_of_a_message_are_gone_after_close() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pull(bind="inproc://partial") as pull,
            trizmq.Push(connect="inproc://partial") as push,
        ):
            await push.send_multipart([b"a", b"b", b"c"])
            assert await pull.recv() == b"a"
            assert pull.rcvmore
            await pull.aclose()
            with pytest.raises(trio.ClosedResourceError):
                await pull.recv()
            with pytest.raises(trio.ClosedResourceError):
                pull.recv_nowait()
            with pytest.raises(trio.ClosedResourceError):
                await pull.recv_multipart()
            with pytest.raises(trio.ClosedResourceError):
                pull.recv_multipart_nowait()


async def test_operations_before_entering_raise() -> None:
    push = trizmq.Push()
    with pytest.raises(RuntimeError):
        await push.send(b"x")
    with pytest.raises(RuntimeError):
        await push.bind("inproc://never")
    assert "new" in repr(push)


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_blocked_receiver_and_sender_get_closed_resource_error(transport: str) -> None:
    with trio.fail_after(5):
        errors: list[str] = []

        async def expect_closed(name: str, op: Callable[[], Awaitable[Any]]) -> None:
            with pytest.raises(trio.ClosedResourceError):
                await op()
            errors.append(name)

        async with trizmq.Pull() as pull, trizmq.Push() as push, trizmq.Pair() as pair:
            endpoint = "inproc://blocked" if transport == "inproc" else "tcp://127.0.0.1:0"
            await pull.bind(endpoint)
            await push.bind(endpoint.replace("blocked", "blocked-push"))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(expect_closed, "recv", pull.recv)
                nursery.start_soon(expect_closed, "recv_multipart", pull.recv_multipart)
                nursery.start_soon(expect_closed, "recv_message", pull.recv_message)
                nursery.start_soon(expect_closed, "send", lambda: push.send(b"x"))
                nursery.start_soon(expect_closed, "pair", pair.recv)
                await wait_all_tasks_blocked()
                assert errors == []
                await pull.aclose()
                await push.aclose()
                await pair.aclose()
            assert sorted(errors) == ["pair", "recv", "recv_message", "recv_multipart", "send"]


async def test_async_for_ends_when_the_socket_closes() -> None:
    with trio.fail_after(5):
        got: list[list[bytes]] = []
        async with (
            trizmq.Pull(bind="inproc://iter") as pull,
            trizmq.Push(connect="inproc://iter") as push,
            trio.open_nursery() as nursery,
        ):

            async def consume() -> None:
                async for frames in pull:
                    got.append(frames)

            nursery.start_soon(consume)
            await push.send(b"one")
            await wait_all_tasks_blocked()
            await pull.aclose()
        assert got == [[b"one"]]


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_linger_bounds_close_of_undeliverable_messages(
    transport: str, autojump_clock: Any
) -> None:
    with trio.fail_after(100):
        start = trio.current_time()
        async with trizmq.Push(connect=nowhere(transport), linger=5) as push:
            await push.send(b"never delivered")
        assert trio.current_time() - start == pytest.approx(5, abs=0.5)


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_aclose_lingers_too(transport: str, autojump_clock: Any) -> None:
    with trio.fail_after(100):
        async with trizmq.Push(connect=nowhere(transport), linger=3) as push:
            await push.send(b"never delivered")
            start = trio.current_time()
            await push.aclose()
            assert trio.current_time() - start == pytest.approx(3, abs=0.5)


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_linger_zero_drops_at_once(transport: str, autojump_clock: Any) -> None:
    with trio.fail_after(100):
        start = trio.current_time()
        async with trizmq.Push(connect=nowhere(transport), linger=0) as push:
            await push.send(b"dropped")
        assert trio.current_time() - start < 0.01


async def test_close_without_pending_messages_does_not_linger(autojump_clock: Any) -> None:
    with trio.fail_after(100):
        start = trio.current_time()
        async with trizmq.Push(connect=nowhere("tcp"), linger=50):
            pass
        assert trio.current_time() - start < 0.01


async def test_flushed_messages_arrive_within_linger() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(connect=endpoint, linger=None) as push:
                for i in range(100):
                    await push.send(b"%d" % i)
            assert [await pull.recv() for _ in range(100)] == [b"%d" % i for i in range(100)]


async def test_body_exception_propagates_as_itself() -> None:
    with trio.fail_after(5):
        with pytest.raises(KeyError) as info:
            async with trizmq.Push(connect=nowhere("tcp"), linger=100) as push:
                await push.send(b"pending")
                raise KeyError("boom")
        assert type(info.value) is KeyError
        assert push.closed


async def test_bind_error_on_entry_propagates_as_itself() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull(bind="inproc://taken"):
            with pytest.raises(OSError) as info:
                async with trizmq.Pull(bind="inproc://taken"):
                    raise AssertionError("entered")
            # itself, not wrapped in an ExceptionGroup (a ZMQError that is an OSError)
            assert type(info.value) is trizmq.ZMQOSError


async def test_cancelling_the_owner_tears_down_at_once(autojump_clock: Any) -> None:
    with trio.fail_after(1000):
        start = trio.current_time()
        with trio.move_on_after(1) as scope:
            async with trizmq.Push(connect=nowhere("tcp"), linger=100) as push:
                await push.send(b"pending")
                await trio.sleep_forever()
        assert scope.cancelled_caught
        assert trio.current_time() - start == pytest.approx(1, abs=0.1)
        assert push.closed


async def test_no_task_outlives_its_sockets(tmp_path: Path) -> None:
    with trio.fail_after(10):
        before = trio.lowlevel.current_statistics().tasks_living
        async with trizmq.Pull() as pull, trizmq.Sub(subscribe=b"") as sub:
            events = pull.monitor()
            tcp = await pull.bind("tcp://127.0.0.1:0")
            ipc = await pull.bind(f"ipc://{tmp_path}/tasks")
            await pull.bind("inproc://tasks")
            async with (
                trizmq.Push(connect=tcp) as a,
                trizmq.Push(connect=ipc) as b,
                trizmq.Push(connect="inproc://tasks") as c,
                trizmq.Pub(heartbeat_ivl=0.05) as pub,
            ):
                await sub.connect(await pub.bind("tcp://127.0.0.1:0"))
                await handshakes(events, 2)
                for push in (a, b, c):
                    await push.send(b"x")
                for _ in range(3):
                    assert await pull.recv() == b"x"
                assert trio.lowlevel.current_statistics().tasks_living > before
            events.close()
        assert trio.lowlevel.current_statistics().tasks_living == before


async def test_unbind_removes_the_ipc_socket_file(tmp_path: Path) -> None:
    with trio.fail_after(5):
        path = tmp_path / "unbind.ipc"
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind(f"ipc://{path}")
            assert path.exists()
            await pull.unbind(endpoint)
            assert not path.exists()
            await pull.bind(f"ipc://{path}")
            assert path.exists()
        assert not path.exists()


async def test_unbind_stops_accepting_and_unknown_unbind_raises() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull() as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            await pull.unbind(endpoint)
            assert pull.statistics()["bound"] == []
            with pytest.raises(OSError):
                await pull.unbind(endpoint)
            with pytest.raises(OSError):
                await pull.disconnect("tcp://127.0.0.1:1")


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
async def test_reconnect_after_the_binder_restarts(transport: str, tmp_path: Path) -> None:
    with trio.fail_after(10):
        if transport == "tcp":
            endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
        else:
            endpoint = f"ipc://{tmp_path}/restart"
        async with trizmq.Push(connect=endpoint, reconnect_ivl=0.01) as push:
            events = push.monitor()
            async with trizmq.Pull(bind=endpoint) as pull:
                await push.send(b"first")
                assert await pull.recv() == b"first"
            await next_of(events, trizmq.Disconnected)
            # queued while nobody listens, kept across the reconnect
            await push.send(b"queued")
            async with trizmq.Pull(bind=endpoint) as pull:
                assert await pull.recv() == b"queued"
                await push.send(b"again")
                assert await pull.recv() == b"again"
            events.close()


async def test_inproc_rebind_takes_new_connects() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull(bind="inproc://rebind") as pull:
            await pull.unbind("inproc://rebind")
            await pull.bind("inproc://rebind")
            async with trizmq.Push(connect="inproc://rebind") as push:
                await push.send(b"x")
                assert await pull.recv() == b"x"


async def test_disconnect_drops_the_queue() -> None:
    with trio.fail_after(5):
        endpoint = nowhere("tcp")
        async with trizmq.Push(connect=endpoint, linger=100) as push:
            await push.send(b"dropped")
            await push.disconnect(endpoint)
            assert push.statistics()["connected"] == []
            with pytest.raises(trio.WouldBlock):
                push.send_nowait(b"no peer")


async def test_inproc_linger_ends_when_a_binder_takes_the_queue(autojump_clock: Any) -> None:
    with trio.fail_after(1000):
        async with trizmq.Pull() as pull:
            start = trio.current_time()

            async def push_and_close() -> None:
                async with trizmq.Push(connect="inproc://late", linger=100) as push:
                    await push.send(b"waited for a binder")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(push_and_close)
                await trio.sleep(1)
                await pull.bind("inproc://late")
            assert trio.current_time() - start == pytest.approx(1)
            assert await pull.recv() == b"waited for a binder"


async def test_concurrent_aclose_calls_all_wait_for_the_close(autojump_clock: Any) -> None:
    with trio.fail_after(1000):
        finished: list[float] = []
        async with trizmq.Push(connect=nowhere("inproc"), linger=5) as push:
            await push.send(b"pending")
            start = trio.current_time()

            async def close() -> None:
                await push.aclose()
                finished.append(trio.current_time() - start)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(close)
                nursery.start_soon(close)
        assert finished == [pytest.approx(5), pytest.approx(5)]
