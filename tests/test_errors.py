"""Errors a pyzmq user expects: what the system refuses is both a ``trizmq.ZMQError``
and an ``OSError`` with its errno (and the builtin subclass of that errno); misuse
raises ``TypeError`` with a sentence."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import trio

import trizmq


async def test_bind_in_use_is_zmq_error_and_oserror() -> None:
    with trio.fail_after(5):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as first, trizmq.Pull() as second:
            endpoint = first.statistics()["bound"][0]
            with pytest.raises(trizmq.ZMQError) as caught:
                await second.bind(endpoint)
            assert isinstance(caught.value, OSError)
            assert isinstance(caught.value, trizmq.ZMQOSError)
            assert caught.value.errno == errno.EADDRINUSE
            assert endpoint in str(caught.value)
            with pytest.raises(OSError):  # the other spelling catches it as well
                await second.bind(endpoint)


async def test_ipc_and_inproc_binds_in_use(tmp_path: Path) -> None:
    with trio.fail_after(5):
        path = f"ipc://{tmp_path}/busy.ipc"
        async with trizmq.Pull(bind=[path, "inproc://busy"]), trizmq.Pull() as second:
            for endpoint in (path, "inproc://busy"):
                with pytest.raises(trizmq.ZMQOSError) as caught:
                    await second.bind(endpoint)
                assert caught.value.errno == errno.EADDRINUSE


async def test_unbind_disconnect_and_connect_twice_keep_their_builtin_class() -> None:
    with trio.fail_after(5):
        async with trizmq.Push(linger=0) as push:
            with pytest.raises(FileNotFoundError) as not_bound:
                await push.unbind("tcp://127.0.0.1:9")
            assert isinstance(not_bound.value, trizmq.ZMQError)
            with pytest.raises(trizmq.ZMQError) as not_connected:
                await push.disconnect("tcp://127.0.0.1:9")
            assert not_connected.value.errno == errno.ENOENT
            await push.connect("tcp://127.0.0.1:9")
            with pytest.raises(trizmq.ZMQOSError) as twice:
                await push.connect("tcp://127.0.0.1:9")
            assert twice.value.errno == errno.EISCONN


async def test_an_unresolvable_udp_host_is_a_zmq_error() -> None:
    with trio.fail_after(10):
        async with trizmq.Radio(linger=0) as radio:
            with pytest.raises(trizmq.ZMQError):
                await radio.connect("udp://no-such-host.invalid:5555")


def test_the_base_class_makes_no_socket() -> None:
    with pytest.raises(TypeError, match=r"use trizmq\.Push, Pull"):
        trizmq.Socket()


@pytest.mark.parametrize("forever", [None, -1])
def test_linger_forever_is_none_or_minus_one(forever: int | None) -> None:
    assert trizmq.Push(linger=forever).options.linger is None


def test_a_bad_topic_follows_the_two_rules() -> None:
    """An option's bad value is a ValueError naming the option (the constructor's
    rule); a method's argument of the wrong type is a TypeError (Python's)."""
    with pytest.raises(ValueError, match="subscribe"):
        trizmq.Sub(subscribe=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="subscribe"):
        trizmq.Sub().set_options(subscribe=[b"ok", 2])
    with pytest.raises(TypeError, match="a topic must be bytes or str"):
        trizmq.Sub().subscribe(1)  # type: ignore[arg-type]


def test_a_socket_used_in_another_trio_run_says_so() -> None:
    pull = trizmq.Pull()

    async def first() -> None:
        async with pull:
            pass

    async def second() -> None:
        with pytest.raises(RuntimeError, match=r"belongs to another trio\.run"):
            await pull.recv()
        with pytest.raises(RuntimeError, match=r"belongs to another trio\.run"):
            await pull.bind("tcp://127.0.0.1:0")

    trio.run(first)
    trio.run(second)


async def test_a_closed_socket_in_its_own_run_is_just_closed() -> None:
    async with trizmq.Pull() as pull:
        pass
    with pytest.raises(trio.ClosedResourceError):
        await pull.recv()
