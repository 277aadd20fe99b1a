"""The one exception of the protocol core: :class:`ProtocolError`.

Rule: a ``ProtocolError`` is always a *remote* error. The peer broke ZMTP (or sent
something we refuse, such as an old protocol version or an incompatible socket
type); the connection that raised it is dead and must be closed. Local misuse of
the API raises ``ValueError``/``TypeError`` or :class:`trizmq._errors.StateError`
instead, never ``ProtocolError``.
"""

from __future__ import annotations

from .._errors import ZMQError

__all__ = ["ProtocolError"]


class ProtocolError(ZMQError):
    """The peer violated the protocol; :attr:`reason` says how (it is also ``str(exc)``).

    Always a remote error: the connection that raised it is closed, the reason is
    logged, and it never reaches the caller of a socket method.

    Args:
        reason: What the peer did wrong; kept as the ``reason`` attribute.
        cause: What kind of violation, as the socket's counters name it (``sock.stats()``:
            ``"mechanism"``, ``"socket_type"``, ``"limit"``, ``"zap_<status>"``,
            ``"peer_error"``), ``"protocol_error"`` for any other; kept as ``cause``.
    """

    reason: str
    cause: str

    def __init__(self, reason: str, *, cause: str = "protocol_error") -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause

    def __str__(self) -> str:
        return self.reason
