"""The socket monitor reports typed events for binds, connections and handshakes."""

from __future__ import annotations

import logging

import pytest
import trio

import trizmq


async def next_of(events: trizmq.Monitor, kind: type[trizmq.MonitorEvent]) -> trizmq.MonitorEvent:
    """The next event of ``kind``, skipping others."""
    async for event in events:
        if isinstance(event, kind):
            return event
    raise AssertionError(f"monitor ended before a {kind.__name__} event")


async def test_bind_accept_handshake_disconnect_close() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull, pull.monitor() as events:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            assert await events.__anext__() == trizmq.Listening(endpoint)
            async with trizmq.Push(connect=endpoint) as push:
                await push.send(b"x")
                assert await pull.recv() == b"x"
                accepted = await next_of(events, trizmq.Accepted)
                assert accepted.endpoint == endpoint
                assert accepted.address.startswith("127.0.0.1:")
                done = await next_of(events, trizmq.HandshakeSucceeded)
                assert done.peer_type == "PUSH"
            gone = await next_of(events, trizmq.Disconnected)
            assert gone.endpoint == endpoint
            await pull.unbind(endpoint)
            assert await next_of(events, trizmq.Closed) == trizmq.Closed(endpoint)


async def test_connecter_events_and_retries() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as probe:
            endpoint = probe.statistics()["bound"][0]
        # nothing listens there now: the connecter reports delays and retries
        async with trizmq.Push(reconnect_ivl=0.01) as push, push.monitor() as events:
            await push.connect(endpoint)
            delayed = await next_of(events, trizmq.ConnectDelayed)
            assert delayed.endpoint == endpoint
            retried = await next_of(events, trizmq.ConnectRetried)
            assert 0.009 <= retried.interval <= 0.011
            async with trizmq.Pull(bind=endpoint) as pull:
                await next_of(events, trizmq.Connected)
                done = await next_of(events, trizmq.HandshakeSucceeded)
                assert done.peer_type == "PULL"
                await push.send(b"late")
                assert await pull.recv() == b"late"


async def test_handshake_failed_reports_reason(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as pull, pull.monitor() as events:
            endpoint = pull.statistics()["bound"][0]
            async with trizmq.Pub() as pub, pub.monitor() as pub_events:
                await pub.connect(endpoint)
                # whichever side parses the other's READY first refuses; the other sees EOF
                failed = [
                    await next_of(events, trizmq.HandshakeFailed),
                    await next_of(pub_events, trizmq.HandshakeFailed),
                ]
            assert any("incompatible socket type" in f.reason for f in failed), failed
            assert "incompatible socket type" in caplog.text


async def test_bind_failed_event_and_error() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as first:
            endpoint = first.statistics()["bound"][0]
            async with trizmq.Pull() as second, second.monitor() as events:
                with pytest.raises(OSError):
                    await second.bind(endpoint)
                failed = await events.__anext__()
                assert isinstance(failed, trizmq.BindFailed)
                assert failed.endpoint == endpoint


async def test_monitor_ends_when_socket_closes_and_is_bounded() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull:
            events = pull.monitor(capacity=2)
            for i in range(4):
                await pull.bind(f"inproc://mon-{i}")
        seen = [event async for event in events]
        assert seen == [trizmq.Listening("inproc://mon-0"), trizmq.Listening("inproc://mon-1")]
        assert events.dropped >= 2
        with pytest.raises(trio.ClosedResourceError):
            pull.monitor()
