"""PAIR (31/EXPAIR): one exclusive peer, messages both ways.

Rule: at most one peer is attached; libzmq closes any further connection while it
has one (``src/pair.cpp``), and so do we. Sending waits while there is no peer or
its pipe is full.
"""

from __future__ import annotations

from typing import Any

from .base import SocketStrategy

__all__ = ["PairStrategy"]


class PairStrategy(SocketStrategy):
    """Exclusive pair."""

    socket_type = "PAIR"
    can_send = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.peer: Any = None

    def attach(self, peer: Any) -> bool:
        if self.peer is not None and self.peer is not peer:
            return False
        self.peer = peer
        return super().attach(peer)

    def detach(self, peer: Any) -> None:
        if self.peer is peer:
            self.peer = None
        super().detach(peer)

    def send(self, msg: list[bytes]) -> bool:
        peer = self.peer
        if peer is None or peer.out_pipe.full:
            return False
        peer.out_pipe.put(msg)
        return True
