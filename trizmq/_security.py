"""The public security settings: what ``security=`` takes (API.md, Security).

Each class is a frozen, validated description of one side of a mechanism; the
runtime calls :meth:`mechanism` once per connection to get a fresh sans-I/O
:class:`~trizmq.zmtp.Mechanism`. Rules:

* Arguments are checked when the object is built, and errors name the argument:
  keys are 32 raw bytes or 40 Z85 characters (``bytes`` or ``str``) and are stored
  raw; a client's ``public_key`` must belong to its ``secret_key``; PLAIN usernames
  and passwords are ``bytes`` or ``str`` (UTF-8) of at most 255 bytes.
* Secrets never appear in ``repr``.
* One :class:`CurveServer` shares a rotating cookie secret among its connections
  (:class:`~trizmq.zmtp.curve.CookieKeys`), so servers keep no per-client key
  material before a client's INITIATE.
"""

from __future__ import annotations

import attrs

from .zmtp.curve import (
    CookieKeys,
    CurveClientMechanism,
    CurveServerMechanism,
    curve_keypair,
    curve_public,
)
from .zmtp.mechanism import Mechanism
from .zmtp.plain import PlainClientMechanism, PlainServerMechanism
from .zmtp.z85 import decode_key

__all__ = [
    "CurveClient",
    "CurveServer",
    "PlainClient",
    "PlainServer",
    "Security",
    "curve_keypair",
    "curve_public",
]

_MAX_CREDENTIAL = 255


def _secret_key(value: bytes | str) -> bytes:
    return decode_key(value, name="secret_key")


def _public_key(value: bytes | str) -> bytes:
    return decode_key(value, name="public_key")


def _server_key(value: bytes | str) -> bytes:
    return decode_key(value, name="server_key")


def _credential(value: bytes | str, name: str) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    elif not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes or str, not {type(value).__name__}")
    if len(value) > _MAX_CREDENTIAL:
        raise ValueError(f"{name} is at most {_MAX_CREDENTIAL} bytes, got {len(value)}")
    return bytes(value)


def _username(value: bytes | str) -> bytes:
    return _credential(value, "username")


def _password(value: bytes | str) -> bytes:
    return _credential(value, "password")


@attrs.frozen(slots=True)
class CurveServer:
    """CURVE, server side: ``CurveServer(secret_key=...)``; the public key is derived.

    One object may serve many connections: they share a rotating cookie secret, so
    the server keeps no per-client key material before a client's INITIATE. Which
    clients are admitted is decided by the :class:`~trizmq.Authenticator` serving the
    ``trio.run``; without one, any client that knows the server's public key is.

    Args:
        secret_key: The server's long-term secret key, as 32 raw bytes or 40 Z85
            characters (``bytes`` or ``str``); stored raw, never shown in ``repr``.

    Raises:
        TypeError: If ``secret_key`` is neither ``bytes`` nor ``str``.
        ValueError: If ``secret_key`` is not 32 raw bytes or 40 valid Z85 characters.
    """

    secret_key: bytes = attrs.field(converter=_secret_key, repr=False, kw_only=True)
    _cookie_keys: CookieKeys = attrs.field(
        factory=CookieKeys, init=False, repr=False, eq=False, alias="_cookie_keys"
    )

    @property
    def public_key(self) -> bytes:
        """The server's public key in Z85 (what clients pass as ``server_key``).

        40 bytes of Z85, derived from ``secret_key``.
        """
        return curve_public(self.secret_key)

    def mechanism(self) -> Mechanism:
        """A fresh CURVE server mechanism for one connection.

        The runtime calls this once per connection.

        Returns:
            A new sans-I/O CURVE server mechanism sharing this object's cookie secret.
        """
        return CurveServerMechanism(self.secret_key, cookie_keys=self._cookie_keys)


@attrs.frozen(slots=True)
class CurveClient:
    """CURVE, client side: the server's public key and the client's own key pair.

    Each key is 32 raw bytes or 40 Z85 characters (``bytes`` or ``str``) and is
    stored raw; ``secret_key`` never appears in ``repr``.

    Args:
        server_key: The server's long-term public key (``CurveServer.public_key``).
        public_key: The client's long-term public key.
        secret_key: The client's long-term secret key.

    Raises:
        TypeError: If a key is neither ``bytes`` nor ``str``.
        ValueError: If a key is not 32 raw bytes or 40 valid Z85 characters, or if
            ``public_key`` is not the public key of ``secret_key``.
    """

    server_key: bytes = attrs.field(converter=_server_key, kw_only=True)
    public_key: bytes = attrs.field(converter=_public_key, kw_only=True)
    secret_key: bytes = attrs.field(converter=_secret_key, repr=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if decode_key(curve_public(self.secret_key), name="secret_key") != self.public_key:
            raise ValueError("public_key is not the public key of secret_key")

    def mechanism(self) -> Mechanism:
        """A fresh CURVE client mechanism for one connection.

        Returns:
            A new sans-I/O CURVE client mechanism with this object's keys.
        """
        return CurveClientMechanism(self.server_key, self.public_key, self.secret_key)


@attrs.frozen(slots=True)
class PlainServer:
    """PLAIN, server side: credentials are checked by the ZAP authenticator.

    Takes no arguments. Without an :class:`~trizmq.Authenticator` serving the
    ``trio.run`` every PLAIN client is refused, as in libzmq.
    """

    def mechanism(self) -> Mechanism:
        """A fresh PLAIN server mechanism for one connection.

        Returns:
            A new sans-I/O PLAIN server mechanism.
        """
        return PlainServerMechanism()


@attrs.frozen(slots=True)
class PlainClient:
    """PLAIN, client side: ``PlainClient(username=..., password=...)``.

    PLAIN sends the credentials in clear text: use it on trusted networks only.

    Args:
        username: The user name, ``bytes`` or ``str`` (encoded as UTF-8), at most
            255 bytes.
        password: The password, ``bytes`` or ``str`` (encoded as UTF-8), at most
            255 bytes; never shown in ``repr``.

    Raises:
        TypeError: If ``username`` or ``password`` is neither ``bytes`` nor ``str``.
        ValueError: If ``username`` or ``password`` is over 255 bytes.
    """

    username: bytes = attrs.field(converter=_username, kw_only=True)
    password: bytes = attrs.field(converter=_password, repr=False, kw_only=True)

    def mechanism(self) -> Mechanism:
        """A fresh PLAIN client mechanism for one connection.

        Returns:
            A new sans-I/O PLAIN client mechanism with these credentials.
        """
        return PlainClientMechanism(self.username, self.password)


#: anything ``security=`` accepts besides None (NULL)
Security = CurveServer | CurveClient | PlainServer | PlainClient
