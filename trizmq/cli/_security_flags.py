"""The security options of ``send`` and ``recv``, and the ONE place they meet the sockets.

Options (all optional; NULL security when none is given):

* CURVE client: ``--curve-server-key`` (the server's public key) with
  ``--curve-secret-key`` (and ``--curve-public-key``, derived from the secret when
  omitted).
* CURVE server: ``--curve-secret-key`` (and optionally ``--curve-public-key``)
  without ``--curve-server-key``.
* PLAIN client: ``--plain-username`` and ``--plain-password``; with
  ``--plain-server`` the socket is a PLAIN server that admits exactly that user.

Keys are checked here (40 Z85 characters, 64 hex digits, or ``@FILE``), so a bad key
is reported as such. :func:`open_security` is where the checked options become the
``security=`` argument of the socket: until trizmq exports its mechanism classes it
fails with one clear line.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TypeVar

import attrs
import click

import trizmq

from ._common import CliError
from ._keys import load_key, public_of

if TYPE_CHECKING:
    from .._security import Security

__all__ = [
    "SecurityPlan",
    "open_security",
    "plan_security",
    "plan_tls",
    "security_options",
]

F = TypeVar("F", bound=Callable[..., object])


def security_options(fn: F) -> F:
    """Add the security options to a click command."""
    options = [
        click.option(
            "--curve-server-key",
            metavar="KEY",
            help="CURVE client: the server's public key (Z85, hex or @FILE).",
        ),
        click.option(
            "--curve-public-key",
            metavar="KEY",
            help="CURVE: this socket's public key (derived from the secret key if omitted).",
        ),
        click.option(
            "--curve-secret-key",
            metavar="KEY",
            help="CURVE: this socket's secret key; without --curve-server-key, be a server.",
        ),
        click.option("--plain-username", metavar="NAME", help="PLAIN user name."),
        click.option("--plain-password", metavar="PASSWORD", help="PLAIN password."),
        click.option(
            "--plain-server",
            is_flag=True,
            help="PLAIN server admitting only --plain-username/--plain-password.",
        ),
        click.option(
            "--tls-cert",
            metavar="FILE",
            help="wss:// bind: this server's certificate chain (PEM; the key too, or --tls-key).",
        ),
        click.option("--tls-key", metavar="FILE", help="wss:// bind: the certificate's key (PEM)."),
        click.option(
            "--tls-ca",
            metavar="FILE",
            help="wss:// connect: trust the CA certificates in FILE (PEM) instead of the system's.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@attrs.frozen
class SecurityPlan:
    """Checked security options: ``mechanism`` is curve-client/-server, plain-client/-server."""

    mechanism: str
    server_key: bytes | None = None
    public_key: bytes | None = None
    secret_key: bytes | None = attrs.field(default=None, repr=False)
    username: bytes | None = None
    password: bytes | None = attrs.field(default=None, repr=False)


def plan_security(
    curve_server_key: str | None = None,
    curve_public_key: str | None = None,
    curve_secret_key: str | None = None,
    plain_username: str | None = None,
    plain_password: str | None = None,
    plain_server: bool = False,
) -> SecurityPlan | None:
    """Check the options; ``None`` for NULL security."""
    curve = any(k is not None for k in (curve_server_key, curve_public_key, curve_secret_key))
    plain = plain_server or plain_username is not None or plain_password is not None
    if curve and plain:
        raise CliError("choose CURVE or PLAIN options, not both", code=2)
    if curve:
        server = load_key(curve_server_key, "--curve-server-key") if curve_server_key else None
        public = load_key(curve_public_key, "--curve-public-key") if curve_public_key else None
        if curve_secret_key is None:
            raise CliError("CURVE needs --curve-secret-key", code=2)
        secret = load_key(curve_secret_key, "--curve-secret-key")
        derived = public_of(secret)
        if public is not None and public != derived:
            raise CliError("--curve-public-key does not belong to --curve-secret-key")
        kind = "curve-client" if server is not None else "curve-server"
        return SecurityPlan(kind, server_key=server, public_key=derived, secret_key=secret)
    if plain:
        if plain_username is None or plain_password is None:
            raise CliError("PLAIN needs both --plain-username and --plain-password", code=2)
        user, password = plain_username.encode(), plain_password.encode()
        if len(user) > 255 or len(password) > 255:
            raise CliError("PLAIN user names and passwords are at most 255 bytes", code=2)
        kind = "plain-server" if plain_server else "plain-client"
        return SecurityPlan(kind, username=user, password=password)
    return None


def plan_tls(
    cert: str | None = None, key: str | None = None, ca: str | None = None
) -> ssl.SSLContext | None:
    """The ``ssl_context`` of ``--tls-cert``/``--tls-key`` (a server's, to bind wss://) or
    ``--tls-ca`` (a client's, to connect); None for neither (a wss:// connect then
    trusts the system's CAs)."""
    if key is not None and cert is None:
        raise CliError("--tls-key needs --tls-cert", code=2)
    if cert is not None and ca is not None:
        raise CliError(
            "--tls-cert (to bind wss://) and --tls-ca (to connect to wss://) do not combine "
            "in one command",
            code=2,
        )
    try:
        if cert is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            return context
        if ca is not None:
            return ssl.create_default_context(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        raise CliError(f"TLS: {exc}") from None
    return None


@contextlib.asynccontextmanager
async def open_security(plan: SecurityPlan | None) -> AsyncIterator[Security | None]:
    """Yield the ``security=`` value for ``plan`` (None: NULL), running what it needs.

    This is the single wiring point between the command line and trizmq's security:
    a PLAIN server also runs an Authenticator for the lifetime of the command.
    """
    if plan is None:
        yield None
        return
    if plan.mechanism == "curve-client":
        assert plan.server_key and plan.public_key and plan.secret_key
        yield trizmq.CurveClient(
            server_key=plan.server_key, public_key=plan.public_key, secret_key=plan.secret_key
        )
    elif plan.mechanism == "curve-server":
        assert plan.secret_key is not None
        yield trizmq.CurveServer(secret_key=plan.secret_key)
    elif plan.mechanism == "plain-client":
        assert plan.username is not None and plan.password is not None
        yield trizmq.PlainClient(username=plan.username, password=plan.password)
    else:
        assert plan.username is not None and plan.password is not None
        async with trizmq.Authenticator(passwords={plan.username: plan.password}):
            yield trizmq.PlainServer()
