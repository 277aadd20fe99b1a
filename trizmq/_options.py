"""Socket options: one table of names, defaults and checks.

Rules (``API.md``): options are keyword-only constructor arguments; an unknown
name, or one that does not apply to the socket type, raises ``TypeError``; a bad
value raises ``ValueError`` (or ``EndpointError``, a ``ValueError``) naming the
option. Both happen in the constructor, before the socket is entered.

Which socket types an option fits is the types' business: an option marked
``per_type`` here applies only to a type whose row of the socket-type table
(``trizmq.patterns.sockets``) lists it among its ``options``; the others apply to
every socket.
"""

from __future__ import annotations

import difflib
import math
import ssl
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

from ._endpoint import Endpoint, parse_endpoint
from ._errors import EndpointError

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_LINGER",
    "DEFAULT_MAX_FRAMES",
    "OPTIONS",
    "RUNTIME_OPTIONS",
    "Options",
    "TypeOptions",
    "changed_options",
    "check_compression",
    "validate_options",
]

if TYPE_CHECKING:
    from ._security import Security

#: seconds a closing socket keeps flushing (see docs/getting-started.md)
DEFAULT_LINGER = 1.0
#: the listen backlog of a bound tcp/ipc endpoint unless the ``backlog`` option says
#: otherwise (libzmq's ZMQ_BACKLOG is 100): a thousand peers connecting at once must
#: not wait in SYN retries. The kernel caps it at ``net.core.somaxconn``.
DEFAULT_BACKLOG = 1024
#: the most frames one incoming message may have (libzmq has no such bound): a real
#: message has a handful; 65,536 tiny frames already cost ~3 MB of objects
DEFAULT_MAX_FRAMES = 65_536
#: what a publisher (PUB, XPUB, RADIO) keeps of its peers' subscriptions (or joins):
#: per peer, their topics' bytes per peer, and for all peers together. A subscription
#: costs ~220 bytes plus its topic, so a peer at its limits holds ~26 MB at most.
DEFAULT_MAX_SUBSCRIPTIONS = 100_000
DEFAULT_MAX_SUBSCRIPTION_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_SUBSCRIPTIONS_TOTAL = 1_000_000


def _number(name: str, value: object, *, allow_none: bool, positive: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    if math.isnan(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be {bound}, not {value!r}")
    return float(value)


def _seconds(name: str, value: object) -> float | None:
    return _number(name, value, allow_none=False)


def _linger(name: str, value: object) -> float | None:
    # libzmq's -1 ("forever") is accepted as None (API.md: "None or -1 = until flushed")
    if value == -1 and not isinstance(value, bool):
        return None
    return _number(name, value, allow_none=True)


def _positive(name: str, value: object) -> float | None:
    return _number(name, value, allow_none=False, positive=True)


def _positive_or_none(name: str, value: object) -> float | None:
    return _number(name, value, allow_none=True, positive=True)


def _hwm(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0 (0 = unbounded), not {value!r}")
    return value


def _maxmsgsize(name: str, value: object) -> int:
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise ValueError(f"{name} must be an int >= 0, or None / -1 for no limit, not {value!r}")
    return value


def _frames_limit(name: str, value: object) -> int:
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1):
        raise ValueError(f"{name} must be an int >= 1, or None / -1 for no limit, not {value!r}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, not {value!r}")
    return value


def _bytes_sized(name: str, value: object, what: str, most: int) -> bytes | None:
    """``value`` as bytes of 1 to ``most`` bytes, or None; ``what`` says what it is."""
    if value is None:
        return None
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ValueError(f"{name} must be {what} of length 1-{most}, or None, not {value!r}")
    data = bytes(value)
    if not 1 <= len(data) <= most:
        raise ValueError(f"{name} must be 1-{most} bytes long, not {len(data)}")
    return data


def _routing_id(name: str, value: object) -> bytes | None:
    return _bytes_sized(name, value, "bytes", 255)


def _one_or_many(
    name: str, value: object, single: tuple[type, ...], what: str, error: type[ValueError]
) -> list[object]:
    """``value`` as a list: none for None, itself alone where it is one of ``single``,
    else its items; ``error`` saying the option takes ``what`` for anything else."""
    if value is None:
        return []
    if isinstance(value, single):
        return [value]
    try:
        return list(cast("Iterable[object]", value))
    except TypeError:
        raise error(f"{name} takes {what}, not {value!r}") from None


def _endpoints(name: str, value: object) -> tuple[Endpoint, ...]:
    what = "an endpoint string or an iterable of them"
    items = _one_or_many(name, value, (str, bytes), what, EndpointError)
    endpoints = []
    for item in items:
        try:
            endpoints.append(parse_endpoint(item, for_bind=name == "bind"))
        except EndpointError as exc:
            raise EndpointError(f"{name}: {exc}") from None
    return tuple(endpoints)


def _topics(name: str, value: object) -> tuple[bytes, ...]:
    what = "a bytes or str topic or an iterable of them"
    items = _one_or_many(name, value, (str, bytes, bytearray, memoryview), what, ValueError)
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item.encode())
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out.append(bytes(item))
        else:
            raise ValueError(f"{name} takes bytes or str topics, not {item!r}")
    return tuple(out)


def _security(name: str, value: object) -> Security | None:
    from ._security import CurveClient, CurveServer, PlainClient, PlainServer

    if value is None or isinstance(value, (CurveServer, CurveClient, PlainServer, PlainClient)):
        return value
    raise ValueError(
        f"{name} must be None, trizmq.CurveServer, CurveClient, PlainServer or PlainClient, "
        f"not {value!r}"
    )


def _zap_domain(name: str, value: object) -> str:
    if not isinstance(value, str) or len(value.encode()) > 255:
        raise ValueError(f"{name} must be a str of at most 255 bytes, not {value!r}")
    return value


def _ssl_context(name: str, value: object) -> ssl.SSLContext | None:
    if value is None or isinstance(value, ssl.SSLContext):
        return value
    raise ValueError(f"{name} must be None or an ssl.SSLContext, not {value!r}")


def _flag_or_none(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"{name} must be True, False or None (the system's default), not {value!r}")


def _count_or_none(name: str, value: object) -> int | None:
    if value is None:
        return None
    return _count(name, value)


def _message_or_none(name: str, value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ValueError(f"{name} must be bytes, str or None, not {value!r}")


#: the largest ``compression_dict``: zstd's limit (a shipment of 64 KiB at most);
#: lz4's, 8 KiB, is checked where an ``lz4+tcp://`` endpoint is bound or connected
MAX_COMPRESSION_DICT = 64 * 1024 - 4


def _compression_level(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int (the codec's level) or None, not {value!r}")
    if not -131072 <= value <= 22:
        raise ValueError(f"{name} must be between -131072 and 22 (zstd's levels), not {value!r}")
    return value


def _compression_dict(name: str, value: object) -> bytes | None:
    return _bytes_sized(name, value, "bytes (a dictionary)", MAX_COMPRESSION_DICT)


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, not {value!r}")
    return value


@attrs.frozen
class OptionSpec:
    """One option: its default, its check, and whether only the socket types that
    list it take it (``per_type``; else every socket does)."""

    default: object
    check: Callable[[str, object], object]
    per_type: bool = False


class TypeOptions(Protocol):
    """A socket type, as the options read it (its row of the socket-type table)."""

    @property
    def name(self) -> str: ...

    @property
    def options(self) -> frozenset[str]:
        """The ``per_type`` options it takes."""
        ...


#: a switch that only the socket types listing it take, off unless set
_TYPE_SWITCH = OptionSpec(False, _flag, per_type=True)

OPTIONS: dict[str, OptionSpec] = {
    "bind": OptionSpec((), _endpoints),
    "connect": OptionSpec((), _endpoints),
    "sndhwm": OptionSpec(1000, _hwm),
    "rcvhwm": OptionSpec(1000, _hwm),
    "linger": OptionSpec(DEFAULT_LINGER, _linger),
    "routing_id": OptionSpec(None, _routing_id),
    "reconnect_ivl": OptionSpec(0.1, _positive),
    "reconnect_ivl_max": OptionSpec(0.0, _seconds),
    "heartbeat_ivl": OptionSpec(None, _positive_or_none),
    "heartbeat_timeout": OptionSpec(None, _positive_or_none),
    "heartbeat_ttl": OptionSpec(None, _positive_or_none),
    "handshake_ivl": OptionSpec(30.0, _positive_or_none),
    "immediate": OptionSpec(False, _flag),
    "maxmsgsize": OptionSpec(-1, _maxmsgsize),
    "max_frames": OptionSpec(DEFAULT_MAX_FRAMES, _frames_limit),
    "security": OptionSpec(None, _security),
    "zap_domain": OptionSpec("", _zap_domain),
    "max_handshakes": OptionSpec(100, _count),
    "backlog": OptionSpec(DEFAULT_BACKLOG, _count),
    "greeting_ivl": OptionSpec(5.0, _positive_or_none),
    "ssl_context": OptionSpec(None, _ssl_context),
    "connect_timeout": OptionSpec(None, _positive_or_none),
    "conflate": _TYPE_SWITCH,
    "tcp_keepalive": OptionSpec(None, _flag_or_none),
    "tcp_keepalive_idle": OptionSpec(None, _positive_or_none),
    "tcp_keepalive_intvl": OptionSpec(None, _positive_or_none),
    "tcp_keepalive_cnt": OptionSpec(None, _count_or_none),
    "sndbuf": OptionSpec(None, _count_or_none),
    "rcvbuf": OptionSpec(None, _count_or_none),
    "subscribe": OptionSpec((), _topics, per_type=True),
    "router_mandatory": _TYPE_SWITCH,
    "router_handover": _TYPE_SWITCH,
    "xpub_verbose": _TYPE_SWITCH,
    "xpub_manual": _TYPE_SWITCH,
    "xpub_welcome_msg": OptionSpec(None, _message_or_none, per_type=True),
    "max_subscriptions": OptionSpec(DEFAULT_MAX_SUBSCRIPTIONS, _count, per_type=True),
    "max_subscriptions_total": OptionSpec(DEFAULT_MAX_SUBSCRIPTIONS_TOTAL, _count, per_type=True),
    "max_subscription_bytes": OptionSpec(DEFAULT_MAX_SUBSCRIPTION_BYTES, _count, per_type=True),
    "probe_router": _TYPE_SWITCH,
    "hello_msg": OptionSpec(None, _message_or_none, per_type=True),
    "disconnect_msg": OptionSpec(None, _message_or_none, per_type=True),
    "req_correlate": _TYPE_SWITCH,
    "req_relaxed": _TYPE_SWITCH,
    "compression_level": OptionSpec(None, _compression_level),
    "compression_dict": OptionSpec(None, _compression_dict),
    "compression_auto_train": OptionSpec(False, _flag),
}


@attrs.frozen(slots=True)
class Options:
    """A socket's validated options, one typed field per option (``sock.options``).

    Built by :func:`validate_options`; an option that does not apply to the socket
    type keeps its default. Durations are seconds, sizes bytes. Frozen: change
    options with ``sock.set_options()``. docs/getting-started.md has them in one
    table, with their libzmq names.
    """

    #: endpoints bound on entry (validated)
    bind: tuple[Endpoint, ...] = ()
    #: endpoints connected on entry (validated)
    connect: tuple[Endpoint, ...] = ()
    #: messages queued per peer on the way out; 0 = unbounded (ZMQ_SNDHWM)
    sndhwm: int = 1000
    #: messages queued per peer on the way in; 0 = unbounded (ZMQ_RCVHWM)
    rcvhwm: int = 1000
    #: seconds a close keeps flushing; None = until flushed (ZMQ_LINGER)
    linger: float | None = DEFAULT_LINGER
    #: this socket's identity, 1-255 bytes (ZMQ_ROUTING_ID)
    routing_id: bytes | None = None
    #: seconds before the first reconnect (ZMQ_RECONNECT_IVL)
    reconnect_ivl: float = 0.1
    #: cap of the doubling reconnect delay, seconds; 0 = no doubling
    reconnect_ivl_max: float = 0.0
    #: seconds between PINGs; None = no heartbeats (ZMQ_HEARTBEAT_IVL)
    heartbeat_ivl: float | None = None
    #: seconds of silence after a PING before a drop (ZMQ_HEARTBEAT_TIMEOUT)
    heartbeat_timeout: float | None = None
    #: TTL written into our PINGs, seconds (ZMQ_HEARTBEAT_TTL)
    heartbeat_ttl: float | None = None
    #: seconds a handshake may take; None = no limit (ZMQ_HANDSHAKE_IVL)
    handshake_ivl: float | None = 30.0
    #: queue only to completed connections (ZMQ_IMMEDIATE)
    immediate: bool = False
    #: largest incoming message, wire bytes; -1 = no limit (ZMQ_MAXMSGSIZE)
    maxmsgsize: int = -1
    #: most frames of one incoming message; -1 = no limit
    max_frames: int = DEFAULT_MAX_FRAMES
    #: the mechanism object (CurveServer, PlainClient, ...); None = NULL
    security: Security | None = None
    #: the ZAP domain sent to the Authenticator (ZMQ_ZAP_DOMAIN)
    zap_domain: str = ""
    #: accepted connections in their handshake at once
    max_handshakes: int = 100
    #: listen backlog of bound tcp/ipc/ws endpoints (ZMQ_BACKLOG)
    backlog: int = DEFAULT_BACKLOG
    #: seconds an accepted connection has to send its greeting
    greeting_ivl: float | None = 5.0
    #: TLS settings of wss:// (a server context to bind, a client one to connect)
    ssl_context: ssl.SSLContext | None = None
    #: seconds a tcp/ws connect may take; None = the system's
    connect_timeout: float | None = None
    #: keep only the newest message per peer queue (ZMQ_CONFLATE)
    conflate: bool = False
    #: TCP keepalive on/off; None = the system's (ZMQ_TCP_KEEPALIVE)
    tcp_keepalive: bool | None = None
    #: seconds idle before the first probe (ZMQ_TCP_KEEPALIVE_IDLE)
    tcp_keepalive_idle: float | None = None
    #: seconds between probes (ZMQ_TCP_KEEPALIVE_INTVL)
    tcp_keepalive_intvl: float | None = None
    #: unanswered probes before a drop (ZMQ_TCP_KEEPALIVE_CNT)
    tcp_keepalive_cnt: int | None = None
    #: kernel send buffer per connection, bytes; None = the system's (ZMQ_SNDBUF)
    sndbuf: int | None = None
    #: kernel receive buffer per connection, bytes; None = the system's (ZMQ_RCVBUF)
    rcvbuf: int | None = None
    #: SUB: topics subscribed on entry (ZMQ_SUBSCRIBE)
    subscribe: tuple[bytes, ...] = ()
    #: ROUTER: an unknown routing id raises (ZMQ_ROUTER_MANDATORY)
    router_mandatory: bool = False
    #: ROUTER: a new peer takes over a known id (ZMQ_ROUTER_HANDOVER)
    router_handover: bool = False
    #: XPUB: report every subscription (ZMQ_XPUB_VERBOSE)
    xpub_verbose: bool = False
    #: XPUB: subscriptions applied by the application (ZMQ_XPUB_MANUAL)
    xpub_manual: bool = False
    #: XPUB: sent to each new subscriber (ZMQ_XPUB_WELCOME_MSG)
    xpub_welcome_msg: bytes | None = None
    #: publishers: subscriptions kept per peer
    max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS
    #: publishers: subscriptions kept for all peers
    max_subscriptions_total: int = DEFAULT_MAX_SUBSCRIPTIONS_TOTAL
    #: PUB/XPUB: topic bytes kept per peer; a subscription whose topic alone is longer
    #: is refused at its frame header, its body counted off unread (the bound of when
    #: the connection was made; with ``xpub_manual``, none)
    max_subscription_bytes: int = DEFAULT_MAX_SUBSCRIPTION_BYTES
    #: send an empty message on each new connection (ZMQ_PROBE_ROUTER)
    probe_router: bool = False
    #: ROUTER/DEALER/CLIENT/SERVER/PEER: sent first on each new connection (ZMQ_HELLO_MSG)
    hello_msg: bytes | None = None
    #: ROUTER/SERVER/PEER: received with a peer's id when it goes (ZMQ_DISCONNECT_MSG)
    disconnect_msg: bytes | None = None
    #: REQ: match replies to requests (ZMQ_REQ_CORRELATE)
    req_correlate: bool = False
    #: REQ: allow a new request before the reply (ZMQ_REQ_RELAXED)
    req_relaxed: bool = False
    #: lz4+tcp/zstd+tcp: the codec's level; None = the format's (lz4's default, zstd -3)
    compression_level: int | None = None
    #: lz4+tcp/zstd+tcp: a dictionary shipped to every peer (zstd: a Zstandard one)
    compression_dict: bytes | None = None
    #: zstd+tcp: train a dictionary from the first messages and ship it
    compression_auto_train: bool = False


#: the options :meth:`trizmq.Socket.set_options` may change once the socket exists,
#: as libzmq lets them change: each applies from then on (a queue bound, a linger, a
#: flag read at each send), or to the connections, binds and connects made afterwards
#: (a heartbeat, a mechanism, a reconnect interval); ``subscribe`` adds subscriptions
RUNTIME_OPTIONS = frozenset(OPTIONS) - {"bind", "connect", "max_handshakes"}
_NOT_AT_RUN_TIME = {
    "bind": "call bind() instead",
    "connect": "call connect() instead",
    "max_handshakes": "the handshake slots are sized once, when the socket is made",
}


def _check_names(
    kind: TypeOptions, given: Mapping[str, object], caller: str, kinds: Iterable[TypeOptions]
) -> None:
    for name in given:
        spec = OPTIONS.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{caller} got an unknown option {name!r}{hint}")
        if spec.per_type and name not in kind.options:
            takers = sorted(other.name for other in kinds if name in other.options)
            raise TypeError(
                f"option {name!r} does not apply to a {kind.name} socket "
                f"(only to {', '.join(takers)})"
            )


def validate_options(
    kind: TypeOptions, given: Mapping[str, object], kinds: Iterable[TypeOptions] = ()
) -> Options:
    """Check ``given`` against the table for a socket of type ``kind``; return every
    option with defaults filled in. ``kinds``, every type there is, names the types
    an option that does not fit ``kind`` fits."""
    _check_names(kind, given, f"{kind.name.title()}()", kinds)
    # each check returns its option's type, which Options' fields state one by one:
    # no annotation of this name-keyed mapping says which name has which
    checked: dict[str, Any] = {
        name: OPTIONS[name].check(name, value) for name, value in given.items()
    }
    options = Options(**checked)
    check_compression(options)
    return options


def check_compression(options: Options, endpoints: Iterable[str] = ()) -> None:
    """The compression options fit the compressed endpoints the constructor binds or
    connects, and ``endpoints`` (those bound or connected already, for
    ``set_options()``): ``ValueError`` naming the option, raised by the call that set
    it. An endpoint bound or connected later is checked there."""
    from .zmtp.compression import FORMATS, check_settings

    for endpoint in (*map(str, options.bind), *map(str, options.connect), *endpoints):
        scheme = endpoint.partition("://")[0]
        if scheme in FORMATS:
            try:
                check_settings(scheme, options.compression_level, options.compression_dict)
            except ValueError as exc:
                raise ValueError(f"{endpoint}: {exc}") from None


def changed_options(
    kind: TypeOptions,
    current: Options,
    given: Mapping[str, object],
    kinds: Iterable[TypeOptions] = (),
) -> Options:
    """``current`` with ``given`` applied, checked as the constructor checks them;
    ``TypeError`` for an option that cannot change at run time. ``subscribe`` adds to
    the topics already there."""
    _check_names(kind, given, "set_options()", kinds)
    for name in given:
        if name not in RUNTIME_OPTIONS:
            raise TypeError(f"option {name!r} cannot change at run time: {_NOT_AT_RUN_TIME[name]}")
    checked: dict[str, Any] = {
        name: OPTIONS[name].check(name, value) for name, value in given.items()
    }
    if "subscribe" in checked:
        checked["subscribe"] = current.subscribe + checked["subscribe"]
    options = attrs.evolve(current, **checked)
    check_compression(options)
    return options
