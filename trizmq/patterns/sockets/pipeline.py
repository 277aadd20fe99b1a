"""PUSH and PULL (30/PIPELINE).

PUSH round-robins each message to the next peer whose pipe is under its
high-water mark and waits when none is; it never receives. PULL fair-queues over
its peers and never sends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..routing import RoundRobin
from .base import Message, PeerLike, SocketStrategy, Wake, can_take
from .socket_type import SocketType

if TYPE_CHECKING:
    from ..._options import Options

__all__ = ["PULL", "PUSH", "PullStrategy", "PushStrategy", "RoundRobinOut"]


class RoundRobinOut(SocketStrategy):
    """Outgoing round-robin over peers that can take a message; waits when none can.

    Shared by PUSH, DEALER, REQ, CLIENT and SCATTER (30/PIPELINE, 28/REQREP, 41, 49).
    """

    can_send = True

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        self.outbound: RoundRobin[PeerLike] = RoundRobin()

    def attach(self, peer: PeerLike) -> bool:
        self.outbound.add(peer)
        self.shortcut_send()
        return super().attach(peer)

    def detach(self, peer: PeerLike) -> None:
        self.outbound.remove(peer)
        self.shortcut_send()
        super().detach(peer)

    def shortcut_send(self) -> None:
        """With exactly one peer, :attr:`route` is that peer's pipe's ``offer``: what
        :meth:`send` would do anyway, one call less per message (the commonest case);
        else :meth:`send` itself."""
        only = self.outbound.only
        if only is not None and type(self).send is RoundRobinOut.send:
            self.route = only.out_pipe.offer
        else:
            self.route = self.send

    def target(self) -> PeerLike | None:
        """The peer the next message goes to: the next one that can take it."""
        peer = self.outbound.only
        if peer is not None:
            # one peer, the common case: no rotation
            return None if peer.out_pipe.full else peer
        return self.outbound.next_peer(can_take)

    def send_batch(self, msgs: list[Message], start: int) -> int:
        """With exactly one peer, the batch goes to its pipe with one call (as far as
        its mark lets it: the rest waits, as one send at a time would)."""
        only = self.outbound.only
        if only is None or type(self).send is not RoundRobinOut.send:
            return super().send_batch(msgs, start)
        batch: list[object] = msgs[start:] if start else msgs  # type: ignore[assignment]
        return start + only.out_pipe.offer_many(batch)

    def send(self, msg: Message) -> bool:
        peer = self.outbound.only
        if peer is not None:
            # one peer, the common case: no rotation, one call
            return peer.out_pipe.offer(msg)
        peer = self.outbound.next_peer(can_take)
        if peer is None:
            return False
        peer.out_pipe.put(msg)
        return True


class PushStrategy(RoundRobinOut):
    """Round-robin out; no input."""

    socket_type = "PUSH"
    can_recv = False

    def recv(self) -> Message | None:
        raise NotImplementedError


class PullStrategy(SocketStrategy):
    """Fair-queue in."""

    socket_type = "PULL"


#: the rows of the socket-type table
PUSH = SocketType(PushStrategy, peers={"PULL"}, conflate_out=True)
PULL = SocketType(PullStrategy, peers={"PUSH"}, conflate_in=True)
