"""``udp://``: the datagram transport of RADIO (connects, sends) and DISH (binds, receives).

There is no ZMTP on udp (libzmq wire notes §8): one message is one datagram, encoded
by :mod:`trizmq.zmtp.datagram`. A udp endpoint is one peer of the socket, fed (DISH) or
drained (RADIO) by one task the socket's runtime runs for it. The sockets:

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
import logging
import socket as _stdlib_socket
import struct
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Generic, cast

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from .._errors import EndpointError, os_error
from ..zmtp import ProtocolError
from ..zmtp.datagram import decode_datagram, encode_datagram
from .addresses import HOST_RE, is_multicast, parse_host_port
from .base import Endpoint, LinkHost, MessageBinding, PeerT
from .os_sockets import closed_on_error

__all__ = ["UDP", "UdpReceiver", "UdpSender", "UdpTransport", "open_receiver", "open_sender"]

log = logging.getLogger("trizmq")

#: libzmq reads at most this many bytes per datagram (wire notes §8.1)
MAX_DATAGRAM = 8192


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

    def __init__(
        self,
        sock: trio.socket.SocketType,
        address: tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes],
    ) -> None:
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
    multicast = is_multicast(host)
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
    with closed_on_error(sock):
        sock.setsockopt(_stdlib_socket.SOL_SOCKET, _stdlib_socket.SO_REUSEADDR, 1)
        if multicast and hasattr(_stdlib_socket, "SO_REUSEPORT"):
            sock.setsockopt(_stdlib_socket.SOL_SOCKET, _stdlib_socket.SO_REUSEPORT, 1)
        try:
            await sock.bind((bind_host, port))
        except OSError as exc:
            raise os_error(exc.errno, f"{endpoint}: {exc.strerror}") from None
        if multicast:
            address, index = _interface_address(endpoint)
            group = _stdlib_socket.inet_aton(host)
            # struct ip_mreqn: group, local address, interface index
            mreqn = group + _stdlib_socket.inet_aton(address) + struct.pack("@i", index)
            sock.setsockopt(_stdlib_socket.IPPROTO_IP, _stdlib_socket.IP_ADD_MEMBERSHIP, mreqn)
        bound_port = sock.getsockname()[1]
    shown = host if multicast or host == "*" else bind_host
    iface = f"{endpoint.interface};" if endpoint.interface is not None else ""
    shown = f"[{shown}]" if ":" in shown else shown
    return UdpReceiver(sock, f"udp://{iface}{shown}:{bound_port}")


async def open_sender(endpoint: Endpoint) -> UdpSender:
    """A RADIO's socket towards ``endpoint``; ``OSError`` if the host does not resolve."""
    host, port = endpoint.host or "", endpoint.port or 0
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=_stdlib_socket.SOCK_DGRAM)
    except trio.socket.gaierror as exc:
        message = f"{endpoint}: {host!r} does not resolve ({exc.strerror})"
        raise os_error(exc.errno, message, trio.socket.gaierror) from None
    if not infos:
        raise os_error(None, f"{endpoint}: {host!r} does not resolve")
    family, _, _, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, _stdlib_socket.SOCK_DGRAM)
    with closed_on_error(sock):
        if is_multicast(host) and family == _stdlib_socket.AF_INET:
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
    return UdpSender(sock, sockaddr)


class _UdpBinding(Generic[PeerT]):
    """A udp endpoint of a socket: its peer and the task that serves it."""

    ended = False

    def __init__(self, endpoint: str, host: LinkHost[PeerT], peer: PeerT, close: object) -> None:
        self.endpoint = endpoint
        self.host = host
        self.peer = peer
        self._close = close
        self.scope: trio.CancelScope | None = None

    def holds(self, peer: PeerT) -> bool:
        return peer is self.peer

    async def start(self, serve: Callable[[], Awaitable[None]]) -> None:
        """Put the peer up and run ``serve``, the endpoint's one task, in the socket's
        nursery, under the cancel scope that :meth:`aclose` cancels."""
        self.host.attach(self.peer)
        self.host.link_up(self.peer, "", b"")

        @enable_ki_protection
        async def run(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                await serve()

        self.scope = await self.host.run_task(run)

    async def aclose(self) -> None:
        """Stop serving the endpoint; its peer leaves."""
        if self.scope is not None:
            self.scope.cancel()
        self.host.link_down(self.peer)
        close = self._close
        if isinstance(close, UdpReceiver):
            await close.aclose()
        else:
            await trio.lowlevel.checkpoint()


class UdpTransport:
    """``udp://host:port`` and ``udp://IFACE;GROUP:PORT``: RADIO connects, DISH binds."""

    scheme = "udp"

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """``host:port``, or libzmq's ``IFACE;MCAST:PORT`` for multicast."""
        if ";" not in address:
            host, port = parse_host_port(text, address, for_bind=for_bind)
            return Endpoint(self.scheme, address, host=host, port=port)
        # libzmq's udp://IFACE;MCAST:PORT: the interface to join or send multicast on
        interface, _, target = address.partition(";")
        if not interface or not HOST_RE.fullmatch(interface.replace("*", "x")):
            raise EndpointError(f"endpoint {text!r}: bad interface {interface!r} before ';'")
        host, port = parse_host_port(text, target, for_bind=for_bind)
        if not is_multicast(host):
            raise EndpointError(
                f"endpoint {text!r}: an interface is allowed only with a multicast address"
            )
        return Endpoint(self.scheme, address, host=host, port=port, interface=interface)

    @staticmethod
    def _check(endpoint: Endpoint, host: LinkHost[PeerT], role: str) -> None:
        if host.socket_kind.udp != role:
            raise EndpointError(
                f"endpoint {str(endpoint)!r}: udp:// is only for RADIO (connect) and DISH (bind)"
            )

    async def bind(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """A DISH's endpoint: one datagram peer fed by a receiver task."""
        self._check(endpoint, host, "bind")
        try:
            receiver = await open_receiver(endpoint)
        except (OSError, ValueError) as exc:
            host.emit(monitor.BindFailed(str(endpoint), str(exc)))
            raise
        peer = host.new_link_peer(receiver.endpoint, in_hwm=host.options.rcvhwm, datagram=True)
        binding = _UdpBinding(receiver.endpoint, host, peer, receiver)
        await binding.start(partial(_receive_datagrams, receiver, peer, host))
        host.emit(monitor.Listening(receiver.endpoint))
        return binding

    async def connect(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """A RADIO's endpoint: one datagram peer drained by a sender task."""
        self._check(endpoint, host, "connect")
        key = str(endpoint)
        sender = await open_sender(endpoint)
        peer = host.new_link_peer(key, out_hwm=host.options.sndhwm, datagram=True)
        binding = _UdpBinding(key, host, peer, sender)
        await binding.start(partial(_send_datagrams, sender, peer, host))
        return binding


@enable_ki_protection
async def _receive_datagrams(receiver: UdpReceiver, peer: PeerT, host: LinkHost[PeerT]) -> None:
    """Decode datagrams into ``[group, body]``; drop (and count) bad ones, never raise."""
    pipe = peer.in_pipe
    while True:
        try:
            data = await receiver.receive()
        except (OSError, trio.ClosedResourceError) as exc:
            log.debug("%s: udp receive failed: %s", receiver.endpoint, exc)
            return
        try:
            group, body = decode_datagram(data)
        except ProtocolError as exc:
            host.count("datagrams_malformed")
            log.debug("%s: dropped a malformed datagram: %s", receiver.endpoint, exc)
            continue
        if pipe.full:
            host.count("datagrams_dropped")
            pipe.note("hwm")  # nothing pushes back on a datagram: dropped
            continue
        pipe.put_counted([group, body], len(group) + len(body))


@enable_ki_protection
async def _send_datagrams(sender: UdpSender, peer: PeerT, host: LinkHost[PeerT]) -> None:
    """Send each queued ``[group, body]`` as one datagram; a failed send loses it."""
    pipe = peer.out_pipe
    try:
        while True:
            if not pipe:
                peer.writing = False
                host.flushed()
                await pipe.wait_readable()
                continue
            peer.writing = True
            group, body = cast("list[bytes]", pipe.take_counted())
            try:
                datagram = encode_datagram(group, body)
            except ValueError as exc:
                host.count("datagrams_dropped")
                host.count("datagrams_oversized")
                log.warning("%s: dropped a message: %s", peer.endpoint, exc)
                continue
            try:
                await sender.send(datagram)
            except OSError as exc:
                # like libzmq: the datagram is lost, never retried
                host.count("datagrams_dropped")
                host.count("datagrams_unsent")
                log.debug("%s: udp send failed: %s", peer.endpoint, exc)
    finally:
        peer.writing = False
        sender.close()


#: the udp transport of the table
UDP = UdpTransport()
