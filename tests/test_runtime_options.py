"""Options at run time: ``sock.options`` and ``sock.set_options()`` (API.md), the
constructor's errors with suggestions, and each kind of change taking effect."""

from __future__ import annotations

import attrs
import pytest
import trio

import trizmq

GREETING = b"\xff" + bytes(8) + b"\x7f\x03\x01NULL" + bytes(16) + b"\x00" + bytes(31)
READY_PUSH = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"


def test_options_are_the_validated_values_with_defaults() -> None:
    push = trizmq.Push(sndhwm=5, linger=-1, connect="tcp://127.0.0.1:5555")
    options = push.options
    assert options.sndhwm == 5 and options.rcvhwm == 1000
    assert options.linger is None  # -1: until flushed
    assert [str(e) for e in options.connect] == ["tcp://127.0.0.1:5555"]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.sndhwm = 7  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "suggestion"),
    [("snd_hwm", "sndhwm"), ("lingr", "linger"), ("hearbeat_ivl", "heartbeat_ivl")],
)
def test_unknown_names_get_a_suggestion(given: str, suggestion: str) -> None:
    with pytest.raises(TypeError, match=f"did you mean '{suggestion}'"):
        trizmq.Push(**{given: 1})
    with pytest.raises(TypeError, match=f"did you mean '{suggestion}'"):
        trizmq.Push().set_options(**{given: 1})


def test_set_options_checks_as_the_constructor_does() -> None:
    push = trizmq.Push()
    with pytest.raises(ValueError, match="sndhwm must be an int >= 0"):
        push.set_options(sndhwm=-1)
    with pytest.raises(TypeError, match="does not apply to a PUSH socket"):
        push.set_options(router_mandatory=True)
    with pytest.raises(TypeError, match=r"cannot change at run time: call bind\(\)"):
        push.set_options(bind="tcp://127.0.0.1:0")
    with pytest.raises(TypeError, match="nonsense"):
        push.set_options(nonsense=1)
    assert push.options == trizmq.Push().options  # nothing half-applied


async def test_hwms_apply_to_peers_made_afterwards() -> None:
    with trio.fail_after(5):
        async with trizmq.Push(sndhwm=3, linger=0) as push:
            await push.connect("tcp://127.0.0.1:1")  # nobody there: the queue waits
            push.set_options(sndhwm=7)
            assert push.options.sndhwm == 7
            await push.connect("tcp://127.0.0.1:2")
            peers = push._runtime.peers  # type: ignore[union-attr]
            assert sorted(p.out_pipe.statistics()["hwm"] for p in peers) == [3, 7]


async def test_router_mandatory_takes_effect_at_once() -> None:
    with trio.fail_after(5):
        async with trizmq.Router() as router:
            await router.send_multipart([b"nobody", b"dropped silently"])
            router.set_options(router_mandatory=True)
            with pytest.raises(trizmq.HostUnreachable):
                await router.send_multipart([b"nobody", b"now refused"])


async def test_subscribe_adds_subscriptions() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pub(bind="inproc://rt-sub") as pub,
            trizmq.Sub(connect="inproc://rt-sub", subscribe=b"a") as sub,
        ):
            sub.set_options(subscribe=[b"b", "c"])
            assert sub.options.subscribe == (b"a", b"b", b"c")
            for topic in (b"x-no", b"b-yes", b"c-yes", b"a-yes"):
                await pub.send(topic)
            assert [await sub.recv() for _ in range(3)] == [b"b-yes", b"c-yes", b"a-yes"]


async def test_xpub_verbose_changes_what_the_application_sees() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.XPub(bind="inproc://rt-xpub") as xpub,
            trizmq.Sub(connect="inproc://rt-xpub", subscribe=b"t"),
        ):
            assert await xpub.recv() == b"\x01t"
            xpub.set_options(xpub_verbose=True)
            async with trizmq.Sub(connect="inproc://rt-xpub", subscribe=b"t"):
                assert await xpub.recv() == b"\x01t"  # a duplicate, shown now


async def test_heartbeats_set_at_run_time_apply_to_new_connections() -> None:
    """A peer that handshakes and then goes silent is dropped by the heartbeat set
    after construction (before it connected)."""
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as pull, pull.monitor() as events:
            pull.set_options(heartbeat_ivl=0.05, heartbeat_timeout=0.1)
            endpoint = pull.statistics()["bound"][0]
            host, _, port = endpoint.partition("://")[2].rpartition(":")
            async with await trio.open_tcp_stream(host, int(port)) as stream:
                await stream.send_all(GREETING + READY_PUSH)
                async for event in events:  # never read again: PINGs go unanswered
                    if isinstance(event, trizmq.Disconnected):
                        break
            assert pull.statistics()["live_peers"] == 0


async def test_linger_set_at_run_time_is_the_one_close_uses() -> None:
    with trio.fail_after(5):
        push = trizmq.Push(linger=30)
        async with push:
            await push.connect("tcp://127.0.0.1:1")  # nobody: the message stays queued
            await push.send(b"never delivered")
            push.set_options(linger=0)
        # closed at once: a linger of 30 s would have failed the 5 s bound
