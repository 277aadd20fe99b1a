"""The handshake of one stream connection, and the ZAP questions it asks.

One job: drive a codec from its first bytes to traffic (greeting, mechanism
commands, ZAP), over a trio stream, within ``handshake_ivl``.

Rules:

* The codec decides everything about the protocol; this module only moves its
  bytes, answers its ZAP requests and stops at the first violation
  (:class:`~trizmq.zmtp.ProtocolError`, raised to the connection actor).
* ZAP (27/ZAP) is asked of the ``trio.run``'s :class:`~trizmq.Authenticator`.
  Without one, as in libzmq 4.3, a CURVE server admits every client that completes
  the handshake and a PLAIN server refuses every client. NULL asks only for sockets
  with a ``zap_domain``.
* A refusal is sent to the peer (the mechanism's ERROR) before the connection
  closes, so that it backs off instead of reconnecting at once.
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import TYPE_CHECKING

import trio

from .._zap import ZAP_VERSION, current_authenticator
from ..zmtp import ProtocolError, ZapReply, ZapRequest, decode_metadata
from ..zmtp.events import Cancel, Join, Leave, PeerError, Ping, Subscribe
from ..zmtp.queue_items import INCOMING_MESSAGES

if TYPE_CHECKING:
    from .._options import Options
    from ..transport.base import Codec
    from ..zmtp.connection import Received
    from .peers import Peer
    from .slots import HandshakeSlot, HandshakeSlots

__all__ = ["RECEIVE_SIZE", "Zap", "handshake"]

log = logging.getLogger("trizmq")

#: bytes asked of each read
RECEIVE_SIZE = 256 * 1024

#: what the handshake hands on of the traffic parsed with its last bytes: messages
#: (lists of frames, or a one-frame message's bytes: ``Codec.bare_messages``) and the
#: commands the connection acts on (a PING among them is answered like any other)
_TRAFFIC = (*INCOMING_MESSAGES, Subscribe, Cancel, Join, Leave, Ping)
_SEND_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class _ConnectionLost(Exception):
    """The peer closed the connection during the handshake.

    Private: the connection actor catches it and reports a failed handshake; it never
    reaches the application.
    """


class Zap:
    """One socket's ZAP client: numbered requests to the run's authenticator."""

    def __init__(self, options: Options) -> None:
        self.options = options
        #: requests made so far (the next request's id)
        self.requests = 0

    def request(
        self, mechanism: bytes, credentials: tuple[bytes, ...], peer: Peer
    ) -> list[bytes]:
        """The RFC 27 request frames for one handshake."""
        self.requests += 1
        address = peer.remote_address.rpartition(":")[0].strip("[]")
        return [
            ZAP_VERSION,
            b"%d" % self.requests,
            self.options.zap_domain.encode(),
            address.encode(),
            peer.identity,
            mechanism,
            *credentials,
        ]

    async def ask(self, request: ZapRequest, peer: Peer) -> ZapReply:
        """The authenticator's answer; without one, CURVE admits and PLAIN refuses."""
        handler = current_authenticator()
        if handler is None:
            await trio.lowlevel.checkpoint()
            if request.mechanism == b"PLAIN":
                return ZapReply("400", "no authenticator: a PLAIN server admits nobody")
            return ZapReply("200", "OK")
        reply = await self._answer(request.mechanism, request.credentials, peer)
        if reply is None:
            return ZapReply("500", "internal error in the authenticator")
        code = reply[2].decode("ascii", "replace") if len(reply) > 2 else "500"
        text = reply[3].decode("utf-8", "replace") if len(reply) > 3 else ""
        user_id = reply[4] if len(reply) > 4 else b""
        try:
            metadata = decode_metadata(reply[5]) if len(reply) > 5 and reply[5] else {}
        except ProtocolError:
            return ZapReply("500", "malformed metadata in the ZAP reply")
        return ZapReply(code, text, user_id, metadata)

    async def null_admits(self, peer: Peer) -> bool:
        """NULL consults ZAP only for sockets with a zap_domain, as in libzmq."""
        if self.options.security is not None or not self.options.zap_domain:
            return True
        if current_authenticator() is None:
            return True
        reply = await self._answer(b"NULL", (), peer)
        return reply is not None and len(reply) > 2 and reply[2] == b"200"

    async def _answer(
        self, mechanism: bytes, credentials: tuple[bytes, ...], peer: Peer
    ) -> list[bytes] | None:
        """The run's authenticator's reply frames; None when it failed (fail closed:
        logged with its traceback, the client refused, the socket unharmed)."""
        handler = current_authenticator()
        assert handler is not None
        try:
            return await handler.handle(self.request(mechanism, credentials, peer))
        except Exception:
            log.exception("%s: the authenticator failed; the client is refused", peer.endpoint)
            return None


async def _send_quietly(stream: trio.abc.Stream, data: bytes) -> None:
    """Send a last word (a refusal) to a peer that may already be gone."""
    with contextlib.suppress(*_SEND_ERRORS):
        await stream.send_all(data)


async def handshake(
    stream: trio.abc.Stream,
    codec: Codec,
    peer: Peer,
    zap: Zap,
    limit: float | None,
    slots: HandshakeSlots,
    slot: HandshakeSlot | None = None,
) -> list[Received]:
    """Greeting, mechanism exchange and ZAP, within ``limit`` seconds (and, for an
    accepted connection, within its ``slot``: see ``slots.py``).

    Returns the traffic that arrived with the handshake's last bytes. Raises
    ``ProtocolError`` (refused), ``trio.TooSlowError`` (too slow), ``_HandshakeCut``
    (evicted, or no greeting in time), :class:`_ConnectionLost` or a stream error
    (gone).
    """
    with trio.fail_after(limit if limit is not None else math.inf), slots.guard(slot):
        await stream.send_all(codec.start())
        if codec.handshake_complete:
            return []  # a codec with no handshake (a STREAM socket's raw bytes)
        while True:
            data = await stream.receive_some(RECEIVE_SIZE)
            if not data:
                raise _ConnectionLost("peer closed the connection during the handshake")
            try:
                events = codec.receive_data(data)
            except ProtocolError:
                await _send_quietly(stream, codec.refusal())  # a WebSocket's 400, say
                raise
            if slot is not None and not slot.greeted:
                slot.note_progress(codec)
            while codec.pending_zap is not None:
                reply = await zap.ask(codec.pending_zap, peer)
                try:
                    events += codec.zap_reply(reply)
                except ProtocolError as exc:
                    # the refusal's ERROR is queued: let the client read why
                    await _send_quietly(stream, codec.data_to_send())
                    if reply.status_code != "200":
                        exc.cause = f"zap_{reply.status_code}"
                    raise
            if codec.handshake_complete and not await zap.null_admits(peer):
                await _send_quietly(stream, codec.data_to_send() + codec.encode_error("400"))
                raise ProtocolError("ZAP refused the client (400)", cause="zap_400")
            out = codec.data_to_send()
            if out:
                await stream.send_all(out)
            for event in events:
                if event.__class__ is PeerError:
                    raise ProtocolError(f"peer sent ERROR: {event.reason}", cause="peer_error")
            if codec.handshake_complete:
                return [e for e in events if e.__class__ in _TRAFFIC]
