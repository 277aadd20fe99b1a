"""The security-mechanism plug-in interface that NULL, PLAIN and CURVE implement.

A :class:`Mechanism` owns the handshake between the greeting and the first
traffic; the :class:`~trizmq.zmtp.connection.Connection` owns everything else
(framing, the ERROR command, the socket-type check, traffic commands). Contract:

1. After the peer's greeting is accepted the Connection sets :attr:`peer_version`
   and calls :meth:`Mechanism.start` with our metadata, already in wire order
   (Socket-Type, Identity when sent, ``X-`` properties); the returned commands go
   out at once.
2. Every command frame that arrives before :attr:`complete` is passed to
   :meth:`Mechanism.on_command`, except ERROR, which the Connection handles itself
   (it is fatal for every mechanism). The mechanism raises :class:`ProtocolError`
   for anything it refuses and returns the commands to send in reply.
3. Once :attr:`complete` is true, :attr:`peer_metadata` must hold the peer's
   properties; the Connection checks them and reports ``HandshakeComplete``. From
   then on a command named in :attr:`handshake_commands` is a protocol error.

Encryption seam (CURVE): a mechanism with ``encrypts = True`` wraps every frame
after the handshake. The Connection then sends ``encode_frame(flags, body)`` (the
complete outer wire bytes) instead of plain frames, and unwraps every received
frame with ``decode_frame(body)`` before interpreting it. Flags on both sides of
this seam are ZMTP bits (:data:`~trizmq.zmtp.frames.MORE`,
:data:`~trizmq.zmtp.frames.COMMAND`); translating them to a box's own bit layout is
the mechanism's job. With ``encrypts = False`` (NULL, PLAIN) the Connection never
calls these hooks: it picks its plain encode/decode path once, at handshake end.
``overhead`` is how many bytes wrapping adds to a frame body, so ``maxmsgsize`` can
be checked on the outer header before any of the body is buffered.

ZAP seam (PLAIN/CURVE servers): a mechanism that needs an authentication round
trip sets :attr:`pending_zap` to a :class:`ZapRequest` inside ``on_command``. The
Connection then stops interpreting input (bytes are kept buffered) until the
driver, which owns the I/O and the ZAP socket, answers through
``Connection.zap_reply(ZapReply(...))``; that calls :meth:`on_zap_reply`, which
clears :attr:`pending_zap` and returns the commands to send (READY, or ERROR with
the status code as reason on a rejection). A mechanism that refuses the peer there
also sets :attr:`refused` to the reason: the Connection queues the returned commands
(the ERROR, if any), dies, and raises :class:`ProtocolError` from ``zap_reply``; the
driver flushes ``data_to_send()`` before closing. PLAIN and CURVE servers use it.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, TypeAlias

import attrs

from .events import Received
from .frames import MORE

__all__ = ["Command", "Mechanism", "ZapReply", "ZapRequest", "zap_metadata", "zap_refusal"]

#: a command as mechanisms see it: (name, data after the name)
Command: TypeAlias = tuple[bytes, bytes]


@attrs.frozen(slots=True)
class ZapRequest:
    """What a server mechanism needs authenticated (27/ZAP).

    The driver adds what only it knows (domain, peer address, routing id, request
    id) when it turns this into a ZAP request.
    """

    mechanism: bytes
    credentials: tuple[bytes, ...]


@attrs.frozen(slots=True)
class ZapReply:
    """The ZAP handler's answer, handed back to the mechanism."""

    status_code: str
    status_text: str = ""
    user_id: bytes = b""
    metadata: dict[str, bytes] = attrs.field(factory=dict)


class Mechanism(abc.ABC):
    """One side of one connection's security handshake (a fresh instance per connection)."""

    #: the name announced in the greeting (e.g. b"NULL"), at most 20 bytes
    name: ClassVar[bytes]
    #: commands that belong to the handshake and are errors after it
    handshake_commands: ClassVar[frozenset[bytes]]
    #: True when every frame after the handshake is wrapped (CURVE's MESSAGE)
    encrypts: ClassVar[bool] = False
    #: bytes wrapping adds to a frame body (for the early ``maxmsgsize`` check)
    overhead: ClassVar[int] = 0
    #: True when :meth:`seal_run` and :meth:`open_run` take runs of frames (else they
    #: take none and the codec does not call them)
    runs: ClassVar[bool] = False

    def __init__(self, *, as_server: bool = False) -> None:
        #: our role, from local configuration (sent in the greeting's as-server byte)
        self.as_server = as_server
        #: True once the handshake is done on our side
        self.complete = False
        #: the peer's properties, valid once :attr:`complete`
        self.peer_metadata: dict[str, bytes] = {}
        #: set by the Connection before :meth:`start`
        self.peer_version: tuple[int, int] = (0, 0)
        #: an authentication request the driver must answer (ZAP seam)
        self.pending_zap: ZapRequest | None = None
        #: why the peer was refused after a ZAP answer (the Connection then dies)
        self.refused: str | None = None

    @abc.abstractmethod
    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        """Commands to send right after the greeting exchange."""

    @abc.abstractmethod
    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        """Take one handshake command; return replies; raise ProtocolError to refuse."""

    def on_zap_reply(self, reply: ZapReply) -> list[Command]:
        """Take the ZAP handler's answer to :attr:`pending_zap`; return commands to send."""
        raise NotImplementedError(f"{type(self).__name__} does not use ZAP")

    def _zap_refused(self, reply: ZapReply) -> list[Command] | None:
        """What every :meth:`on_zap_reply` does first: clear :attr:`pending_zap`, and
        when ``reply`` refuses the peer set :attr:`refused` and return the commands to
        send (:func:`zap_refusal`'s); None when it admits the peer."""
        self.pending_zap = None
        refusal = zap_refusal(reply)
        if refusal is None:
            return None
        commands, self.refused = refusal
        return commands

    def encode_frame(self, flags: int, body: bytes | bytearray | memoryview) -> bytes:
        """The wrapped wire form of one frame (only called when :attr:`encrypts`)."""
        raise NotImplementedError(f"{type(self).__name__} does not wrap frames")

    def encode_message_into(
        self, out: bytearray, frames: Sequence[bytes | bytearray | memoryview]
    ) -> None:
        """Append the wrapped wire form of one message (MORE on all frames but the last);
        a mechanism may do this faster than one :meth:`encode_frame` per frame."""
        last = len(frames) - 1
        for i, frame in enumerate(frames):
            out += self.encode_frame(MORE if i < last else 0, frame)

    def encode_messages_into(
        self, out: bytearray, messages: Iterable[Sequence[bytes | bytearray | memoryview]]
    ) -> None:
        """Append the wrapped wire form of whole messages."""
        for frames in messages:
            self.encode_message_into(out, frames)

    def decode_frame(self, body: bytes) -> tuple[int, bytes]:
        """(inner flags, inner body) of one received frame (only when :attr:`encrypts`)."""
        raise NotImplementedError(f"{type(self).__name__} does not wrap frames")

    def decode_frame_at(self, src: bytes, start: int, end: int) -> tuple[int, bytes]:
        """:meth:`decode_frame` of ``src[start:end]``; a mechanism may read it in place."""
        return self.decode_frame(src[start:end])

    def seal_run(
        self,
        out: bytearray,
        items: Sequence[object],
        start: int,
        stop: int,
        ends: list[int] | None = None,
    ) -> int:
        """Append the wrapped wire form of the one-frame messages ``items[start:]``
        (each a list of one short frame, as a socket queues them) in one loop, up to
        the first item that is not one or until ``out`` holds ``stop`` bytes; return
        the index of the first item not taken. With ``ends``, append to it where each
        message taken ends in ``out``. The base class takes none: a mechanism whose
        per-message call is worth saving (CURVE) overrides it."""
        return start

    def open_run(
        self,
        src: bytes,
        pos: int,
        limit: int,
        events: list[Received],
        bare: bool,
    ) -> tuple[int, int, bytes | None]:
        """Unwrap the wrapped frames with short headers from ``src[pos]`` on in one
        loop, appending each that is a whole message of one frame to ``events`` (its
        body when ``bare``, else a list of it); stop at the first frame it does not
        take (a long header, one not all there, one breaking ``limit`` or any rule,
        which the caller's frame-by-frame loop then reads and refuses). Return where
        it stopped, and the inner (ZMTP flags, body) of a frame it unwrapped but that
        is not a whole message, or ``(pos, 0, None)``. The base class takes none."""
        return pos, 0, None


_ZAP_ERROR_CODES = frozenset({"400", "500"})
#: properties the handshake itself owns; ZAP metadata cannot replace them
_HANDSHAKE_PROPERTIES = frozenset({"Socket-Type", "Identity"})


def zap_refusal(reply: ZapReply) -> tuple[list[Command], str] | None:
    """None if ``reply`` admits the peer, else (commands to send, reason), as libzmq does.

    200 admits. 300 (temporary failure) closes without ERROR, so the client may retry.
    400 and 500 send ERROR whose reason is the 3-digit status code; any other code is
    treated as 500.
    """
    code = reply.status_code
    if code == "200":
        return None
    detail = f" {reply.status_text}" if reply.status_text else ""
    if code == "300":
        return [], f"authentication failed temporarily (ZAP 300){detail}"
    if code not in _ZAP_ERROR_CODES:
        code = "500"
    raw = code.encode("ascii")
    return [(b"ERROR", bytes((len(raw),)) + raw)], f"authentication refused (ZAP {code}){detail}"


def zap_metadata(handshake: Mapping[str, bytes], reply: ZapReply) -> dict[str, bytes]:
    """Peer properties after a ZAP approval: the handshake's, overridden by ZAP's.

    As in libzmq the ZAP handler wins (a peer cannot claim its own ``User-Id``), except
    for Socket-Type and Identity, which belong to the handshake.
    """
    merged = dict(handshake)
    for name, value in reply.metadata.items():
        if name not in _HANDSHAKE_PROPERTIES:
            merged[name] = bytes(value)
    if reply.user_id:
        merged["User-Id"] = bytes(reply.user_id)
    elif "User-Id" not in reply.metadata:
        merged.pop("User-Id", None)  # never the peer's own claim
    return merged
