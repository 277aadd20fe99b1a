"""Tests of the ipc:// transport: paths, stale files, abstract names, cleanup."""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import stat
import sys
import tempfile
from pathlib import Path

import pytest
import trio
from trio.testing import check_half_closeable_stream, wait_all_tasks_blocked

from trizmq._endpoint import parse_endpoint
from trizmq.transport import IPCListener, Listener, connect, listen

pytestmark = pytest.mark.skipif(
    not hasattr(socket, "AF_UNIX"), reason="ipc:// needs Unix-domain sockets"
)

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the abstract socket namespace is Linux-only"
)


async def _listen(text: str) -> Listener:
    return await listen(parse_endpoint(text, for_bind=True))


async def _pair(listener: Listener, connect_to: str) -> tuple[trio.SocketStream, trio.SocketStream]:
    # A Unix connect completes through the listen backlog, so no task needs to
    # accept concurrently.
    client = await connect(parse_endpoint(connect_to, for_bind=False))
    server, peer = await listener.accept()
    assert peer == ""
    assert isinstance(client, trio.SocketStream)
    assert isinstance(server, trio.SocketStream)
    return client, server


async def _exchange(a: trio.abc.Stream, b: trio.abc.Stream) -> None:
    await a.send_all(b"ping")
    assert await b.receive_some(100) == b"ping"
    await b.send_all(b"pong")
    assert await a.receive_some(100) == b"pong"


def _make_stale_socket_file(path: Path) -> None:
    # A bound-then-closed socket leaves its file behind, as a crashed process would.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))
    assert stat.S_ISSOCK(path.lstat().st_mode)


async def test_bind_connect_and_talk(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        listener = await _listen(f"ipc://{path}")
        try:
            assert isinstance(listener, IPCListener)
            assert listener.endpoint == f"ipc://{path}"
            assert stat.S_ISSOCK(path.lstat().st_mode)
            client, server = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()


async def test_file_removed_after_aclose(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        listener = await _listen(f"ipc://{path}")
        assert path.exists()
        await listener.aclose()
        assert not path.exists()
        await listener.aclose()  # idempotent
        with pytest.raises(trio.ClosedResourceError):
            await listener.accept()


async def test_aclose_wakes_a_pending_accept(tmp_path: Path) -> None:
    with trio.fail_after(10):
        listener = await _listen(f"ipc://{tmp_path / 's.ipc'}")
        failed = trio.Event()

        async def acceptor() -> None:
            with pytest.raises(trio.ClosedResourceError):
                await listener.accept()
            failed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(acceptor)
            await wait_all_tasks_blocked()
            await listener.aclose()
        assert failed.is_set()


async def test_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        _make_stale_socket_file(path)
        listener = await _listen(f"ipc://{path}")
        try:
            client, server = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()
        assert not path.exists()


async def test_live_listener_is_eaddrinuse(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        listener = await _listen(f"ipc://{path}")
        try:
            with pytest.raises(OSError) as info:
                await _listen(f"ipc://{path}")
            assert info.value.errno == errno.EADDRINUSE
            assert f"ipc://{path}" in str(info.value)
            assert "already in use" in str(info.value)
            # The liveness probe reached the listener as a connection that closes at
            # once (as a port scan would); the ZMTP layer drops it at the greeting.
            probe, _ = await listener.accept()
            async with probe:
                assert await probe.receive_some(10) == b""
            # The failed bind neither removed nor broke the live listener.
            assert stat.S_ISSOCK(path.lstat().st_mode)
            client, server = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()


async def test_regular_file_is_not_deleted(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "precious.txt"
        path.write_text("user data")
        with pytest.raises(OSError) as info:
            await _listen(f"ipc://{path}")
        assert f"ipc://{path}" in str(info.value)
        assert "not a socket" in str(info.value)
        assert path.read_text() == "user data"


async def test_aclose_spares_a_file_that_replaced_ours(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        listener = await _listen(f"ipc://{path}")
        path.unlink()
        path.write_text("someone else's")
        await listener.aclose()
        assert path.read_text() == "someone else's"


async def test_relative_path_is_cleaned_up_after_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with trio.fail_after(10):
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path)
        listener = await _listen("ipc://rel.ipc")
        try:
            assert listener.endpoint == "ipc://rel.ipc"
            assert (tmp_path / "rel.ipc").exists()
            client, server = await _pair(listener, "ipc://rel.ipc")
            async with client, server:
                await _exchange(client, server)
            monkeypatch.chdir(tmp_path / "elsewhere")
        finally:
            await listener.aclose()
        assert not (tmp_path / "rel.ipc").exists()


async def test_wildcard_path(tmp_path: Path) -> None:
    with trio.fail_after(10):
        listener = await _listen("ipc://*")
        path = Path(listener.endpoint.removeprefix("ipc://"))
        try:
            assert listener.endpoint.startswith("ipc://")
            assert path.parent == Path(tempfile.gettempdir())
            assert stat.S_ISSOCK(path.lstat().st_mode)
            other = await _listen("ipc://*")
            try:
                assert other.endpoint != listener.endpoint
            finally:
                await other.aclose()
            client, server = await _pair(listener, listener.endpoint)
            async with client, server:
                await _exchange(client, server)
        finally:
            await listener.aclose()
        assert not path.exists()


@linux_only
async def test_abstract_namespace() -> None:
    with trio.fail_after(10):
        text = f"ipc://@trizmq-test-{os.getpid()}-{secrets.token_hex(6)}"
        listener = await _listen(text)
        try:
            assert listener.endpoint == text
            client, server = await _pair(listener, text)
            async with client, server:
                await _exchange(client, server)
            with pytest.raises(OSError) as info:
                await _listen(text)
            assert info.value.errno == errno.EADDRINUSE
            assert text in str(info.value)
        finally:
            await listener.aclose()
        # The name disappears with the socket: binding it again works.
        again = await _listen(text)
        await again.aclose()
        with pytest.raises(ConnectionRefusedError):
            await connect(parse_endpoint(text, for_bind=False))


async def test_connect_missing_path_is_oserror(tmp_path: Path) -> None:
    with trio.fail_after(10):
        text = f"ipc://{tmp_path / 'nobody.ipc'}"
        with pytest.raises(OSError) as info:
            await connect(parse_endpoint(text, for_bind=False))
        assert info.value.errno == errno.ENOENT
        assert text in str(info.value)


async def test_connect_stale_file_is_refused(tmp_path: Path) -> None:
    with trio.fail_after(10):
        path = tmp_path / "s.ipc"
        _make_stale_socket_file(path)
        with pytest.raises(ConnectionRefusedError, match=re.escape(str(path))):
            await connect(parse_endpoint(f"ipc://{path}", for_bind=False))


async def _fill_stream(stream: trio.SocketStream) -> None:
    async def sender() -> None:
        while True:
            await stream.send_all(b"x" * 10000)

    async def stop_when_blocked(nursery: trio.Nursery) -> None:
        await wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        nursery.start_soon(stop_when_blocked, nursery)


async def test_ipc_stream_conformance(tmp_path: Path) -> None:
    counter = 0

    async def stream_maker() -> tuple[trio.SocketStream, trio.SocketStream]:
        nonlocal counter
        counter += 1
        listener = await _listen(f"ipc://{tmp_path / f'c{counter}.ipc'}")
        try:
            return await _pair(listener, listener.endpoint)
        finally:
            await listener.aclose()

    async def clogged_stream_maker() -> tuple[trio.SocketStream, trio.SocketStream]:
        left, right = await stream_maker()
        await _fill_stream(left)
        await _fill_stream(right)
        return left, right

    with trio.fail_after(10):
        await check_half_closeable_stream(stream_maker, clogged_stream_maker)
