"""Parse and validate ZeroMQ endpoint strings (``transport://address``) into :class:`Endpoint`."""

from __future__ import annotations

import ipaddress
import re

import attrs

from ._errors import EndpointError

__all__ = [
    "IPC_PATH_MAX",
    "INPROC_NAME_MAX",
    "SUPPORTED_TRANSPORTS",
    "Endpoint",
    "parse_endpoint",
]

SUPPORTED_TRANSPORTS: frozenset[str] = frozenset({"tcp", "ipc", "inproc", "udp"})

# Transports libzmq knows but trizmq does not implement: these get a clearer message
# than "unknown transport" so users do not hunt for a typo.
_UNSUPPORTED_TRANSPORTS: frozenset[str] = frozenset(
    {"pgm", "epgm", "norm", "ws", "wss", "tipc", "vmci", "vsock"}
)

# sun_path is 108 bytes on Linux and must hold a terminating NUL for filesystem paths;
# for an abstract name the leading NUL takes the place that "@" has in the text, so the
# same limit applies to both spellings.
IPC_PATH_MAX = 107
INPROC_NAME_MAX = 255

_PORT_RE = re.compile(r"[0-9]+")
# Permissive on purpose: the resolver is the real judge of a host name; this only
# rejects text that can never be one (whitespace, separators, brackets, ...).
_HOST_RE = re.compile(r"[A-Za-z0-9_.\-]+")


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
        if self.transport in ("tcp", "udp") and self.host is not None and self.port is not None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            iface = f"{self.interface};" if self.interface is not None else ""
            return f"{self.transport}://{iface}{host}:{self.port}"
        return f"{self.transport}://{self.address}"


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
    transport, sep, address = text.partition("://")
    if not sep:
        raise EndpointError(
            f"endpoint {text!r} has no '://' separator; expected 'transport://address'"
        )
    if not transport:
        raise EndpointError(f"endpoint {text!r} has no transport before '://'")
    if transport not in SUPPORTED_TRANSPORTS:
        if transport.lower() in _UNSUPPORTED_TRANSPORTS:
            raise EndpointError(
                f"endpoint {text!r}: transport {transport!r} is not supported by trizmq "
                "(supported: tcp, ipc, inproc, udp)"
            )
        raise EndpointError(
            f"endpoint {text!r}: unknown transport {transport!r} (supported: tcp, ipc, inproc, udp)"
        )
    if not address:
        raise EndpointError(f"endpoint {text!r} has an empty address after '://'")
    if "\x00" in address:
        raise EndpointError(f"endpoint {text!r} contains a NUL character")

    if transport == "udp" and ";" in address:
        # libzmq's udp://IFACE;MCAST:PORT: the interface to join or send multicast on
        interface, _, target = address.partition(";")
        if not interface or not _HOST_RE.fullmatch(interface.replace("*", "x")):
            raise EndpointError(f"endpoint {text!r}: bad interface {interface!r} before ';'")
        host, port = _parse_host_port(text, target, for_bind=for_bind)
        try:
            multicast = ipaddress.ip_address(host).is_multicast
        except ValueError:
            multicast = False
        if not multicast:
            raise EndpointError(
                f"endpoint {text!r}: an interface is allowed only with a multicast address"
            )
        return Endpoint(transport, address, host=host, port=port, interface=interface)
    if transport in ("tcp", "udp"):
        host, port = _parse_host_port(text, address, for_bind=for_bind)
        return Endpoint(transport=transport, address=address, host=host, port=port)
    if transport == "ipc":
        return Endpoint(
            transport=transport, address=address, path=_check_ipc(text, address, for_bind)
        )
    if len(address) > INPROC_NAME_MAX:
        raise EndpointError(
            f"endpoint {text!r}: inproc name is {len(address)} characters long, "
            f"at most {INPROC_NAME_MAX} are allowed"
        )
    return Endpoint(transport=transport, address=address, path=address)


def _parse_host_port(text: str, address: str, *, for_bind: bool) -> tuple[str, int]:
    if ";" in address:
        raise EndpointError(
            f"endpoint {text!r}: the source-address form 'src;dst' is not supported"
        )
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            raise EndpointError(f"endpoint {text!r}: IPv6 address has '[' without ']'")
        host = address[1:close]
        rest = address[close + 1 :]
        if not rest.startswith(":"):
            raise EndpointError(
                f"endpoint {text!r}: expected ':port' right after the ']' of the IPv6 address"
            )
        port_text = rest[1:]
        if not host:
            raise EndpointError(f"endpoint {text!r}: empty IPv6 address between '[' and ']'")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise EndpointError(
                f"endpoint {text!r}: {host!r} between brackets is not an IPv6 address"
            ) from None
    else:
        host, colon, port_text = address.rpartition(":")
        if not colon:
            raise EndpointError(f"endpoint {text!r} has no port; expected 'host:port'")
        if not host:
            raise EndpointError(f"endpoint {text!r} has no host before ':port'")
        if "[" in host or "]" in host:
            raise EndpointError(f"endpoint {text!r}: malformed IPv6 brackets")
        if ":" in host:
            raise EndpointError(
                f"endpoint {text!r}: an IPv6 address must be written in brackets, "
                "like 'tcp://[::1]:5555'"
            )
        if host != "*" and not _HOST_RE.fullmatch(host):
            raise EndpointError(f"endpoint {text!r}: {host!r} is not a valid host")

    if not port_text:
        raise EndpointError(f"endpoint {text!r} has no port after ':'")
    if port_text == "*":
        port = 0
    elif _PORT_RE.fullmatch(port_text):
        port = int(port_text)
        if port > 65535:
            raise EndpointError(f"endpoint {text!r}: port {port} is out of range 0-65535")
    else:
        raise EndpointError(f"endpoint {text!r}: port {port_text!r} is not a number")

    if not for_bind:
        if host == "*":
            raise EndpointError(
                f"endpoint {text!r}: cannot connect to the wildcard host '*'; name a concrete host"
            )
        if port == 0:
            raise EndpointError(
                f"endpoint {text!r}: cannot connect to a wildcard port ('*' or 0); "
                "name a concrete port"
            )
    return host, port


def _check_ipc(text: str, path: str, for_bind: bool) -> str:
    if path == "*":
        if not for_bind:
            raise EndpointError(
                f"endpoint {text!r}: 'ipc://*' picks a fresh path and only works with bind"
            )
        return path
    if path == "@":
        raise EndpointError(f"endpoint {text!r}: empty abstract socket name after '@'")
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > IPC_PATH_MAX:
        raise EndpointError(
            f"endpoint {text!r}: ipc path is too long ({size} bytes); "
            f"at most {IPC_PATH_MAX} bytes fit in a Unix socket address"
        )
    return path
