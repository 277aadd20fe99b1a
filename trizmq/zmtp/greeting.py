"""The ZMTP greeting: building ours, in its stages, and judging the peer's.

Layout of the 64-byte ZMTP 3 greeting: ``FF | padding (8) | 7F | major | minor |
mechanism (20, NUL-padded) | as-server | filler (31)``. A ZMTP 2.0 (RFC 15) peer's
is 12 bytes: the same 10-byte signature, its revision (1) and its socket type.

Rules (37/ZMTP-3.1 §Version Negotiation, 23/ZMTP §Backwards Interoperability,
libzmq 4.3's ``zmtp_engine_t::receive_greeting_versioned``, libzmq-wire-notes §1):

* We send it in stages, as libzmq does: the 10-byte :data:`SIGNATURE` at once; the
  major version (:data:`MAJOR`, 3) once the peer's signature shows a versioned peer;
  then, once the peer's revision byte has come, the rest (:func:`greeting_rest`) to
  a ZMTP 3 peer, or the ZMTP 2.0 answer (``trizmq.zmtp.zmtp2``) to a revision-1
  peer. Together the stages are the same 64 bytes :func:`build_greeting` makes. The
  padding is ``00..01`` like libzmq without a routing id (a ZMTP 1.0 reader would
  see an empty identity frame).
* The peer's greeting is checked as soon as each deciding byte arrives
  (:func:`check_greeting_prefix`), so a peer we cannot speak to is refused at once
  rather than waited on forever.
* Byte 0 must be ``FF`` and byte 9 must have bit 0 set (else it is an unversioned
  ZMTP 1.0 peer, refused); the padding is never validated. Revision 1 is ZMTP 2.0
  (:data:`ZMTP2_REVISION`); revisions 0 and 2 are refused (:data:`LEGACY_VERSIONS`
  names them: libzmq would speak ZMTP 1.0 framing to the first, nobody sends the
  second); major 3 minor 0 is ZMTP 3.0; anything higher is accepted and spoken to
  as 3.1.
* The mechanism must equal ours exactly, NUL padding included. The as-server byte
  is recorded but never validated (libzmq always sends 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from .errors import ProtocolError

__all__ = [
    "GREETING_SIZE",
    "LEGACY_VERSIONS",
    "MAJOR",
    "SIGNATURE",
    "ZMTP2_REVISION",
    "Greeting",
    "build_greeting",
    "check_greeting_prefix",
    "greeting_rest",
    "parse_greeting",
]

GREETING_SIZE = 64
#: the first stage of our greeting, sent before anything is read
SIGNATURE = b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f"
#: the second stage, once the peer's signature is in: our major version
MAJOR = b"\x03"
_MINOR = b"\x01"
_MECHANISM_SIZE = 20
_FILLER = bytes(31)

#: the revision byte of a ZMTP 2.0 peer (RFC 15), which we answer in ZMTP 2.0
ZMTP2_REVISION = 1

#: major versions we refuse, with the protocol they belong to
LEGACY_VERSIONS: Mapping[int, str] = MappingProxyType({0: "ZMTP 1.0", 2: "ZMTP 2.x"})


@attrs.frozen(slots=True)
class Greeting:
    """What the peer's greeting announced."""

    version: tuple[int, int]
    mechanism: bytes
    as_server: bool


def _mechanism_field(name: bytes) -> bytes:
    if not 1 <= len(name) <= _MECHANISM_SIZE:
        raise ValueError(f"mechanism name must be 1-{_MECHANISM_SIZE} bytes: {name!r}")
    return name.ljust(_MECHANISM_SIZE, b"\x00")


def greeting_rest(mechanism: bytes, as_server: bool) -> bytes:
    """The last stage of our ZMTP 3 greeting, after :data:`SIGNATURE` and :data:`MAJOR`:
    the minor version, the mechanism and the as-server flag (53 bytes)."""
    return _MINOR + _mechanism_field(mechanism) + (b"\x01" if as_server else b"\x00") + _FILLER


def build_greeting(mechanism: bytes, as_server: bool) -> bytes:
    """Our whole greeting, announcing ZMTP 3.1: every stage at once."""
    return SIGNATURE + MAJOR + greeting_rest(mechanism, as_server)


def check_greeting_prefix(data: bytes | bytearray) -> None:
    """Refuse a peer as soon as the bytes received so far (``data``) prove it unusable."""
    n = len(data)
    if n >= 1 and data[0] != 0xFF:
        raise ProtocolError("not a ZMTP 3 peer: unversioned greeting (ZMTP 1.0)")
    if n >= 10 and not data[9] & 0x01:
        raise ProtocolError("not a ZMTP 3 peer: unversioned greeting (ZMTP 1.0)")
    if n >= 11 and data[10] in LEGACY_VERSIONS:
        legacy = LEGACY_VERSIONS[data[10]]
        raise ProtocolError(
            f"peer speaks {legacy}; only ZMTP 2.0 (revision 1) and 3.0 or later are supported"
        )


def _mechanism_name(field: bytes) -> str:
    return field.rstrip(b"\x00").decode("ascii", "replace") or "<empty>"


def parse_greeting(data: bytes, mechanism: bytes) -> Greeting:
    """Judge the peer's 64-byte ZMTP 3 greeting ``data`` against our ``mechanism`` name."""
    check_greeting_prefix(data)
    field = data[12:32]
    if field != _mechanism_field(mechanism):
        raise ProtocolError(
            f"security mechanism mismatch: peer uses {_mechanism_name(field)}, "
            f"we use {_mechanism_name(mechanism)}",
            cause="mechanism",
        )
    return Greeting((data[10], data[11]), bytes(field.rstrip(b"\x00")), bool(data[32]))
