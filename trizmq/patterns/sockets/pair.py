"""PAIR (31/EXPAIR): one exclusive peer, messages both ways.

Rule: at most one peer is attached; libzmq closes any further connection while it
has one (``src/pair.cpp``), and so do we. Sending waits while there is no peer or
its pipe is full.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Message, PeerLike, SocketStrategy, Wake
from .socket_type import SocketType

if TYPE_CHECKING:
    from ..._options import Options

__all__ = ["PAIR", "PairStrategy"]


class PairStrategy(SocketStrategy):
    """Exclusive pair."""

    socket_type = "PAIR"
    can_send = True

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        self.peer: PeerLike | None = None

    def attach(self, peer: PeerLike) -> bool:
        if self.peer is not None and self.peer is not peer:
            return False
        self.peer = peer
        return super().attach(peer)

    def detach(self, peer: PeerLike) -> None:
        if self.peer is peer:
            self.peer = None
        super().detach(peer)

    def send(self, msg: Message) -> bool:
        peer = self.peer
        if peer is None or peer.out_pipe.full:
            return False
        peer.out_pipe.put(msg)
        return True


#: PAIR's row of the socket-type table
PAIR = SocketType(PairStrategy, peers={"PAIR"})
