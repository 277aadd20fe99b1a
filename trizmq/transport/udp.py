"""``udp://``: the datagram transport of RADIO (connects, sends) and DISH (binds, receives).

There is no ZMTP on udp (libzmq wire notes §8): one message is one datagram, encoded
by :mod:`trizmq.zmtp.udp`. This module only opens the sockets:

* :func:`open_receiver` binds for a DISH: a unicast address (``*`` = all IPv4
  interfaces, port 0 resolved), or a multicast group, for which it binds the
  wildcard address on the port with ``SO_REUSEADDR``/``SO_REUSEPORT`` (several
  dishes on one host can share it) and joins the group on the given interface
  (``udp://IFACE;GROUP:PORT``, an interface name or address; the default interface
  otherwise);
* :func:`open_sender` prepares a RADIO's socket: the destination is resolved
  (host names allowed); for a multicast group, hops (TTL) 1 and loopback on, as
  libzmq's defaults, and the outgoing interface when one is named.

Multicast is IPv4 only here (libzmq needs an interface name for IPv6 multicast and
trizmq does not support that form yet); a bad interface raises ``EndpointError``.
"""

from __future__ import annotations

import ipaddress
import socket as _stdlib_socket
import struct
from typing import Any

import trio

from .._endpoint import Endpoint
from .._errors import EndpointError

__all__ = ["UdpReceiver", "UdpSender", "open_receiver", "open_sender"]

#: libzmq reads at most this many bytes per datagram (wire notes §8.1)
MAX_DATAGRAM = 8192


def _is_multicast(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def _interface_address(endpoint: Endpoint) -> tuple[str, int]:
    """(IPv4 address, interface index) of the endpoint's interface; defaults for none/``*``."""
    iface = endpoint.interface
    if iface is None or iface == "*":
        return "0.0.0.0", 0
    try:
        ipaddress.IPv4Address(iface)
    except ValueError:
        pass
    else:
        return iface, 0
    try:
        return "0.0.0.0", _stdlib_socket.if_nametoindex(iface)
    except OSError:
        raise EndpointError(f"endpoint {str(endpoint)!r}: no network interface {iface!r}") from None


class UdpReceiver:
    """A DISH's bound udp socket."""

    def __init__(self, sock: trio.socket.SocketType, endpoint: str) -> None:
        self.socket = sock
        #: the endpoint actually bound (port 0 resolved)
        self.endpoint = endpoint

    async def receive(self) -> bytes:
        """The next datagram; one byte over :data:`MAX_DATAGRAM` is read, so that the
        decoder refuses an oversized datagram instead of delivering it cut."""
        data, _address = await self.socket.recvfrom(MAX_DATAGRAM + 1)
        return data  # type: ignore[no-any-return,unused-ignore]

    async def aclose(self) -> None:
        """Close the socket; idempotent."""
        self.socket.close()
        await trio.lowlevel.checkpoint()


class UdpSender:
    """A RADIO's udp socket and its destination."""

    def __init__(self, sock: trio.socket.SocketType, address: Any) -> None:
        self.socket = sock
        self.address = address

    async def send(self, datagram: bytes) -> None:
        """Send one datagram to the destination."""
        await self.socket.sendto(datagram, self.address)

    def close(self) -> None:
        """Close the socket."""
        self.socket.close()


async def open_receiver(endpoint: Endpoint) -> UdpReceiver:
    """Bind a DISH's udp endpoint; ``OSError`` naming it if the address is taken."""
    host, port = endpoint.host or "*", endpoint.port or 0
    multicast = _is_multicast(host)
    if multicast:
        family = _stdlib_socket.AF_INET
        bind_host = "0.0.0.0"
    else:
        bind_host = "0.0.0.0" if host == "*" else host
        infos = await trio.socket.getaddrinfo(bind_host, port, type=_stdlib_socket.SOCK_DGRAM)
        if not infos:
            raise EndpointError(f"endpoint {str(endpoint)!r}: {host!r} does not resolve")
        family, _, _, _, sockaddr = infos[0]
        bind_host = str(sockaddr[0])
    sock = trio.socket.socket(family, _stdlib_socket.SOCK_DGRAM)
    try:
        sock.setsockopt(_stdlib_socket.SOL_SOCKET, _stdlib_socket.SO_REUSEADDR, 1)
        if multicast and hasattr(_stdlib_socket, "SO_REUSEPORT"):
            sock.setsockopt(_stdlib_socket.SOL_SOCKET, _stdlib_socket.SO_REUSEPORT, 1)
        try:
            await sock.bind((bind_host, port))
        except OSError as exc:
            raise OSError(exc.errno, f"{endpoint}: {exc.strerror}") from None
        if multicast:
            address, index = _interface_address(endpoint)
            group = _stdlib_socket.inet_aton(host)
            # struct ip_mreqn: group, local address, interface index
            mreqn = group + _stdlib_socket.inet_aton(address) + struct.pack("@i", index)
            sock.setsockopt(_stdlib_socket.IPPROTO_IP, _stdlib_socket.IP_ADD_MEMBERSHIP, mreqn)
        bound_port = sock.getsockname()[1]
    except BaseException:
        sock.close()
        raise
    shown = host if multicast or host == "*" else bind_host
    iface = f"{endpoint.interface};" if endpoint.interface is not None else ""
    shown = f"[{shown}]" if ":" in shown else shown
    return UdpReceiver(sock, f"udp://{iface}{shown}:{bound_port}")


async def open_sender(endpoint: Endpoint) -> UdpSender:
    """A RADIO's socket towards ``endpoint``; ``OSError`` if the host does not resolve."""
    host, port = endpoint.host or "", endpoint.port or 0
    infos = await trio.socket.getaddrinfo(host, port, type=_stdlib_socket.SOCK_DGRAM)
    if not infos:
        raise OSError(f"{endpoint}: {host!r} does not resolve")
    family, _, _, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, _stdlib_socket.SOCK_DGRAM)
    try:
        if _is_multicast(host) and family == _stdlib_socket.AF_INET:
            sock.setsockopt(_stdlib_socket.IPPROTO_IP, _stdlib_socket.IP_MULTICAST_TTL, 1)
            sock.setsockopt(_stdlib_socket.IPPROTO_IP, _stdlib_socket.IP_MULTICAST_LOOP, 1)
            address, index = _interface_address(endpoint)
            if address != "0.0.0.0" or index:
                mreqn = (
                    _stdlib_socket.inet_aton("0.0.0.0")
                    + _stdlib_socket.inet_aton(address)
                    + struct.pack("@i", index)
                )
                sock.setsockopt(_stdlib_socket.IPPROTO_IP, _stdlib_socket.IP_MULTICAST_IF, mreqn)
    except BaseException:
        sock.close()
        raise
    return UdpSender(sock, sockaddr)
