"""Tests of endpoint parsing: good and bad endpoints, for bind and for connect."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trizmq._endpoint import Endpoint, parse_endpoint
from trizmq._errors import EndpointError, ZMQError
from trizmq.transport.addresses import INPROC_NAME_MAX, IPC_PATH_MAX

# (text, for_bind, transport, host, port, path, canonical str)
GOOD: list[tuple[str, bool, str, str | None, int | None, str | None, str]] = [
    ("tcp://127.0.0.1:5555", False, "tcp", "127.0.0.1", 5555, None, "tcp://127.0.0.1:5555"),
    ("tcp://127.0.0.1:5555", True, "tcp", "127.0.0.1", 5555, None, "tcp://127.0.0.1:5555"),
    ("tcp://*:5555", True, "tcp", "*", 5555, None, "tcp://*:5555"),
    ("tcp://*:*", True, "tcp", "*", 0, None, "tcp://*:0"),
    ("tcp://127.0.0.1:0", True, "tcp", "127.0.0.1", 0, None, "tcp://127.0.0.1:0"),
    ("tcp://127.0.0.1:*", True, "tcp", "127.0.0.1", 0, None, "tcp://127.0.0.1:0"),
    ("tcp://[::1]:5555", False, "tcp", "::1", 5555, None, "tcp://[::1]:5555"),
    ("tcp://[::]:0", True, "tcp", "::", 0, None, "tcp://[::]:0"),
    ("tcp://[fe80::1%eth0]:7", False, "tcp", "fe80::1%eth0", 7, None, "tcp://[fe80::1%eth0]:7"),
    (
        "tcp://[::ffff:127.0.0.1]:9",
        False,
        "tcp",
        "::ffff:127.0.0.1",
        9,
        None,
        "tcp://[::ffff:127.0.0.1]:9",
    ),
    ("tcp://localhost:80", False, "tcp", "localhost", 80, None, "tcp://localhost:80"),
    (
        "tcp://my-host.example.com:65535",
        False,
        "tcp",
        "my-host.example.com",
        65535,
        None,
        "tcp://my-host.example.com:65535",
    ),
    ("tcp://host:00080", False, "tcp", "host", 80, None, "tcp://host:80"),
    ("tcp://host:1", False, "tcp", "host", 1, None, "tcp://host:1"),
    ("udp://*:5555", True, "udp", "*", 5555, None, "udp://*:5555"),
    ("udp://239.0.0.1:5555", False, "udp", "239.0.0.1", 5555, None, "udp://239.0.0.1:5555"),
    ("udp://[::1]:5555", False, "udp", "::1", 5555, None, "udp://[::1]:5555"),
    ("ws://127.0.0.1:5555", False, "ws", "127.0.0.1", 5555, "/", "ws://127.0.0.1:5555/"),
    ("ws://*:0/zmq", True, "ws", "*", 0, "/zmq", "ws://*:0/zmq"),
    ("ws://[::1]:80/a/b?x=1", False, "ws", "::1", 80, "/a/b?x=1", "ws://[::1]:80/a/b?x=1"),
    ("wss://example.com:443/", False, "wss", "example.com", 443, "/", "wss://example.com:443/"),
    ("ipc:///tmp/feeds/0", False, "ipc", None, None, "/tmp/feeds/0", "ipc:///tmp/feeds/0"),
    ("ipc://relative/sock", True, "ipc", None, None, "relative/sock", "ipc://relative/sock"),
    ("ipc://@abstract-name", True, "ipc", None, None, "@abstract-name", "ipc://@abstract-name"),
    ("ipc://*", True, "ipc", None, None, "*", "ipc://*"),
    (
        "ipc://" + "x" * IPC_PATH_MAX,
        False,
        "ipc",
        None,
        None,
        "x" * IPC_PATH_MAX,
        "ipc://" + "x" * IPC_PATH_MAX,
    ),
    ("ipc://with:colon", False, "ipc", None, None, "with:colon", "ipc://with:colon"),
    ("inproc://name", False, "inproc", None, None, "name", "inproc://name"),
    ("inproc://name", True, "inproc", None, None, "name", "inproc://name"),
    ("inproc://*", False, "inproc", None, None, "*", "inproc://*"),
    ("inproc://a/b:c", True, "inproc", None, None, "a/b:c", "inproc://a/b:c"),
    (
        "inproc://" + "n" * INPROC_NAME_MAX,
        True,
        "inproc",
        None,
        None,
        "n" * INPROC_NAME_MAX,
        "inproc://" + "n" * INPROC_NAME_MAX,
    ),
]


@pytest.mark.parametrize(
    ("text", "for_bind", "transport", "host", "port", "path", "canonical"), GOOD
)
def test_good_endpoint(
    text: str,
    for_bind: bool,
    transport: str,
    host: str | None,
    port: int | None,
    path: str | None,
    canonical: str,
) -> None:
    ep = parse_endpoint(text, for_bind=for_bind)
    assert ep == Endpoint(
        transport=transport, address=text.split("://", 1)[1], host=host, port=port, path=path
    )
    assert str(ep) == canonical


# (value, for_bind, a fragment the message must contain)
BAD: list[tuple[object, bool, str]] = [
    (b"tcp://127.0.0.1:5555", True, "not a string"),
    (None, False, "not a string"),
    (5555, True, "not a string"),
    ("127.0.0.1:5555", False, "'://'"),
    ("tcp:/127.0.0.1:5555", False, "'://'"),
    ("", True, "'://'"),
    ("://127.0.0.1:5555", False, "no transport"),
    ("pgm://eth0;239.192.1.1:5555", False, "not supported"),
    ("epgm://eth0;239.192.1.1:5555", True, "not supported"),
    ("vmci://1:5555", False, "not supported"),
    ("norm://127.0.0.1:5555", False, "not supported"),
    ("ws://127.0.0.1", False, "no port"),
    ("ws://*:5555/zmq", False, "wildcard host"),
    ("wss://127.0.0.1:0/", False, "wildcard port"),
    ("ws:///zmq", True, "no host:port"),
    ("ws://127.0.0.1:5555/a b", False, "not a valid URL path"),
    ("ws://127.0.0.1:5555/a#frag", False, "not a valid URL path"),
    ("tipc://{5560,0,0}", True, "not supported"),
    ("foo://bar", False, "unknown transport"),
    ("TCP://127.0.0.1:5555", False, "unknown transport"),
    ("tcp://", True, "empty address"),
    ("ipc://", True, "empty address"),
    ("inproc://", False, "empty address"),
    ("udp://", False, "empty address"),
    ("tcp://127.0.0.1", False, "no port"),
    ("tcp://localhost", True, "no port"),
    ("udp://127.0.0.1", False, "no port"),
    ("tcp://127.0.0.1:", False, "no port"),
    ("tcp://[::1]:", False, "no port"),
    ("tcp://:5555", True, "no host"),
    ("tcp://127.0.0.1:abc", False, "not a number"),
    ("tcp://127.0.0.1:-1", False, "not a number"),
    ("tcp://127.0.0.1:+5", False, "not a number"),
    ("tcp://127.0.0.1:5.5", False, "not a number"),
    ("tcp://127.0.0.1:5555 ", False, "not a number"),
    ("tcp://127.0.0.1:\u0665", False, "not a number"),  # an Arabic-Indic digit five
    ("tcp://127.0.0.1:65536", True, "out of range"),
    ("tcp://127.0.0.1:99999999999999999999", False, "out of range"),
    ("tcp://*:5555", False, "wildcard host"),
    ("udp://*:5555", False, "wildcard host"),
    ("tcp://127.0.0.1:0", False, "wildcard port"),
    ("tcp://127.0.0.1:*", False, "wildcard port"),
    ("tcp://localhost:0", False, "wildcard port"),
    ("tcp://[::1]:0", False, "wildcard port"),
    ("tcp://[::1:5555", True, "without ']'"),
    ("tcp://[::1]5555", True, "':port'"),
    ("tcp://[::1]", False, "':port'"),
    ("tcp://[]:5555", True, "empty IPv6"),
    ("tcp://[not-v6]:5555", False, "not an IPv6 address"),
    ("tcp://[127.0.0.1]:5555", False, "not an IPv6 address"),
    ("tcp://::1:5555", False, "brackets"),
    ("tcp://::1]:5555", False, "brackets"),
    ("tcp://host]:5555", False, "brackets"),
    ("tcp://ho[st:5555", False, "brackets"),
    ("tcp://bad host:5555", False, "not a valid host"),
    ("tcp://a/b:5555", False, "not a valid host"),
    ("tcp://eth0;192.168.1.1:5555", False, "not supported"),
    ("tcp://127.0.0.1:5556;127.0.0.1:5555", False, "not supported"),
    ("ipc://" + "x" * (IPC_PATH_MAX + 1), True, "too long"),
    ("ipc://" + "\u00e9" * 54, False, "(108 bytes)"),  # 54 characters, 108 bytes of UTF-8
    ("ipc://@" + "x" * IPC_PATH_MAX, True, "too long"),
    ("ipc://@", True, "empty abstract"),
    ("ipc://*", False, "only works with bind"),
    ("ipc:///tmp/a\x00b", True, "NUL"),
    ("inproc://" + "n" * (INPROC_NAME_MAX + 1), True, "at most 255"),
]


@pytest.mark.parametrize(("value", "for_bind", "fragment"), BAD)
def test_bad_endpoint(value: object, for_bind: bool, fragment: str) -> None:
    with pytest.raises(EndpointError) as info:
        parse_endpoint(value, for_bind=for_bind)
    message = str(info.value)
    assert repr(value) in message, "the message must quote the endpoint"
    assert fragment in message


def test_endpoint_error_is_value_error_and_zmq_error() -> None:
    with pytest.raises(ValueError):
        parse_endpoint("nope", for_bind=True)
    with pytest.raises(ZMQError):
        parse_endpoint(b"tcp://127.0.0.1:1", for_bind=False)


def test_for_bind_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        parse_endpoint("tcp://127.0.0.1:1", True)  # type: ignore[call-arg]


def test_endpoint_is_frozen_and_hashable() -> None:
    ep = parse_endpoint("tcp://127.0.0.1:5555", for_bind=False)
    assert ep == parse_endpoint("tcp://127.0.0.1:5555", for_bind=False)
    assert len({ep, parse_endpoint("tcp://127.0.0.1:5555", for_bind=True)}) == 1
    with pytest.raises(AttributeError):
        ep.port = 1  # type: ignore[misc]


@given(st.text(max_size=40), st.booleans())
def test_parse_raises_only_endpoint_error(text: str, for_bind: bool) -> None:
    try:
        parse_endpoint(text, for_bind=for_bind)
    except EndpointError as exc:
        assert repr(text) in str(exc)


@given(
    st.sampled_from(["tcp", "udp"]),
    st.one_of(
        st.ip_addresses(v=4).map(str),
        st.ip_addresses(v=6).map(lambda a: a.compressed),
        st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True),
    ),
    st.integers(min_value=1, max_value=65535),
)
def test_canonical_str_round_trips(transport: str, host: str, port: int) -> None:
    text = f"{transport}://[{host}]:{port}" if ":" in host else f"{transport}://{host}:{port}"
    ep = parse_endpoint(text, for_bind=False)
    assert (ep.host, ep.port) == (host, port)
    assert str(ep) == text
    assert parse_endpoint(str(ep), for_bind=False) == ep
