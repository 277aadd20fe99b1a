"""CURVE certificates in the files pyzmq's ``zmq.auth`` and czmq write and read.

A certificate is a small text file in ZPL (ZeroMQ Property Language)::

    #   ZeroMQ CURVE Public Certificate
    metadata
    curve
        public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"

``NAME.key`` holds the public key and may be given to anyone; ``NAME.key_secret``
holds both keys (and the metadata) and is created readable by its owner only. The
files are byte-compatible with pyzmq's in both directions: what
:func:`create_certificates` writes, ``zmq.auth.load_certificate`` reads, and
:func:`load_certificate` reads what ``zmq.auth.create_certificates`` writes.
``Authenticator(curve_directory=...)`` admits the public keys of every ``*.key``
file in a directory, as ``zmq.auth``'s ``configure_curve(location=...)`` does.

    >>> import tempfile, trizmq.auth
    >>> public_path, secret_path = trizmq.auth.create_certificates(tempfile.mkdtemp(), "server")
    >>> public, secret = trizmq.auth.load_certificate(secret_path)
    >>> len(public), len(secret)
    (40, 40)
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path

from .zmtp.z85 import z85_decode

__all__ = ["create_certificates", "load_certificate", "load_certificates", "write_certificates"]

_SECRET_BANNER = """#   ****  Generated on {0} by trizmq  ****
#   ZeroMQ CURVE **Secret** Certificate
#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.

"""

_PUBLIC_BANNER = """#   ****  Generated on {0} by trizmq  ****
#   ZeroMQ CURVE Public Certificate
#   Exchange securely, or use a secure mechanism to verify the contents
#   of this file after exchange. Store public certificates in your home
#   directory, in the .curve subdirectory.

"""

#: the most bytes of a certificate file that are read (a real one has ~400)
MAX_CERTIFICATE_SIZE = 64 * 1024


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _write(
    path: Path,
    banner: str,
    public_key: bytes,
    secret_key: bytes | None,
    metadata: Mapping[str, str | bytes] | None,
    mode: int,
    exclusive: bool = False,
) -> None:
    lines = [banner, "metadata\n"]
    for key, value in (metadata or {}).items():
        key, value = _text(key), _text(value)
        if "\n" in key or "\n" in value or "=" in key:
            raise ValueError(f"metadata {key!r} = {value!r} cannot be written as ZPL")
        lines.append(f"    {key} = {value}\n")
    lines.append("curve\n")
    lines.append(f'    public-key = "{public_key.decode("ascii")}"\n')
    if secret_key is not None:
        lines.append(f'    secret-key = "{secret_key.decode("ascii")}"\n')
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), mode)  # exactly ``mode``, whatever the umask
        f.write("".join(lines))


def create_certificates(
    directory: str | os.PathLike[str],
    name: str,
    metadata: Mapping[str, str | bytes] | None = None,
) -> tuple[str, str]:
    """A new CURVE key pair, written as the certificates ``NAME.key`` and ``NAME.key_secret``.

    ``NAME.key`` (public, mode 0644) and ``NAME.key_secret`` (both keys and
    ``metadata``, mode 0600) are written in ``directory``. Existing files of those
    names are replaced, as pyzmq does.

    Args:
        directory: An existing directory to write the two files in.
        name: The certificates' base name, a plain file name (no directory part).
        metadata: Properties written in the secret certificate's ``metadata``
            section (``str`` or UTF-8 ``bytes``), or None.

    Returns:
        ``(public_path, secret_path)``, as ``zmq.auth.create_certificates``.

    Raises:
        ValueError: If ``name`` is empty or holds a path separator, or a metadata
            entry cannot be written as ZPL (a newline, or ``=`` in a key).
        OSError: If a file cannot be written.

    Example::

        public_path, secret_path = trizmq.auth.create_certificates("certificates", "server")
        public_key, secret_key = trizmq.auth.load_certificate(secret_path)
        server = trizmq.CurveServer(secret_key=secret_key)
    """
    from .zmtp.curve import curve_keypair

    if not name or os.sep in name or (os.altsep and os.altsep in name):
        raise ValueError(f"certificate name must be a plain file name, not {name!r}")
    public_key, secret_key = curve_keypair()
    return write_certificates(Path(directory) / name, public_key, secret_key, metadata)


def write_certificates(
    base: str | os.PathLike[str],
    public_key: bytes,
    secret_key: bytes,
    metadata: Mapping[str, str | bytes] | None = None,
    *,
    exclusive: bool = False,
) -> tuple[str, str]:
    """Write a given key pair (40-byte Z85 each) as ``BASE.key`` and ``BASE.key_secret``.

    The public certificate is made with mode 0644, the secret one (both keys and
    ``metadata``) with mode 0600. If the public one cannot be made, the secret one
    is removed again.

    Args:
        base: The path of the two files, without the ``.key`` / ``.key_secret``
            suffix.
        public_key: The public key, 40 bytes of Z85.
        secret_key: The secret key, 40 bytes of Z85.
        metadata: Properties written in the secret certificate's ``metadata``
            section (``str`` or UTF-8 ``bytes``), or None.
        exclusive: If True, raise ``FileExistsError`` rather than replace an existing
            file (keyword only).

    Returns:
        ``(public_path, secret_path)``.

    Raises:
        FileExistsError: With ``exclusive``, if either file exists.
        ValueError: If a metadata entry cannot be written as ZPL (a newline, or
            ``=`` in a key).
        OSError: If a file cannot be written.
    """
    public_path, secret_path = Path(f"{base}.key"), Path(f"{base}.key_secret")
    now = datetime.datetime.now()
    _write(
        secret_path, _SECRET_BANNER.format(now), public_key, secret_key, metadata, 0o600, exclusive
    )
    try:
        _write(public_path, _PUBLIC_BANNER.format(now), public_key, None, None, 0o644, exclusive)
    except BaseException:
        secret_path.unlink(missing_ok=True)
        raise
    return str(public_path), str(secret_path)


def _key(line: bytes, path: object) -> bytes:
    key = line.split(b"=", 1)[1].strip(b" \t'\"")
    try:
        if len(key) != 40:
            raise ValueError(f"{len(key)} characters, not 40")
        z85_decode(key)
    except ValueError as exc:
        raise ValueError(f"certificate {str(path)!r}: bad key: {exc}") from None
    return key


def load_certificate(path: str | os.PathLike[str]) -> tuple[bytes, bytes | None]:
    """``(public_key, secret_key)`` of a certificate file, as 40-byte Z85 ``bytes``.

    Reads the files of :func:`create_certificates`, pyzmq and czmq.

    Args:
        path: The certificate file, public (``NAME.key``) or secret
            (``NAME.key_secret``).

    Returns:
        ``(public_key, secret_key)``, each 40 bytes of Z85; ``secret_key`` is None
        for a public certificate.

    Raises:
        OSError: If the file cannot be read.
        ValueError: If it holds no public key, a key that is not 40 characters of Z85
            (pyzmq's loader takes anything there), or is over 64 KiB.
    """
    with open(path, "rb") as f:
        data = f.read(MAX_CERTIFICATE_SIZE + 1)
    if len(data) > MAX_CERTIFICATE_SIZE:
        raise ValueError(f"certificate {str(path)!r} is over {MAX_CERTIFICATE_SIZE} bytes")
    public_key: bytes | None = None
    secret_key: bytes | None = None
    for raw in data.splitlines():
        line = raw.strip()
        if line.startswith(b"#"):
            continue
        if line.startswith(b"public-key") and b"=" in line:
            public_key = _key(line, path)
        elif line.startswith(b"secret-key") and b"=" in line:
            secret_key = _key(line, path)
    if public_key is None:
        raise ValueError(f"no public key found in certificate {str(path)!r}")
    return public_key, secret_key


def load_certificates(directory: str | os.PathLike[str] = ".") -> dict[bytes, bool]:
    """The public keys of every ``*.key`` certificate in ``directory``.

    Args:
        directory: The directory to read.

    Returns:
        ``{public_key: True}`` for each certificate, each key 40 bytes of Z85, as
        ``zmq.auth.load_certificates``.

    Raises:
        OSError: If ``directory`` is not a directory (``NotADirectoryError``) or a
            certificate cannot be read.
        ValueError: For a malformed certificate.
    """
    root = Path(directory)
    if not root.is_dir():
        raise NotADirectoryError(f"not a certificate directory: {str(root)!r}")
    return {load_certificate(path)[0]: True for path in sorted(root.glob("*.key"))}
