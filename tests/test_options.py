"""Bad input to the public API gets a clear error, at the call that made it.

* a bad option value: ``ValueError`` naming the option, from the constructor;
* an unknown option, or one for another socket type: ``TypeError`` naming it;
* a bad endpoint: ``trizmq.EndpointError`` (a ``ValueError`` and a ``ZMQError``)
  naming the endpoint, from the constructor or from ``bind``/``connect``;
* a port in use: ``OSError`` naming the endpoint, raised as itself from ``async with``;
* a ``str`` frame: ``TypeError``; an operation the type cannot do: ``NotSupportedError``.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import pytest
import trio

import trizmq

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

ALL_TYPES = [
    trizmq.Pair,
    trizmq.Push,
    trizmq.Pull,
    trizmq.Pub,
    trizmq.Sub,
    trizmq.XPub,
    trizmq.XSub,
    trizmq.Req,
    trizmq.Rep,
    trizmq.Dealer,
    trizmq.Router,
]

# -- option values -------------------------------------------------------------------------

BAD_VALUES: list[tuple[type[trizmq.Socket], str, Any]] = [
    (trizmq.Push, "sndhwm", -1),
    (trizmq.Push, "sndhwm", 1.5),
    (trizmq.Push, "sndhwm", True),
    (trizmq.Push, "sndhwm", "10"),
    (trizmq.Pull, "rcvhwm", -1),
    (trizmq.Pull, "rcvhwm", None),
    (trizmq.Push, "linger", "x"),
    (trizmq.Push, "linger", -2),
    (trizmq.Pull, "backlog", 0),
    (trizmq.Pull, "backlog", True),
    (trizmq.Pull, "backlog", 1.5),
    (trizmq.Push, "linger", -0.5),
    (trizmq.Push, "linger", math.nan),
    (trizmq.Push, "linger", True),
    (trizmq.Dealer, "routing_id", b""),
    (trizmq.Dealer, "routing_id", b"x" * 256),
    (trizmq.Dealer, "routing_id", "name"),
    (trizmq.Dealer, "routing_id", 7),
    (trizmq.Push, "reconnect_ivl", -1),
    (trizmq.Push, "reconnect_ivl", None),
    (trizmq.Push, "reconnect_ivl", "1"),
    (trizmq.Push, "reconnect_ivl_max", -0.5),
    (trizmq.Push, "heartbeat_ivl", 0),
    (trizmq.Push, "heartbeat_ivl", -1),
    (trizmq.Push, "heartbeat_timeout", 0),
    (trizmq.Push, "heartbeat_ttl", -2),
    (trizmq.Push, "heartbeat_ttl", "5"),
    (trizmq.Push, "immediate", "yes"),
    (trizmq.Push, "immediate", 1),
    (trizmq.Push, "immediate", None),
    (trizmq.Pull, "maxmsgsize", -5),
    (trizmq.Pull, "maxmsgsize", 1.5),
    (trizmq.Pull, "maxmsgsize", True),
    (trizmq.Pull, "maxmsgsize", "1k"),
    (trizmq.Pull, "max_frames", 0),
    (trizmq.Pull, "max_frames", -5),
    (trizmq.Pull, "max_frames", 1.5),
    (trizmq.Pull, "max_frames", True),
    (trizmq.Pub, "max_subscriptions", 0),
    (trizmq.XPub, "max_subscriptions_total", -1),
    (trizmq.Pub, "max_subscription_bytes", "4M"),
    (trizmq.Sub, "subscribe", [1]),
    (trizmq.Sub, "subscribe", [b"ok", None]),
    (trizmq.Sub, "subscribe", 5),
    (trizmq.Push, "handshake_ivl", 0),
    (trizmq.Push, "handshake_ivl", -1),
    (trizmq.Push, "handshake_ivl", "30"),
    (trizmq.Pull, "greeting_ivl", 0),
    (trizmq.Pull, "greeting_ivl", -1),
    (trizmq.Pull, "greeting_ivl", "5"),
    (trizmq.Push, "security", "CURVE"),
    (trizmq.Router, "router_mandatory", "yes"),
    (trizmq.Router, "router_handover", 1),
    (trizmq.XPub, "xpub_verbose", "on"),
    (trizmq.Push, "bind", 5),
    (trizmq.Push, "connect", 5),
    (trizmq.Push, "connect", [5]),
]


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    BAD_VALUES,
    ids=[f"{c.__name__}-{n}={v!r}"[:60] for c, n, v in BAD_VALUES],
)
def test_bad_option_value_raises_value_error_naming_it(
    cls: type[trizmq.Socket], name: str, value: Any
) -> None:
    # a plain (sync) constructor call: nothing is entered, no event loop is needed
    with pytest.raises(ValueError, match=re.escape(name)) as excinfo:
        cls(**{name: value})
    assert not isinstance(excinfo.value, TypeError)


@pytest.mark.parametrize(
    ("cls", "options"),
    [
        (trizmq.Push, {"sndhwm": 0, "rcvhwm": 0}),
        (trizmq.Push, {"linger": None}),
        (trizmq.Push, {"linger": 0}),
        (trizmq.Dealer, {"routing_id": b"x"}),
        (trizmq.Dealer, {"routing_id": bytearray(b"y" * 255)}),
        (trizmq.Push, {"heartbeat_ivl": 0.5, "heartbeat_timeout": 1, "heartbeat_ttl": 2}),
        (trizmq.Pull, {"maxmsgsize": 0}),
        (trizmq.Pull, {"maxmsgsize": -1}),
        (trizmq.Pull, {"maxmsgsize": None}),
        (trizmq.Pull, {"max_frames": 1}),
        (trizmq.Pull, {"max_frames": None}),
        (trizmq.Pull, {"max_frames": -1}),
        (trizmq.Pub, {"max_subscriptions": 1, "max_subscription_bytes": 10}),
        (trizmq.XPub, {"max_subscriptions_total": 5}),
        (trizmq.Radio, {"max_subscriptions": 3, "max_subscriptions_total": 3}),
        (trizmq.Push, {"handshake_ivl": None}),
        (trizmq.Pull, {"greeting_ivl": None}),
        (trizmq.Pull, {"backlog": 1}),
        (trizmq.Router, {"backlog": 65_535}),
        (trizmq.Pull, {"greeting_ivl": 0.5, "max_handshakes": 1}),
        (trizmq.Sub, {"subscribe": "text"}),
        (trizmq.Sub, {"subscribe": [b"a", "b", bytearray(b"c")]}),
        (trizmq.Push, {"bind": ["tcp://127.0.0.1:0", "ipc://*"], "connect": ()}),
    ],
)
def test_good_option_values_are_accepted(cls: type[trizmq.Socket], options: dict[str, Any]) -> None:
    cls(**options)


@pytest.mark.parametrize("cls", ALL_TYPES)
def test_unknown_option_raises_type_error_naming_it(cls: type[trizmq.Socket]) -> None:
    with pytest.raises(TypeError, match="sndhmw"):
        cls(sndhmw=10)


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    [
        (trizmq.Sub, "router_mandatory", True),
        (trizmq.Push, "subscribe", b"a"),
        (trizmq.XSub, "subscribe", b"a"),
        (trizmq.Pub, "xpub_verbose", True),
        (trizmq.Pull, "router_handover", False),
        (trizmq.Rep, "req_correlate", True),
        (trizmq.Pair, "probe_router", True),
    ],
)
def test_option_of_another_type_raises_type_error_naming_it(
    cls: type[trizmq.Socket], name: str, value: Any
) -> None:
    with pytest.raises(TypeError, match=name):
        cls(**{name: value})


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        trizmq.Push("tcp://127.0.0.1:5555")  # type: ignore[call-arg]


# -- endpoints ---------------------------------------------------------------------------------

BAD_BIND = [
    "bogus",
    "",
    "tcp://",
    "tcp://127.0.0.1",
    "tcp://127.0.0.1:99999",
    "tcp://127.0.0.1:port",
    "tcp://::1:5555",
    "foo://bar",
    "pgm://eth0;239.1.1.1:5555",
    "ipc://" + "x" * 200,
]
BAD_CONNECT = [*BAD_BIND, "tcp://*:0", "tcp://*:5555", "tcp://127.0.0.1:0", "ipc://*"]


def _named(endpoint: str) -> str:
    return re.escape(repr(endpoint))


@pytest.mark.parametrize("endpoint", BAD_BIND)
def test_bad_bind_endpoint_in_constructor(endpoint: str) -> None:
    with pytest.raises(trizmq.EndpointError, match=_named(endpoint)) as excinfo:
        trizmq.Pull(bind=endpoint)
    assert isinstance(excinfo.value, ValueError)
    assert isinstance(excinfo.value, trizmq.ZMQError)


@pytest.mark.parametrize("endpoint", BAD_CONNECT)
def test_bad_connect_endpoint_in_constructor(endpoint: str) -> None:
    with pytest.raises(trizmq.EndpointError, match=_named(endpoint)):
        trizmq.Push(connect=endpoint)
    # one bad endpoint in a list is enough
    with pytest.raises(trizmq.EndpointError, match=_named(endpoint)):
        trizmq.Push(connect=["tcp://127.0.0.1:5555", endpoint])


async def test_bad_endpoints_at_the_call_leave_the_socket_usable() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull, trizmq.Push(linger=0) as push:
            for endpoint in BAD_BIND:
                with pytest.raises(trizmq.EndpointError, match=_named(endpoint)):
                    await pull.bind(endpoint)
            for endpoint in BAD_CONNECT:
                with pytest.raises(trizmq.EndpointError, match=_named(endpoint)):
                    await push.connect(endpoint)
            with pytest.raises(trizmq.EndpointError):
                await pull.bind(5)  # type: ignore[arg-type]
            # the errors left nothing behind: the sockets still work
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            await push.connect(endpoint)
            await push.send(b"still fine")
            assert await pull.recv() == b"still fine"


async def test_port_in_use_on_entry_raises_oserror_as_itself() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as first:
            taken = await first.bind("tcp://127.0.0.1:0")
            with pytest.raises(OSError, match=re.escape(taken)) as excinfo:
                async with trizmq.Pull(bind=taken):
                    pytest.fail("entered a socket whose bind failed")  # pragma: no cover
            assert not isinstance(excinfo.value, BaseExceptionGroup)
            assert not isinstance(excinfo.value, trizmq.EndpointError)

            # with an earlier endpoint that did bind: it is released again
            with pytest.raises(OSError, match=re.escape(taken)) as excinfo:
                async with trizmq.Pull(bind=["tcp://127.0.0.1:0", taken]):
                    pytest.fail("entered a socket whose bind failed")  # pragma: no cover
            assert not isinstance(excinfo.value, BaseExceptionGroup)


async def test_port_in_use_held_by_another_program() -> None:
    with trio.fail_after(10):
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        try:
            port = listeners[0].socket.getsockname()[1]
            taken = f"tcp://127.0.0.1:{port}"
            with pytest.raises(OSError, match=re.escape(taken)) as excinfo:
                async with trizmq.Push(bind=taken):
                    pytest.fail("entered a socket whose bind failed")  # pragma: no cover
            assert not isinstance(excinfo.value, BaseExceptionGroup)
            # at the call: raised there, and the socket goes on
            async with trizmq.Push() as push:
                with pytest.raises(OSError, match=re.escape(taken)):
                    await push.bind(taken)
                assert (await push.bind("tcp://127.0.0.1:0")).startswith("tcp://127.0.0.1:")
        finally:
            for listener in listeners:
                await listener.aclose()


async def test_ipc_path_in_use_raises_oserror_naming_it() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as first:
            taken = await first.bind("ipc://*")
            with pytest.raises(OSError, match=re.escape(taken)) as excinfo:
                async with trizmq.Pull(bind=taken):
                    pytest.fail("entered a socket whose bind failed")  # pragma: no cover
            assert not isinstance(excinfo.value, BaseExceptionGroup)


# -- frames and operations ---------------------------------------------------------------------


async def test_str_and_other_non_bytes_frames_raise_type_error() -> None:
    with trio.fail_after(10):
        async with trizmq.Pull() as pull, trizmq.Push(linger=0) as push:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            await push.connect(endpoint)
            for bad in ("text", 5, None, [b"nested"]):
                with pytest.raises(TypeError):
                    await push.send(bad)
                with pytest.raises(TypeError):
                    await push.send(bad, more=True)
                with pytest.raises(TypeError):
                    push.send_nowait(bad)
                with pytest.raises(TypeError):
                    await push.send_multipart([b"ok", bad])
                with pytest.raises(TypeError):
                    push.send_multipart_nowait([bad])
            with pytest.raises(TypeError, match="str"):
                await push.send("text")
            with pytest.raises(ValueError):
                await push.send_multipart([])
            # nothing half-sent: the next message arrives whole and alone
            await push.send_multipart([b"a", bytearray(b"b"), memoryview(b"c")])
            assert await pull.recv_multipart() == [b"a", b"b", b"c"]


@pytest.mark.parametrize(
    ("cls", "operation"),
    [
        (trizmq.Pull, "send"),
        (trizmq.Pull, "send_more"),
        (trizmq.Pull, "send_multipart"),
        (trizmq.Pull, "send_nowait"),
        (trizmq.Pull, "send_multipart_nowait"),
        (trizmq.Sub, "send"),
        (trizmq.Push, "recv"),
        (trizmq.Push, "recv_multipart"),
        (trizmq.Push, "recv_nowait"),
        (trizmq.Push, "recv_multipart_nowait"),
        (trizmq.Push, "recv_message"),
        (trizmq.Pub, "recv"),
    ],
)
async def test_operation_the_type_cannot_do_raises_not_supported(
    cls: type[trizmq.Socket], operation: str
) -> None:
    calls = {
        "send": lambda s: s.send(b"x"),
        "send_more": lambda s: s.send(b"x", more=True),
        "send_multipart": lambda s: s.send_multipart([b"x"]),
        "send_nowait": lambda s: s.send_nowait(b"x"),
        "send_multipart_nowait": lambda s: s.send_multipart_nowait([b"x"]),
        "recv": lambda s: s.recv(),
        "recv_multipart": lambda s: s.recv_multipart(),
        "recv_nowait": lambda s: s.recv_nowait(),
        "recv_multipart_nowait": lambda s: s.recv_multipart_nowait(),
        "recv_message": lambda s: s.recv_message(),
    }
    with trio.fail_after(10):
        async with cls() as sock:
            with pytest.raises(trizmq.NotSupportedError) as excinfo:
                result = calls[operation](sock)
                if hasattr(result, "__await__"):
                    await result
            assert isinstance(excinfo.value, trizmq.ZMQError)
            assert sock.socket_type in str(excinfo.value)


async def test_use_before_entering_raises_instead_of_hanging() -> None:
    with trio.fail_after(10):
        push, pull = trizmq.Push(), trizmq.Pull()
        with pytest.raises(RuntimeError, match="async with"):
            await push.send(b"x")
        with pytest.raises(RuntimeError, match="async with"):
            push.send_nowait(b"x")
        with pytest.raises(RuntimeError, match="async with"):
            await pull.recv()
        with pytest.raises(RuntimeError, match="async with"):
            pull.recv_nowait()
        with pytest.raises(RuntimeError, match="async with"):
            await pull.bind("tcp://127.0.0.1:0")
        with pytest.raises(RuntimeError, match="async with"):
            await push.connect("tcp://127.0.0.1:5555")


async def test_use_after_close_raises_closed_resource_error() -> None:
    with trio.fail_after(10):
        async with trizmq.Push() as push, trizmq.Pull() as pull:
            pass
        for call in (
            lambda: push.send(b"x"),
            lambda: pull.recv(),
            lambda: pull.bind("tcp://127.0.0.1:0"),
            lambda: push.connect("tcp://127.0.0.1:5555"),
        ):
            with pytest.raises(trio.ClosedResourceError):
                await call()
        with pytest.raises(trio.ClosedResourceError):
            push.send_nowait(b"x")
        with pytest.raises(RuntimeError):
            async with push:
                pass  # pragma: no cover


# -- the exception hierarchy -------------------------------------------------------------------


def test_every_public_exception_derives_from_zmq_error() -> None:
    public = [getattr(trizmq, name) for name in trizmq.__all__]
    exceptions = [obj for obj in public if isinstance(obj, type) and issubclass(obj, BaseException)]
    assert {e.__name__ for e in exceptions} >= {
        "ZMQError",
        "EndpointError",
        "HostUnreachable",
        "NotSupportedError",
        "ProtocolError",
        "StateError",
    }
    for exc in exceptions:
        assert issubclass(exc, trizmq.ZMQError), exc
        assert exc.__module__ == "trizmq", exc
    assert issubclass(trizmq.EndpointError, ValueError)
