"""``trizmq keygen``: a new CURVE key pair in Z85.

To stdout (``public-key: ...`` / ``secret-key: ...``), or with ``--out PREFIX`` as
the certificate files of pyzmq's ``zmq.auth`` and czmq (:mod:`trizmq.auth`):
``PREFIX.key`` (the public certificate, mode 0644) and ``PREFIX.key_secret`` (both
keys, created exclusively with mode 0600). Neither file is ever overwritten.
``--curve-secret-key @PREFIX.key_secret`` and ``--curve-server-key @PREFIX.key``
read them back, and so do ``zmq.auth.load_certificate`` and
``Authenticator(curve_directory=...)``.
"""

from __future__ import annotations

import click

from ..auth import write_certificates
from ._common import CliError, describe
from ._keys import generate_keypair

__all__ = ["keygen", "write_keypair"]


def write_keypair(prefix: str, public: bytes, secret: bytes) -> tuple[str, str]:
    """Write ``PREFIX.key`` (public, 0644) and ``PREFIX.key_secret`` (0600); return
    (secret path, public path)."""
    try:
        public_path, secret_path = write_certificates(prefix, public, secret, exclusive=True)
    except FileExistsError as exc:
        raise CliError(f"{exc.filename} already exists; not overwriting it") from None
    except OSError as exc:
        raise CliError(f"cannot create the certificates {prefix}.key*: {describe(exc)}") from None
    return secret_path, public_path


@click.command()
@click.option(
    "-o",
    "--out",
    metavar="PREFIX",
    help="Write the certificates PREFIX.key (public, 0644) and PREFIX.key_secret (0600), "
    "as pyzmq's zmq.auth does, instead of printing.",
)
def keygen(out: str | None) -> int:
    """Generate a CURVE key pair (Z85).

    \b
    Examples:
      trizmq keygen
      trizmq keygen --out server     # server.key (public), server.key_secret
    """
    public, secret = generate_keypair()
    if out is None:
        click.echo(f"public-key: {public.decode()}")
        click.echo(f"secret-key: {secret.decode()}")
    else:
        secret_path, public_path = write_keypair(out, public, secret)
        click.echo(f"wrote {secret_path} and {public_path}", err=True)
    return 0
