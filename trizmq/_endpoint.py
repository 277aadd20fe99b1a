"""Endpoints: ``transport://address`` text parsed into :class:`Endpoint`, through the
one table from scheme to parser.

This module sits below the options and the transports, so that both can use it
without importing each other: the options parse their ``bind``/``connect`` lists
here, and :mod:`trizmq.transport` fills the table
(:func:`~trizmq.transport.register_transport` adds a transport, which parses its own
addresses, under its scheme). The table holds whatever parses a scheme; the
transport layer's :func:`~trizmq.transport.transport_for` reads the same table.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from ._errors import EndpointError

__all__ = [
    "Endpoint",
    "EndpointParser",
    "add_scheme",
    "parse_endpoint",
    "parser_for",
    "remove_scheme",
    "schemes",
]


@attrs.frozen(slots=True)
class Endpoint:
    """A validated endpoint; build it with :func:`parse_endpoint`."""

    transport: str
    address: str
    host: str | None = None
    port: int | None = None
    path: str | None = None
    #: udp multicast only: the interface (name, address or ``*``) before the ``;``
    interface: str | None = None

    def __str__(self) -> str:
        if self.host is not None and self.port is not None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            iface = f"{self.interface};" if self.interface is not None else ""
            path = self.path or ""
            return f"{self.transport}://{iface}{host}:{self.port}{path}"
        return f"{self.transport}://{self.address}"


class EndpointParser(Protocol):
    """What the table needs of a transport: its scheme, and the parsing of its addresses."""

    #: the endpoint scheme, ``"tcp"``
    scheme: str

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """The endpoint ``text`` (whose part after ``://`` is ``address``);
        :class:`EndpointError` naming the problem."""
        ...


#: scheme -> its transport: the one table (filled by ``trizmq.transport``)
_SCHEMES: dict[str, EndpointParser] = {}

#: schemes libzmq knows and trizmq does not: a clearer message than "unknown"
_NOT_SUPPORTED = frozenset({"pgm", "epgm", "norm", "tipc", "vmci", "vsock"})


def add_scheme(parser: EndpointParser) -> None:
    """Put ``parser`` in the table under its scheme (replacing one of that scheme)."""
    _SCHEMES[parser.scheme] = parser


def remove_scheme(scheme: str) -> None:
    """Take ``scheme`` out of the table (a no-op if it is not there)."""
    _SCHEMES.pop(scheme, None)


def schemes() -> list[str]:
    """The registered schemes, in the order they were registered."""
    return list(_SCHEMES)


def parser_for(scheme: str) -> EndpointParser | None:
    """What the table holds under ``scheme``, if anything."""
    return _SCHEMES.get(scheme)


def parse_endpoint(text: object, *, for_bind: bool) -> Endpoint:
    """Parse *text* as an endpoint for ``bind`` (``for_bind=True``) or ``connect``.

    Raises :class:`EndpointError` (a ``ValueError``) naming the endpoint and the
    problem; host names are not resolved here.
    """
    if not isinstance(text, str):
        raise EndpointError(
            f"endpoint {text!r} is not a string (got {type(text).__name__}); "
            "expected text like 'tcp://127.0.0.1:5555'"
        )
    scheme, sep, address = text.partition("://")
    if not sep:
        raise EndpointError(
            f"endpoint {text!r} has no '://' separator; expected 'transport://address'"
        )
    if not scheme:
        raise EndpointError(f"endpoint {text!r} has no transport before '://'")
    parser = _SCHEMES.get(scheme)
    if parser is None:
        supported = ", ".join(schemes())
        if scheme.lower() in _NOT_SUPPORTED:
            raise EndpointError(
                f"endpoint {text!r}: transport {scheme!r} is not supported by trizmq "
                f"(supported: {supported})"
            )
        raise EndpointError(
            f"endpoint {text!r}: unknown transport {scheme!r} (supported: {supported})"
        )
    if not address:
        raise EndpointError(f"endpoint {text!r} has an empty address after '://'")
    if "\x00" in address:
        raise EndpointError(f"endpoint {text!r} contains a NUL character")
    return parser.parse(text, address, for_bind=for_bind)
