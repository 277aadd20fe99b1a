"""What a codec around an inner ZMTP connection reads straight from it.

:class:`~trizmq.zmtp.zws.ZwsConnection` (ZMTP over WebSocket) and
:class:`~trizmq.zmtp.compressed.CompressedConnection` (ZMTP with its message parts
compressed) each speak ZMTP through an inner
:class:`~trizmq.zmtp.connection.Connection`, which keeps the handshake, the
mechanism and what the peer told of itself. :class:`InnerConnectionFacts` answers
those reads from the inner connection, once for both codecs; each codec writes only
what it changes (the bytes it sends, the events it returns, when it is closed).

Rule: only facts the inner connection owns whole belong here. The bytes a codec
sends (``encode_*``) are never inherited: a codec that forgot one would put plain
ZMTP on its wire.
"""

from __future__ import annotations

from .connection import Connection
from .mechanism import Mechanism, ZapRequest

__all__ = ["InnerConnectionFacts"]


class InnerConnectionFacts:
    """The base of a codec around an inner :class:`Connection` (its ``_inner``):
    the handshake's state, the mechanism and the peer's facts, as the inner
    connection has them."""

    _inner: Connection

    @property
    def handshake_complete(self) -> bool:
        return self._inner.handshake_complete

    @property
    def pending_zap(self) -> ZapRequest | None:
        return self._inner.pending_zap

    @property
    def mechanism(self) -> Mechanism:
        return self._inner.mechanism

    @property
    def peer_socket_type(self) -> str:
        return self._inner.peer_socket_type

    @property
    def peer_identity(self) -> bytes:
        return self._inner.peer_identity

    @property
    def peer_version(self) -> tuple[int, int]:
        """The version of the peer's greeting (over ZWS, which has none, (3, 1) once
        the upgrade is done: how far a peer got, for the slots)."""
        return self._inner.peer_version

    @property
    def handshake_commands_received(self) -> int:
        return self._inner.handshake_commands_received
