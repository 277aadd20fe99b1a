"""ZMTP 2.0 (RFC 15), as libzmq 4.3 speaks it to a revision-1 peer: its tables and checks.

A peer whose greeting carries revision 1 (JeroMQ 0.3, libzmq 3.x) is answered in
ZMTP 2.0, after the staged greeting of :mod:`trizmq.zmtp.greeting` has told it apart;
the :class:`~trizmq.zmtp.connection.Connection` keeps the state and calls these.

Rules (15/ZMTP §Formal Grammar, §Socket Compatibility, §Publish-Subscribe; libzmq
4.3's ``zmtp_engine_t::receive_greeting_versioned`` and ``handshake_v2_0``,
``v2_encoder_t``, ``v2_decoder_t``):

* NULL only: ZMTP 2.0 has no security mechanism. A socket configured for PLAIN or
  CURVE refuses a revision-1 peer as soon as that byte arrives, before it answers
  (:func:`refuse_security`, cause ``"downgrade"``): to talk to it would drop the
  security the socket was set up with. libzmq 4.3 refuses it too (its
  ``zap_enabled()`` is true for every mechanism but NULL).
* Our greeting's last stage is one byte, our socket type's number in RFC 15
  (:data:`SOCKET_TYPE_CODES`; XPUB and XSUB are PUB and SUB on the wire, as the RFC
  says; libzmq sends its own 9 and 10, which no 2.0 peer checks). A type RFC 15 has
  no number for (CLIENT, RADIO, the other draft types) cannot speak ZMTP 2.0: refused
  (``"socket_type"``). The greeting is then 12 bytes each way (:data:`GREETING_SIZE`).
* The peer's socket-type byte is looked up in :data:`PEER_SOCKET_TYPES` (RFC 15's
  0-8, and libzmq's 9 and 10 for XPUB and XSUB) and checked against the types the
  socket talks to (its row's peers, which the Connection is given), as a READY's
  ``Socket-Type`` is (``"socket_type"``).
* Then each side sends its identity as one final frame (:func:`identity_frame`: ours
  is a REQ's, DEALER's or ROUTER's ``Identity``, empty for the other types, as
  libzmq's is by default). The peer's must be a final frame (flags 0, or LONG) of at
  most 255 bytes, checked at its header, before any of its body is kept
  (:func:`parse_identity`); it is the peer's identity, a ROUTER's routing id.
* Traffic is framed as ZMTP 3's messages are (MORE, LONG, short or long sizes: our
  encoders' bytes are the same), with no COMMAND bit: flags with it, or with a
  reserved bit, are a protocol error (:data:`HEADER_SIZE`, :func:`flags_error`).
  There are no commands at all: subscriptions travel as ``\\x01topic`` and
  ``\\x00topic`` messages both ways (the ZMTP 3.0 form), no PING or PONG (heartbeats
  are off for such a peer: ``docs/interop.md``), no ERROR (a refusal only closes).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType

from .errors import ProtocolError
from .frames import LONG, LONG_HEADER, MORE

__all__ = [
    "GREETING_SIZE",
    "HEADER_SIZE",
    "MAX_IDENTITY",
    "PEER_SOCKET_TYPES",
    "SOCKET_TYPE_CODES",
    "ZMTP2_VERSION",
    "flags_error",
    "identity_frame",
    "parse_identity",
    "peer_socket_type",
    "refuse_security",
    "socket_type_byte",
]

#: what :attr:`Connection.peer_version` says of a revision-1 peer
ZMTP2_VERSION = (2, 0)
#: signature (10), revision, socket type
GREETING_SIZE = 12
#: the longest identity a peer may send (a routing id is at most 255 bytes)
MAX_IDENTITY = 255

#: our socket type -> the byte that names it in our greeting (RFC 15)
SOCKET_TYPE_CODES: Mapping[str, int] = MappingProxyType(
    {
        "PAIR": 0,
        "PUB": 1,
        "SUB": 2,
        "REQ": 3,
        "REP": 4,
        "DEALER": 5,
        "ROUTER": 6,
        "PULL": 7,
        "PUSH": 8,
        # at the protocol level XPUB and XSUB are PUB and SUB (RFC 15)
        "XPUB": 1,
        "XSUB": 2,
    }
)

#: the peer's socket-type byte -> its type: RFC 15's, and libzmq's numbers for XPUB
#: and XSUB (what a libzmq or JeroMQ XPUB/XSUB sends)
PEER_SOCKET_TYPES: Mapping[int, str] = MappingProxyType(
    {
        0: "PAIR",
        1: "PUB",
        2: "SUB",
        3: "REQ",
        4: "REP",
        5: "DEALER",
        6: "ROUTER",
        7: "PULL",
        8: "PUSH",
        9: "XPUB",
        10: "XSUB",
    }
)

#: every valid flags byte of ZMTP 2.0 -> the length of the header it starts; a plain
#: dict, as the traffic parser looks flags up in it
HEADER_SIZE: dict[int, int] = {0x00: 2, MORE: 2, LONG: 9, LONG | MORE: 9}


def flags_error(flags: int) -> str:
    """Why ``flags`` (a byte not in :data:`HEADER_SIZE`) does not start a ZMTP 2.0 frame."""
    if flags & ~0x07:
        return f"reserved frame flag bits set (flags 0x{flags:02X})"
    return f"a COMMAND frame from a ZMTP 2.0 peer, which has no commands (flags 0x{flags:02X})"


def refuse_security(mechanism: bytes) -> None:
    """Refuse a revision-1 peer unless our ``mechanism`` is NULL (see the rules)."""
    if mechanism != b"NULL":
        shown = mechanism.decode("ascii", "replace")
        raise ProtocolError(
            f"peer speaks ZMTP 2.0, which has no security mechanism: "
            f"a {shown} socket does not downgrade to it",
            cause="downgrade",
        )


def socket_type_byte(socket_type: str) -> bytes:
    """The last stage of our greeting to a revision-1 peer: our type's RFC 15 number."""
    code = SOCKET_TYPE_CODES.get(socket_type)
    if code is None:
        raise ProtocolError(
            f"peer speaks ZMTP 2.0, which has no {socket_type} socket type",
            cause="socket_type",
        )
    return bytes((code,))


def peer_socket_type(code: int, ours: str, peers: Collection[str] | None) -> str:
    """The peer's socket type from its greeting's byte ``code``: one of ``peers``, the
    types ``ours`` talks to (any, when None), as a ZMTP 3 peer's ``Socket-Type`` is."""
    peer = PEER_SOCKET_TYPES.get(code)
    if peer is None:
        raise ProtocolError(
            f"ZMTP 2.0 peer announced socket type {code}, which RFC 15 does not define",
            cause="socket_type",
        )
    if peers is not None and peer not in peers:
        raise ProtocolError(
            f"incompatible socket type: {ours} cannot talk to {peer}", cause="socket_type"
        )
    return peer


def identity_frame(identity: bytes) -> bytes:
    """Our identity as the final short frame that follows a ZMTP 2.0 greeting."""
    if len(identity) > MAX_IDENTITY:
        raise ValueError(f"identity is at most {MAX_IDENTITY} bytes")
    return bytes((0, len(identity))) + identity


def parse_identity(src: bytes, pos: int) -> tuple[bytes, int] | int:
    """The peer's identity frame at ``src[pos:]``: ``(identity, end)`` once it is all in
    hand, else how many bytes from ``pos`` the next look needs. Its flags and its size
    are checked as soon as its header is in, before its body is kept."""
    n = len(src) - pos
    if n < 1:
        return 1
    flags = src[pos]
    if flags not in HEADER_SIZE:
        raise ProtocolError(f"ZMTP 2.0 identity frame: {flags_error(flags)}")
    if flags & MORE:
        raise ProtocolError("ZMTP 2.0 identity frame with the MORE flag: it is one frame")
    header = HEADER_SIZE[flags]
    if n < header:
        return header
    size = src[pos + 1] if header == 2 else LONG_HEADER.unpack_from(src, pos)[1]
    if size > MAX_IDENTITY:
        raise ProtocolError(f"peer identity of {size} bytes exceeds {MAX_IDENTITY}")
    end = pos + header + size
    if end > len(src):
        return header + size
    return src[pos + header : end], end
