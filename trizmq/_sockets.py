"""The socket classes: PAIR, pipeline, pub-sub and request-reply."""

from __future__ import annotations

from typing import Any

import trio

from ._socket import Socket
from .patterns.sockets import SubStrategy, XSubStrategy

__all__ = ["Dealer", "Pair", "Pub", "Pull", "Push", "Rep", "Req", "Router", "Sub", "XPub", "XSub"]


def _topic(prefix: Any) -> bytes:
    if isinstance(prefix, str):
        return prefix.encode()
    if isinstance(prefix, (bytes, bytearray, memoryview)):
        return bytes(prefix)
    raise TypeError(f"a topic must be bytes or str, not {type(prefix).__name__}")


class Pair(Socket):
    """PAIR: an exclusive connection to one peer (31/EXPAIR)."""

    socket_type = "PAIR"


class Push(Socket):
    """PUSH: round-robin messages to PULL peers; waits when none can take one."""

    socket_type = "PUSH"


class Pull(Socket):
    """PULL: fair-queue messages from PUSH peers."""

    socket_type = "PULL"


class Pub(Socket):
    """PUB: send to every subscriber whose prefix matches; drop for a full one."""

    socket_type = "PUB"


class XPub(Socket):
    """XPUB: PUB that receives subscriptions as ``b"\\x01topic"`` / ``b"\\x00topic"``."""

    socket_type = "XPUB"


class XSub(Socket):
    """XSUB: SUB whose subscriptions are messages ``b"\\x01topic"`` / ``b"\\x00topic"``."""

    socket_type = "XSUB"
    _strategy: XSubStrategy

    def subscribe(self, prefix: bytes | str = b"") -> None:
        """Subscribe to messages starting with ``prefix`` (counted)."""
        self._require_open()
        self._strategy.subscribe(_topic(prefix))

    def unsubscribe(self, prefix: bytes | str) -> None:
        """Remove one count of a subscription made with :meth:`subscribe`."""
        self._require_open()
        self._strategy.unsubscribe(_topic(prefix))

    def _require_open(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")


class Sub(XSub):
    """SUB: receive messages matching its subscriptions; cannot send."""

    socket_type = "SUB"
    _strategy: SubStrategy

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for topic in self._options["subscribe"]:
            self._strategy.subscribe(topic)


class Req(Socket):
    """REQ: lock-step requests to REP or ROUTER peers, round-robin (28/REQREP)."""

    socket_type = "REQ"


class Rep(Socket):
    """REP: answer requests from REQ or DEALER peers, one at a time."""

    socket_type = "REP"


class Dealer(Socket):
    """DEALER: asynchronous round-robin out and fair-queue in, no envelope change."""

    socket_type = "DEALER"


class Router(Socket):
    """ROUTER: every message starts with the routing id of its peer."""

    socket_type = "ROUTER"
