"""Z85 (32/Z85), the printable encoding of CURVE keys, and key argument parsing.

Rules:

* :func:`z85_encode` takes a multiple of 4 bytes and gives 5 characters per 4 bytes
  (big-endian base 85 over the alphabet of the RFC).
* :func:`z85_decode` takes a multiple of 5 characters; a character outside the
  alphabet or a 5-character group above ``2**32 - 1`` is a ``ValueError`` naming
  its position.
* :func:`decode_key` accepts a key as 32 raw bytes or as 40 Z85 characters (``bytes``
  or ``str``) and returns the 32 raw bytes; anything else is a ``ValueError`` naming
  the argument, so configuration errors point at the option the caller got wrong.
"""

from __future__ import annotations

__all__ = ["KEY_SIZE", "Z85_KEY_SIZE", "decode_key", "z85_decode", "z85_encode"]

#: raw size of a Curve25519 key
KEY_SIZE = 32
#: size of a key in Z85
Z85_KEY_SIZE = 40

_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
#: byte value -> digit, or -1 for bytes outside the alphabet
_DIGITS: tuple[int, ...] = tuple(_ALPHABET.find(bytes((b,))) for b in range(256))
_POWERS = (85**4, 85**3, 85**2, 85, 1)


def z85_encode(data: bytes | bytearray | memoryview) -> bytes:
    """The Z85 text of ``data`` (whose length must be a multiple of 4), as ASCII bytes.

    Args:
        data: The bytes to encode; their length must be a multiple of 4.

    Returns:
        The Z85 text, 5 ASCII characters per 4 bytes of ``data``.

    Raises:
        ValueError: If the length of ``data`` is not a multiple of 4.
    """
    raw = bytes(data)
    if len(raw) % 4:
        raise ValueError(f"Z85 encodes a multiple of 4 bytes, not {len(raw)}")
    out = bytearray()
    alphabet = _ALPHABET
    for i in range(0, len(raw), 4):
        value = int.from_bytes(raw[i : i + 4], "big")
        for power in _POWERS:
            out.append(alphabet[value // power % 85])
    return bytes(out)


def z85_decode(text: bytes | bytearray | str) -> bytes:
    """The bytes encoded by ``text`` (a multiple of 5 Z85 characters).

    Args:
        text: Z85 text, as ASCII ``bytes`` or ``str``; its length must be a multiple
            of 5.

    Returns:
        The decoded bytes, 4 per 5 characters of ``text``.

    Raises:
        ValueError: If ``text`` is not ASCII, its length is not a multiple of 5, it
            holds a character outside the Z85 alphabet, or a 5-character group is
            above ``2**32 - 1`` (the message names the position).
    """
    if isinstance(text, str):
        try:
            raw = text.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError("Z85 text must be ASCII") from None
    else:
        raw = bytes(text)
    if len(raw) % 5:
        raise ValueError(f"Z85 text is a multiple of 5 characters, not {len(raw)}")
    out = bytearray()
    digits = _DIGITS
    for i in range(0, len(raw), 5):
        value = 0
        for j in range(i, i + 5):
            digit = digits[raw[j]]
            if digit < 0:
                raise ValueError(f"invalid Z85 character {chr(raw[j])!r} at position {j}")
            value = value * 85 + digit
        if value > 0xFFFF_FFFF:
            raise ValueError(f"Z85 group at position {i} overflows 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


def decode_key(key: bytes | bytearray | str, *, name: str) -> bytes:
    """The 32 raw bytes of a key given as 32 raw bytes or 40 Z85 characters."""
    if isinstance(key, str):
        if len(key) != Z85_KEY_SIZE:
            raise ValueError(
                f"{name} must be 40 Z85 characters or 32 raw bytes, got a str of {len(key)}"
            )
        try:
            return z85_decode(key)
        except ValueError as exc:
            raise ValueError(f"{name} is not valid Z85: {exc}") from None
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes or str, not {type(key).__name__}")
    if len(key) == KEY_SIZE:
        return bytes(key)
    if len(key) == Z85_KEY_SIZE:
        try:
            return z85_decode(key)
        except ValueError as exc:
            raise ValueError(f"{name} is not valid Z85: {exc}") from None
    raise ValueError(f"{name} must be 32 raw bytes or 40 Z85 characters, got {len(key)} bytes")
