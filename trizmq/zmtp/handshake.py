"""How one ZMTP connection gets from greeting to traffic: the handshake half.

Part of :class:`~trizmq.zmtp.connection.Connection` (which inherits it): our greeting
goes out in stages as the peer's arrives (:mod:`trizmq.zmtp.greeting`), the peer's
is checked, its handshake commands go to the security :class:`Mechanism` (pausing for
ZAP when it asks), and the handshake's end sets what traffic may follow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._errors import StateError
from .commands import COMMAND_EVENTS, ERROR, parse_error, split_command
from .encoding import State, TrafficEncoder
from .errors import ProtocolError
from .events import Event, HandshakeComplete, PeerError, Received
from .frames import COMMAND
from .greeting import (
    GREETING_SIZE,
    MAJOR,
    SIGNATURE,
    build_greeting,
    check_greeting_prefix,
    greeting_rest,
    parse_greeting,
)
from .mechanism import Mechanism, ZapReply, ZapRequest

__all__ = ["HANDSHAKE_FRAME_LIMIT", "Handshaking"]

#: the largest command accepted before the handshake is complete (unauthenticated peers)
HANDSHAKE_FRAME_LIMIT = 64 * 1024
MAX_IDENTITY = 255
# libzmq 4.3's PLAIN server writes ERROR as "\x05ERROR" in C, where the greedy hex
# escape makes 0x5E ('^'): its refusals arrive as "^RROR" + reason (no name length)
_LIBZMQ_PLAIN_ERROR = b"^RROR"


def _late_handshake_command(name: bytes, data: bytes) -> Event:
    shown = name.decode("ascii", "replace")
    raise ProtocolError(f"unexpected {shown} command after the handshake")


class Handshaking(TrafficEncoder):
    """The handshake half of a :class:`~trizmq.zmtp.connection.Connection`."""

    # set by Connection.__init__
    _socket_type: str
    _local_metadata: dict[str, bytes]
    _peers: frozenset[str] | None
    _started: bool
    _greeting_sent: int
    _need: int
    _commands: dict[bytes, Callable[[bytes], Event]]
    _traffic: bool
    _handshake_complete: bool
    _handshake_commands: int
    _peer_version: tuple[int, int]
    _peer_socket_type: str
    _peer_identity: bytes
    _peer_metadata: dict[str, bytes]

    if TYPE_CHECKING:  # the parsing half, in Connection

        def receive_data(self, data: bytes) -> list[Received]: ...
        def _die(self, reason: str) -> None: ...
        def _header(self, src: bytes, pos: int) -> tuple[int, int, int] | None: ...

    @property
    def mechanism(self) -> Mechanism:
        """The security mechanism of this connection."""
        return self._mechanism

    @property
    def shares_encoding(self) -> bool:
        """True unless the mechanism encrypts: plain ZMTP is the same bytes on every
        connection."""
        return not self._mechanism.encrypts

    @property
    def handshake_complete(self) -> bool:
        """True once HandshakeComplete was reported (stays True after the end)."""
        return self._handshake_complete

    @property
    def handshake_commands_received(self) -> int:
        """Handshake commands parsed from the peer so far (its greeting not counted).

        With :attr:`peer_version` it tells how far a peer has got: a server that
        wants the greeting and the first command soon (``greeting_ivl``) reads it.
        """
        return self._handshake_commands

    @property
    def peer_version(self) -> tuple[int, int]:
        """The (major, minor) from the peer's greeting; (0, 0) before it is parsed."""
        return self._peer_version

    @property
    def peer_socket_type(self) -> str:
        """The peer's Socket-Type ("" if it sent none); valid after the handshake."""
        return self._peer_socket_type

    @property
    def peer_identity(self) -> bytes:
        """The peer's Identity (b"" if none); valid after the handshake."""
        return self._peer_identity

    @property
    def peer_metadata(self) -> dict[str, bytes]:
        """Every property the peer sent; valid after the handshake."""
        return self._peer_metadata

    @property
    def pending_zap(self) -> ZapRequest | None:
        """An authentication request the driver must answer with :meth:`zap_reply`."""
        return self._mechanism.pending_zap

    def start(self, *, staged: bool = True) -> bytes:
        """The first stage of our greeting, its 10-byte signature: send it before
        waiting for anything. The later stages follow in :meth:`data_to_send` as the
        peer's greeting decides them (see :mod:`trizmq.zmtp.greeting`).

        ``staged=False`` returns the whole 64-byte ZMTP 3.1 greeting instead, for a
        caller that knows the peer speaks ZMTP 3 (ZWS, which sends none of it).
        """
        if self._started:
            raise StateError("Connection.start() was already called")
        self._started = True
        if not staged:
            self._greeting_sent = GREETING_SIZE
            return build_greeting(self._mechanism.name, self._mechanism.as_server)
        self._greeting_sent = len(SIGNATURE)
        return SIGNATURE

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        """Hand the ZAP answer to the mechanism and resume parsing (ZAP seam).

        A refusal raises :class:`ProtocolError` after queuing the mechanism's ERROR
        (if it sends one): flush :meth:`data_to_send` before closing.
        """
        mechanism = self._mechanism
        if mechanism.pending_zap is None:
            raise StateError("no ZAP request is pending")
        events: list[Received] = []
        try:
            self._send_commands(mechanism.on_zap_reply(reply))
            if mechanism.refused is not None:
                # the ERROR stays in the outbox for the driver to flush before closing
                raise ProtocolError(mechanism.refused)
            if mechanism.complete:
                events.append(self._finish_handshake())
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        return events + self.receive_data(b"")

    def _parse_greeting(self, src: bytes, events: list[Received]) -> int:
        """The peer's greeting so far, ``src`` from its first byte: queue the stages
        of ours that its bytes decide, and take it once whole; return where it ends
        (0 while it is not whole)."""
        check_greeting_prefix(src)
        n = len(src)
        sent = self._greeting_sent
        if sent == len(SIGNATURE) and n >= len(SIGNATURE):
            # a versioned peer (check_greeting_prefix refused the others)
            self._outbox += MAJOR
            sent += 1
        if n > len(SIGNATURE) and sent == len(SIGNATURE) + 1:
            # its revision says ZMTP 3 (check_greeting_prefix refused the others)
            mechanism = self._mechanism
            self._outbox += greeting_rest(mechanism.name, mechanism.as_server)
            sent = GREETING_SIZE
        self._greeting_sent = sent
        if n < GREETING_SIZE:
            return 0
        self._on_greeting(src[:GREETING_SIZE], events)
        return GREETING_SIZE

    def _on_greeting(self, greeting_bytes: bytes, events: list[Received]) -> None:
        mechanism = self._mechanism
        greeting = parse_greeting(greeting_bytes, mechanism.name)
        self._peer_version = greeting.version
        self._peer_v31 = greeting.version >= (3, 1)
        mechanism.peer_version = greeting.version
        self._state = State.HANDSHAKE
        self._send_commands(mechanism.start(self._local_metadata))
        if mechanism.complete:
            events.append(self._finish_handshake())

    def _parse_handshake(self, src: bytes, pos: int, events: list[Received]) -> int:
        mechanism = self._mechanism
        while mechanism.pending_zap is None:
            header = self._header(src, pos)
            if header is None:
                return pos
            flags, start, size = header
            if not flags & COMMAND:
                raise ProtocolError("message frame before the handshake completed")
            if size > HANDSHAKE_FRAME_LIMIT:
                raise ProtocolError(
                    f"handshake command of {size} bytes exceeds the "
                    f"{HANDSHAKE_FRAME_LIMIT}-byte limit"
                )
            end = start + size
            if end > len(src):
                self._need = end - pos
                return pos
            body = src[start:end]
            if body.startswith(_LIBZMQ_PLAIN_ERROR):
                name, data = ERROR, body[len(_LIBZMQ_PLAIN_ERROR) :]
            else:
                name, data = split_command(body)
            pos = end
            self._handshake_commands += 1
            if name == ERROR:
                events.append(self._peer_error(data))
                return pos
            self._send_commands(mechanism.on_command(name, data))
            if mechanism.complete:
                events.append(self._finish_handshake())
                return pos
        # paused for ZAP: keep the input, but not without bound
        if len(src) - pos > HANDSHAKE_FRAME_LIMIT:
            raise ProtocolError("too much data sent while authentication was pending")
        self._need = 0
        return pos

    def _peer_error(self, data: bytes) -> PeerError:
        event = parse_error(data)
        self._die(f"connection finished: the peer sent ERROR {event.reason!r}")
        return event

    def _finish_handshake(self) -> HandshakeComplete:
        mechanism = self._mechanism
        metadata = dict(mechanism.peer_metadata)
        socket_type = ""
        raw_type = metadata.get("Socket-Type")
        if raw_type is not None:
            socket_type = raw_type.decode("latin-1")
            peers = self._peers
            if peers is not None and socket_type not in peers:
                raise ProtocolError(
                    f"incompatible socket type: {self._socket_type} cannot talk to {socket_type}",
                    cause="socket_type",
                )
        identity = metadata.get("Identity", b"")
        if len(identity) > MAX_IDENTITY:
            raise ProtocolError(f"peer identity of {len(identity)} bytes exceeds 255")
        commands = dict(COMMAND_EVENTS)
        for name in mechanism.handshake_commands:
            commands[name] = functools.partial(_late_handshake_command, name)
        self._commands = commands
        self._peer_socket_type = socket_type
        self._peer_identity = identity
        self._peer_metadata = metadata
        self._wrapped = mechanism.encrypts
        self._handshake_complete = True
        self._state = State.TRAFFIC
        self._traffic = True
        return HandshakeComplete(socket_type, identity, dict(metadata), self._peer_version)
