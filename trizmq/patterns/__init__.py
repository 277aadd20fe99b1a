"""Routing logic of the ZeroMQ socket patterns: pure, synchronous, no I/O, no trio.

One job: the decisions a socket makes about peers and messages, kept apart from
the runtime that moves bytes. :mod:`.routing` rotates over peers (load balancing
out, fair queuing in); :mod:`.subscriptions` keeps prefix subscriptions on the
subscriber side and the publisher side; :mod:`.pubsub` reads and writes the
``\\x01``/``\\x00`` subscription message form. The per-socket-type strategies in
:mod:`.sockets` build on these and are imported separately (they depend on the
runtime's types).
"""

from .routing import FairQueue, RoundRobin
from .subscription_messages import (
    CANCEL,
    SUBSCRIBE,
    parse_subscription_message,
    subscription_message,
)
from .subscriptions import Distribution, SubscriptionTrie

__all__ = [
    "CANCEL",
    "SUBSCRIBE",
    "Distribution",
    "FairQueue",
    "RoundRobin",
    "SubscriptionTrie",
    "parse_subscription_message",
    "subscription_message",
]
