"""TLS reads in one go (``trizmq.nursery.fastpath.tls_input.TlsInput``): after an awaited read of
trio's ``SSLStream``, every record TLS can decrypt without I/O comes with it, the bytes
whole and in order, and nothing of it where the stream is not one it knows."""

from __future__ import annotations

import ssl
from types import SimpleNamespace

import pytest
import trio
import trio.testing
import trustme

import trizmq
from trizmq._options import Options
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.tls_input import TlsInput
from trizmq.nursery.handshake_io import RECEIVE_SIZE
from trizmq.nursery.heartbeat import Heartbeat
from trizmq.zmtp.events import Ping

RECORD = 16 * 1024  # the most one TLS record carries


@pytest.fixture(scope="module")
def contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The class itself is tested here, whatever ``TRIZMQ_FASTPATH`` says (the
    runtime test at the end takes the path the environment chooses)."""
    monkeypatch.setattr(fastpath, "ENABLED", True)


Memory = trio.StapledStream[trio.testing.MemorySendStream, trio.testing.MemoryReceiveStream]


def tls_pair(
    contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> tuple[trio.SSLStream[Memory], trio.SSLStream[Memory]]:
    left, right = trio.testing.memory_stream_pair()
    server = trio.SSLStream(left, contexts[0], server_side=True)
    client = trio.SSLStream(right, contexts[1], server_hostname="localhost")
    return server, client


async def test_the_records_held_come_with_the_read(
    enabled: None,
    contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server, client = tls_pair(contexts)
    tls = TlsInput.of(server)
    assert tls is not None
    payload = bytes(range(256)) * 2048  # 512 KiB: 32 records
    got = bytearray()
    sizes: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.send_all, payload)
        while len(got) < len(payload):
            data = await tls.receive()
            assert data
            sizes.append(len(data))
            got += data
    assert got == payload
    # trio's call alone gives one record a read; here most reads hold several
    assert max(sizes) > RECORD and max(sizes) <= RECEIVE_SIZE
    assert len(sizes) < len(payload) // RECORD


async def test_a_ttl_bounds_the_wait(
    enabled: None, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server, client = tls_pair(contexts)
    tls = TlsInput.of(server)
    assert tls is not None
    with trio.fail_after(5):
        # the handshake first, both sides driven: a TTL that ran out before the
        # client's handshake finished would leave it with nobody to answer it
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.do_handshake)
            nursery.start_soon(server.do_handshake)
        # a TLS read waits within a peer's TTL as every input does: the heartbeat's
        heartbeat = Heartbeat(SimpleNamespace(), Options())  # type: ignore[arg-type]
        heartbeat.ping_received(Ping(0.05, b""))
        assert await heartbeat.within_ttl(tls.receive) is None
        await client.send_all(b"late")
        heartbeat.ping_received(Ping(1.0, b""))
        assert await heartbeat.within_ttl(tls.receive) == b"late"


async def test_the_end_of_the_stream_is_an_empty_read(
    enabled: None,
    contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    left, right = trio.testing.memory_stream_pair()
    # as the wss listener makes it: a peer that closes without close_notify ends it
    server = trio.SSLStream(left, contexts[0], server_side=True, https_compatible=True)
    client = trio.SSLStream(right, contexts[1], server_hostname="localhost")
    tls = TlsInput.of(server)
    assert tls is not None
    async with trio.open_nursery() as nursery:

        async def talk() -> None:
            await client.send_all(b"bye")
            await client.aclose()

        nursery.start_soon(talk)
        got = b""
        while data := await tls.receive():
            got += data
    assert got == b"bye"


def test_only_a_tls_stream_on_the_fast_path_gets_it(
    monkeypatch: pytest.MonkeyPatch, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server, _ = tls_pair(contexts)
    assert TlsInput.of(server.transport_stream) is None
    monkeypatch.setattr(server, "_ssl_object", None)
    assert TlsInput.of(server) is None  # a trio whose insides moved
    monkeypatch.undo()
    monkeypatch.setattr(fastpath, "ENABLED", False)
    assert TlsInput.of(server) is None


async def test_wss_messages_arrive_whole_and_in_order(
    contexts: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    """Through the runtime: 4 KiB messages cut across TLS records, read several
    records at a time."""
    server_context, client_context = contexts
    with trio.fail_after(20):
        async with (
            trizmq.Pull(bind="wss://127.0.0.1:0/", ssl_context=server_context) as pull,
            trizmq.Push(connect=pull.statistics()["bound"][0], ssl_context=client_context) as push,
            trio.open_nursery() as nursery,
        ):

            async def send() -> None:
                for i in range(2000):
                    await push.send(i.to_bytes(4, "big") * 1024)

            nursery.start_soon(send)
            for i in range(2000):
                assert await pull.recv() == i.to_bytes(4, "big") * 1024
