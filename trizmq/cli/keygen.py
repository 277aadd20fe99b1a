"""``trizmq keygen``: a new CURVE key pair in Z85.

To stdout (``public-key: ...`` / ``secret-key: ...``), or with ``--out PREFIX`` to
``PREFIX.key`` (the secret key, created exclusively with mode 0600) and
``PREFIX.key_public`` (the public key, mode 0644). Each file holds one line: the
40 Z85 characters. Neither file is ever overwritten. ``--curve-secret-key @PREFIX.key``
reads such a file back.
"""

from __future__ import annotations

import contextlib
import os

import click

from ._common import CliError, describe
from ._keys import generate_keypair

__all__ = ["keygen", "write_keypair"]


def _create(path: str, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
        os.write(fd, data)
    finally:
        os.close(fd)


def write_keypair(prefix: str, public: bytes, secret: bytes) -> tuple[str, str]:
    """Write ``PREFIX.key`` (0600) and ``PREFIX.key_public`` (0644); return both paths."""
    secret_path, public_path = f"{prefix}.key", f"{prefix}.key_public"
    for path in (secret_path, public_path):
        if os.path.lexists(path):
            raise CliError(f"{path} already exists; not overwriting it")
    try:
        _create(secret_path, secret + b"\n", 0o600)
    except OSError as exc:
        raise CliError(f"cannot create {secret_path}: {describe(exc)}") from None
    try:
        _create(public_path, public + b"\n", 0o644)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(secret_path)
        raise CliError(f"cannot create {public_path}: {describe(exc)}") from None
    return secret_path, public_path


@click.command()
@click.option(
    "-o",
    "--out",
    metavar="PREFIX",
    help="Write PREFIX.key (secret, 0600) and PREFIX.key_public (0644) instead of printing.",
)
def keygen(out: str | None) -> int:
    """Generate a CURVE key pair (Z85).

    \b
    Examples:
      trizmq keygen
      trizmq keygen --out server     # server.key, server.key_public
    """
    public, secret = generate_keypair()
    if out is None:
        click.echo(f"public-key: {public.decode()}")
        click.echo(f"secret-key: {secret.decode()}")
    else:
        secret_path, public_path = write_keypair(out, public, secret)
        click.echo(f"wrote {secret_path} and {public_path}", err=True)
    return 0
