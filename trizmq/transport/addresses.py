"""Endpoint address forms shared by transports: ``host:port``, ipc paths, inproc names.

One job: validate the part of an endpoint after ``://`` without resolving
anything; the resolver and the operating system are the final judges.
"""

from __future__ import annotations

import ipaddress
import re

from .._errors import EndpointError

__all__ = [
    "INPROC_NAME_MAX",
    "IPC_PATH_MAX",
    "check_inproc_name",
    "check_ipc_path",
    "is_multicast",
    "parse_host_port",
]

# sun_path is 108 bytes on Linux and must hold a terminating NUL for filesystem paths;
# for an abstract name the leading NUL takes the place that "@" has in the text, so the
# same limit applies to both spellings.
IPC_PATH_MAX = 107
INPROC_NAME_MAX = 255

_PORT_RE = re.compile(r"[0-9]+")
# Permissive on purpose: the resolver is the real judge of a host name; this only
# rejects text that can never be one (whitespace, separators, brackets, ...).
HOST_RE = re.compile(r"[A-Za-z0-9_.\-]+")


def is_multicast(host: str) -> bool:
    """True for an IP multicast address (never for a host name)."""
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def check_inproc_name(text: str, name: str) -> str:
    """``name`` if it is short enough for an inproc endpoint."""
    if len(name) > INPROC_NAME_MAX:
        raise EndpointError(
            f"endpoint {text!r}: inproc name is {len(name)} characters long, "
            f"at most {INPROC_NAME_MAX} are allowed"
        )
    return name


def parse_host_port(text: str, address: str, *, for_bind: bool) -> tuple[str, int]:
    """``(host, port)`` of ``host:port`` / ``[v6]:port`` / ``*:*``; ``EndpointError``
    naming the problem. A connect needs a concrete host and port."""
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
        if host != "*" and not HOST_RE.fullmatch(host):
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


def check_ipc_path(text: str, path: str, *, for_bind: bool) -> str:
    """``path`` if it can name a Unix socket (``*`` for bind, ``@name`` abstract)."""
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
