"""The exceptions trizmq raises; every one derives from :class:`ZMQError`.

Rule: a *local* error is the caller's mistake and is raised at the call
(``EndpointError``, ``StateError``, ``TypeError``/``ValueError`` for options).
A *remote* error is the peer's fault (:class:`trizmq.zmtp.ProtocolError`); it closes
that peer's connection only, is logged with its reason and never reaches the caller.
"""

from __future__ import annotations

__all__ = ["EndpointError", "HostUnreachable", "NotSupportedError", "StateError", "ZMQError"]


class ZMQError(Exception):
    """Base class of every exception trizmq defines."""


class EndpointError(ZMQError, ValueError):
    """A malformed or unsupported endpoint string; the message names the endpoint."""


class StateError(ZMQError):
    """An operation out of order for the socket's state (REQ/REP send-recv alternation)."""


class HostUnreachable(ZMQError):
    """A ROUTER with ``router_mandatory=True`` was asked to route to an unknown peer."""


class NotSupportedError(ZMQError):
    """The socket type does not do this (receiving on a PUSH, sending on a SUB)."""
