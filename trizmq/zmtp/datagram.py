"""libzmq's udp:// datagram for RADIO/DISH, sans I/O (no RFC exists; libzmq ``udp_engine``).

One RADIO message is exactly one UDP datagram::

    offset 0        group length N (one byte, 0-255)
    offset 1..N     group
    offset N+1..end body (the rest of the datagram)

There is no ZMTP on udp: no greeting, handshake, security, metadata, multipart,
JOIN/LEAVE or heartbeat.

Rules:

* A whole datagram is at most :data:`MAX_DATAGRAM` (8192) bytes, libzmq's
  ``MAX_UDP_MSG``. :func:`encode_datagram` raises ``ValueError`` for a bigger one
  (libzmq's sender drops it silently; the runtime decides whether to drop or raise)
  and for a group longer than 255 bytes.
* :func:`decode_datagram` raises :class:`~trizmq.zmtp.ProtocolError` for an empty
  datagram, a group length running past the end, or a datagram over the limit
  (libzmq reads at most 8192 bytes, so it would receive such a datagram truncated:
  it is refused rather than delivered cut). The receiver drops that one datagram;
  there is no connection to close. It never raises anything else.
* A receiver should read with a buffer of at least ``MAX_DATAGRAM + 1`` bytes so
  that an oversized datagram is detected instead of silently truncated.
"""

from __future__ import annotations

from .errors import ProtocolError

__all__ = ["MAX_DATAGRAM", "MAX_GROUP", "decode_datagram", "encode_datagram"]

#: libzmq's MAX_UDP_MSG: the largest datagram (length byte, group and body)
MAX_DATAGRAM = 8192
#: ZMQ_GROUP_MAX_LENGTH
MAX_GROUP = 255


def encode_datagram(
    group: bytes | bytearray | memoryview, body: bytes | bytearray | memoryview
) -> bytes:
    """The datagram carrying ``body`` for ``group``; ValueError if it cannot be sent."""
    glen = len(group)
    if glen > MAX_GROUP:
        raise ValueError(f"a group is at most {MAX_GROUP} bytes, got {glen}")
    size = 1 + glen + len(body)
    if size > MAX_DATAGRAM:
        raise ValueError(
            f"a udp datagram is at most {MAX_DATAGRAM} bytes (group and body "
            f"{MAX_DATAGRAM - 1}), this one would be {size}"
        )
    return b"".join((bytes((glen,)), group, body))


def decode_datagram(data: bytes | bytearray | memoryview) -> tuple[bytes, bytes]:
    """``(group, body)`` of one received datagram; ProtocolError if it is malformed."""
    size = len(data)
    if not size:
        raise ProtocolError("empty udp datagram")
    if size > MAX_DATAGRAM:
        raise ProtocolError(f"udp datagram of {size} bytes exceeds {MAX_DATAGRAM}")
    end = 1 + data[0]
    if end > size:
        raise ProtocolError(
            f"udp datagram group length {end - 1} exceeds the {size - 1} bytes that follow"
        )
    view = memoryview(data)
    return bytes(view[1:end]), bytes(view[end:])
