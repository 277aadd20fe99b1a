"""The exceptions trizmq raises; every one derives from :class:`ZMQError`.

Rule: a *local* error is the caller's mistake and is raised at the call
(``EndpointError``, ``StateError``, ``TypeError``/``ValueError`` for options).
A *remote* error is the peer's fault (:class:`trizmq.zmtp.ProtocolError`); it closes
that peer's connection only, is logged with its reason and never reaches the caller.
"""

from __future__ import annotations

__all__ = [
    "EndpointError",
    "HostUnreachable",
    "NotSupportedError",
    "StateError",
    "ZMQError",
    "ZMQOSError",
    "os_error",
]


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


class ZMQOSError(ZMQError, OSError):
    """What the operating system refused: a bind, a connect, an unbind or a disconnect.

    A bind fails when the address is in use, an unbind or a disconnect when the
    endpoint is not there. Both ``except trizmq.ZMQError`` and ``except OSError``
    catch it, and it carries the errno; where Python has a builtin class for that
    errno (``FileNotFoundError``, ``ConnectionRefusedError``, ...) the exception is
    an instance of it too.
    """


_FOR_BUILTIN: dict[type[OSError], type[ZMQOSError]] = {}


def os_error(errno: int | None, message: str, base: type[OSError] | None = None) -> ZMQOSError:
    """A :class:`ZMQOSError` for ``errno`` that is also the builtin ``OSError`` subclass.

    The exception is also an instance of the builtin ``OSError`` subclass Python
    gives that errno (or of ``base``); the class made for each builtin is cached.

    Args:
        errno: The error number, or None if unknown.
        message: The error message.
        base: The builtin ``OSError`` subclass to derive from, instead of the one
            Python gives ``errno``.

    Returns:
        The exception, not raised.
    """
    if base is None:
        base = type(OSError(errno, message)) if errno is not None else OSError
    cls: type[ZMQOSError] = ZMQOSError
    if base is not OSError:
        found = _FOR_BUILTIN.get(base)
        if found is None:
            found = _FOR_BUILTIN[base] = type(
                f"ZMQ{base.__name__}",
                (ZMQOSError, base),
                {"__module__": __name__, "__doc__": f"A ZMQOSError that is a {base.__name__}."},
            )
        cls = found
    return cls(errno, message) if errno is not None else cls(message)
