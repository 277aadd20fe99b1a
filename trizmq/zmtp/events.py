"""What :meth:`Connection.receive_data` reports: small immutable event objects.

Each class is one thing the peer told us; none carries behaviour. The socket layer
dispatches on the class.

Hot-path exception: a *data message* is **not** an event class. For speed it is
delivered as a plain ``list[bytes]``, the frames of one message, in order, emitted
only once its last frame has arrived (messages are atomic). Consumers therefore
test ``type(item) is list`` (or ``isinstance(item, list)``) first and treat
everything else as an :data:`Event`.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

__all__ = [
    "Cancel",
    "Event",
    "HandshakeComplete",
    "Join",
    "Leave",
    "PeerError",
    "Ping",
    "Pong",
    "Received",
    "Subscribe",
    "SubscriptionRefused",
    "UnknownCommand",
]


@attrs.frozen(slots=True)
class HandshakeComplete:
    """The security handshake and metadata exchange succeeded; traffic may flow.

    ``socket_type`` is ``""`` when the peer sent no Socket-Type, ``identity`` is
    ``b""`` when it sent no Identity, ``metadata`` holds every property it sent
    (Socket-Type and Identity included) and ``version`` is the (major, minor) from
    its greeting.
    """

    socket_type: str
    identity: bytes
    metadata: dict[str, bytes]
    version: tuple[int, int]


@attrs.frozen(slots=True)
class Subscribe:
    """A SUBSCRIBE command (ZMTP 3.1); the legacy ``\\x01topic`` form arrives as data."""

    topic: bytes


@attrs.frozen(slots=True)
class Cancel:
    """A CANCEL command (ZMTP 3.1); the legacy ``\\x00topic`` form arrives as data."""

    topic: bytes


@attrs.frozen(slots=True)
class SubscriptionRefused:
    """A subscription whose topic of ``size`` bytes is over the connection's bound
    (``max_subscription``): a SUBSCRIBE command, or a one-frame ``\\x01topic``
    message, whose declared length said so at its header. Its body was discarded as
    it arrived, none of it kept; the publisher refuses it as it would the topic."""

    size: int


@attrs.frozen(slots=True)
class Ping:
    """A PING: ``ttl`` in seconds (0.0 = none); answer with a PONG echoing ``context``."""

    ttl: float
    context: bytes


@attrs.frozen(slots=True)
class Pong:
    """A PONG; its content is never checked, it only proves the peer is alive."""

    context: bytes


@attrs.frozen(slots=True)
class Join:
    """A DISH joined ``group`` (RADIO side)."""

    group: bytes


@attrs.frozen(slots=True)
class Leave:
    """A DISH left ``group`` (RADIO side)."""

    group: bytes


@attrs.frozen(slots=True)
class PeerError:
    """The peer sent ERROR: it refuses the connection; the Connection is finished."""

    reason: str


@attrs.frozen(slots=True)
class UnknownCommand:
    """Any other command after the handshake; sockets ignore it (as libzmq does)."""

    name: bytes
    body: bytes


Event: TypeAlias = (
    HandshakeComplete
    | Subscribe
    | Cancel
    | SubscriptionRefused
    | Ping
    | Pong
    | Join
    | Leave
    | PeerError
    | UnknownCommand
)

#: one item returned by :meth:`Connection.receive_data`: an event, a message's frames
#: or, with :attr:`Connection.bare_messages`, a one-frame message's frame itself
#: (here, below the handshake and the connection, so that both can name it)
Received: TypeAlias = Event | list[bytes] | bytes
