"""CURVE keys for the command line: Z85 text, ``@file`` arguments, key pair generation.

The key material itself comes from trizmq (``trizmq.curve_keypair``,
``trizmq.z85_encode``/``z85_decode``); this module only reads keys from arguments.
"""

from __future__ import annotations

from pathlib import Path

import trizmq
from trizmq import z85_decode, z85_encode
from trizmq.auth import load_certificate

from ._common import CliError

__all__ = ["generate_keypair", "load_key", "z85_decode", "z85_encode"]


def load_key(value: str, option: str) -> bytes:
    """A 32-byte key from 40 Z85 characters, 64 hex digits, or ``@FILE`` holding either
    or a certificate (:mod:`trizmq.auth`; its secret key for a ``--...-secret-key``
    option, its public key otherwise)."""
    text = value
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"{option}: cannot read key file {str(path)!r}: {exc}") from None
        if "public-key" in text:
            text = _from_certificate(path, option)
    text = text.strip()
    try:
        if len(text) == 40:
            return z85_decode(text.encode("ascii"))
        if len(text) == 64:
            return bytes.fromhex(text)
    except (ValueError, UnicodeEncodeError) as exc:
        raise CliError(f"{option}: bad key: {exc}") from None
    raise CliError(
        f"{option}: bad key: expected 40 Z85 characters or 64 hex digits, "
        f"got {len(text)} characters"
    )


def _from_certificate(path: Path, option: str) -> str:
    try:
        public, secret = load_certificate(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"{option}: {exc}") from None
    if "secret" in option:
        if secret is None:
            raise CliError(f"{option}: {str(path)!r} is a public certificate (no secret key)")
        return secret.decode("ascii")
    return public.decode("ascii")


def generate_keypair() -> tuple[bytes, bytes]:
    """A new CURVE key pair as (public, secret), each 40 bytes of Z85."""
    public, secret = trizmq.curve_keypair()
    return _as_bytes(public), _as_bytes(secret)


def _as_bytes(key: bytes | str) -> bytes:
    return key.encode("ascii") if isinstance(key, str) else bytes(key)


def public_of(secret: bytes) -> bytes:
    """The raw public key of a raw secret key."""
    return z85_decode(_as_bytes(trizmq.curve_public(secret)))
