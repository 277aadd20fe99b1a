"""STREAM (libzmq's ``ZMQ_STREAM``): raw TCP peers, addressed by routing id.

Every message is ``[routing id, data]``. A new connection is announced by
``[id, b""]`` and its end by another ``[id, b""]`` (libzmq's ``ZMQ_STREAM_NOTIFY``);
what arrives in one read is one message. Sending ``[id, data]`` writes ``data`` as
it is; ``[id, b""]`` closes that connection. Ids are generated (a zero byte and a
32-bit counter, as libzmq's); a message to an unknown id is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...zmtp.queue_items import Hangup
from .reqrep import RouterStrategy
from .socket_type import SocketType

if TYPE_CHECKING:
    from .base import Message, PeerLike

__all__ = ["STREAM", "StreamStrategy"]


class StreamStrategy(RouterStrategy):
    """ROUTER's addressing over raw connections, with connect/disconnect notices."""

    socket_type = "STREAM"
    OPTION_FIELDS = {}  # noqa: RUF012 - ROUTER's flags do not apply

    def connected(self, peer: PeerLike) -> None:
        rid = self.generate_id()  # a new id per connection, as libzmq gives
        peer.routing_id = rid
        self.routes[rid] = peer
        peer.in_pipe.put([b""])  # the connection's notice
        peer.in_pipe.passed += 1  # a message for the application, as those read

    def disconnected(self, peer: PeerLike) -> None:
        self._ended(peer)

    def detach(self, peer: PeerLike) -> None:
        if peer.connected or peer.routing_id in self.routes:
            self._ended(peer)
        super().detach(peer)

    def _ended(self, peer: PeerLike) -> None:
        # the routing id stays on the peer until the notice is read
        if peer.routing_id is not None and self.routes.get(peer.routing_id) is peer:
            del self.routes[peer.routing_id]
            peer.in_pipe.put([b""])
            peer.in_pipe.passed += 1

    def send(self, msg: Message) -> bool:
        if len(msg) < 2:
            return True  # a lone id: nothing to write (libzmq drops it too)
        peer = self.routes.get(msg[0])
        if peer is None:
            self.dropped += 1
            self.no_route += 1
            return True
        data = msg[1:]
        if not any(data):
            # [id, b""] closes the connection, after what was sent before it
            if peer.out_pipe:
                peer.out_pipe.put(Hangup())
            else:
                self.kick(peer)
            return True
        if peer.out_pipe.full:
            return False  # wait for room: a stream's bytes are not dropped
        peer.out_pipe.put(data)
        return True


#: STREAM's row of the socket-type table: raw bytes, no ZMTP, so no peer types
STREAM = SocketType(StreamStrategy, peers=(), codec="raw")
