"""Encode and decode ZMTP metadata (READY, and PLAIN/CURVE INITIATE/READY boxes).

Wire form of one property (23/ZMTP, libzmq-wire-notes §2.2)::

    name-len (1 byte) | name | value-len (4 bytes, big-endian) | value

Rules:

* Properties go out in the mapping's order; callers build the order libzmq uses
  (Socket-Type, Identity, then application ``X-`` properties).
* Decoding is strict: the body must split exactly into properties; a truncated
  property or a stray trailing byte is a :class:`ProtocolError`, and so is an empty
  name.
* Names are kept exactly as sent (libzmq matches them case-sensitively) and are
  decoded as Latin-1 so that no byte sequence can fail to decode. A repeated name
  keeps its last value.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from .errors import ProtocolError

__all__ = ["decode_metadata", "encode_metadata"]

_MAX_VALUE = 0x7FFF_FFFF  # the RFC caps values at INT32_MAX
_U32 = struct.Struct(">I")


def encode_metadata(properties: Mapping[str, bytes]) -> bytes:
    """The wire form of ``properties``; ``ValueError`` for a name or value out of range."""
    out = bytearray()
    for name, value in properties.items():
        raw = name.encode("ascii")
        if not 1 <= len(raw) <= 255:
            raise ValueError(f"metadata name must be 1-255 bytes: {name!r}")
        if len(value) > _MAX_VALUE:
            raise ValueError(f"metadata value too long for {name!r}")
        out.append(len(raw))
        out += raw
        out += _U32.pack(len(value))
        out += value
    return bytes(out)


def decode_metadata(body: bytes) -> dict[str, bytes]:
    """The properties in ``body``, in wire order; :class:`ProtocolError` if malformed."""
    properties: dict[str, bytes] = {}
    pos = 0
    end = len(body)
    while pos < end:
        name_len = body[pos]
        if name_len == 0:
            raise ProtocolError("malformed metadata: empty property name")
        name_end = pos + 1 + name_len
        if name_end > end:
            raise ProtocolError("malformed metadata: truncated property name")
        name = body[pos + 1 : name_end].decode("latin-1")
        if name_end + 4 > end:
            raise ProtocolError(f"malformed metadata: truncated value size of {name!r}")
        (value_len,) = _U32.unpack_from(body, name_end)
        value_end = name_end + 4 + value_len
        if value_end > end:
            raise ProtocolError(f"malformed metadata: truncated value of {name!r}")
        properties[name] = bytes(body[name_end + 4 : value_end])
        pos = value_end
    return properties
