"""One ZMTP 3.x connection as a sans-I/O state machine: bytes in, events and bytes out.

The driver feeds received bytes to :meth:`Connection.receive_data`, sends whatever
:meth:`Connection.data_to_send` returns (the later stages of our greeting, handshake
traffic), and encodes its own traffic with the ``encode_*`` methods. Nothing here
does I/O, keeps time or knows about trio.

States: GREETING (64 bytes, checked byte by byte as they arrive; ours goes out in
stages) -> HANDSHAKE (command frames only, handled by the :class:`Mechanism`) ->
TRAFFIC (messages and commands) -> FINISHED (the peer sent ERROR, or it broke the
protocol). Any :class:`ProtocolError` kills the Connection; every later call to
``receive_data`` raises one again. A ZMTP 2.0 (revision 1) peer takes the same
states with RFC 15's contents (:mod:`trizmq.zmtp.zmtp2`): a 12-byte greeting, its
identity frame for the handshake, and traffic parsed by the same loop with a table
of flags that has no COMMAND bit.

Strategy for the decoder:

* Never trust a declared length. A frame's size is checked as soon as its header is
  complete, before any of its body is kept: a message's *wire size* so far (every
  frame's header and body, so millions of empty frames count too) against
  ``maxmsgsize``, its number of frames against ``max_frames``, a command's size
  against ``maxmsgsize`` (64 KiB per command during the handshake; message frames
  are refused before the handshake ends). Bodies accumulate as they arrive;
  nothing is pre-allocated. For CURVE the count is of the plaintext frames with
  the headers they would have unencrypted.
* ``_need`` records how many buffered bytes the next step requires, so the
  pieces of a frame are only appended to one ``bytearray`` until it is whole,
  then parsed once.
* A large message frame (``_BIG_FRAME`` bytes or more) whose body is incomplete
  skips that buffer: the input ``bytes`` objects holding its body are kept as
  they are and joined once (through views cutting the first and last) when the
  last one arrives, so its bytes are copied once instead of three times (append,
  freeze, slice). Small pieces are still gathered in a ``bytearray``, so that a
  peer trickling bytes cannot make each one cost an object.
* On a socket whose peers subscribe to it (PUB, XPUB: ``takes_subscriptions``), a
  subscription whose topic is longer than ``max_subscription`` (a SUBSCRIBE command,
  or a one-frame message starting with ``\\x01``) is refused as soon as its header
  and the first bytes of its body tell it, if the frame is not whole in hand: the
  rest of its body is counted off as it arrives, none of it kept, and its end
  reported as one :class:`~trizmq.zmtp.events.SubscriptionRefused` (a frame whole in
  hand costs nothing more to keep: the publisher refuses it). A cancel of such a
  topic (a CANCEL command, or a one-frame message starting with ``\\x00``) is
  dropped the same way, unreported: no topic that long is held, so it could end no
  subscription, and reading it whole would only let a peer fill memory (but see
  ``docs/pubsub.md`` on a bound raised after the connection was made). Other
  socket types have the grammar's cap for a bound, so the check costs them one
  comparison on a frame that spans reads. Encrypted frames (CURVE) are opened
  whole first: only ``maxmsgsize`` bounds them.
* All complete frames in hand are parsed in one tight loop over an immutable
  ``bytes`` (slicing it yields each frame directly); when the buffer is empty and
  the input is ``bytes``, the input itself is parsed without a copy.
* A message (``list[bytes]``) is emitted only when its last frame arrives.
  Commands between the frames of a message are reported as they come (libzmq may
  slip a PING in between).

Rules for traffic commands live in :data:`~trizmq.zmtp.commands.COMMAND_EVENTS`;
after the handshake the mechanism's own handshake commands (READY for NULL) are
errors. PINGs are reported, not answered: the driver replies with
:meth:`Connection.encode_pong` when and where it wants.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from .._errors import StateError
from .commands import (
    CANCEL,
    ERROR,
    SUBSCRIBE,
    split_command,
)
from .encoding import Buffer, State
from .errors import ProtocolError
from .events import Event, Received, SubscriptionRefused, UnknownCommand
from .frames import (
    COMMAND,
    HEADER_SIZE,
    LONG_HEADER,
    MAX_FRAME_SIZE,
    MORE,
    flags_error,
)
from .handshake import HANDSHAKE_FRAME_LIMIT, MAX_IDENTITY, Handshaking
from .mechanism import Mechanism
from .metadata import encode_metadata
from .null import NullMechanism

__all__ = ["HANDSHAKE_FRAME_LIMIT", "Connection", "Received"]

#: message frames at least this large collect their body as separate pieces, joined once
_BIG_FRAME = 64 * 1024
#: HEADER_SIZE as a plain dict: a lookup in it is faster than in the read-only proxy
_HEADER_SIZE = dict(HEADER_SIZE)
#: pieces of such a body shorter than this are copied together rather than kept apart
#: (a kept piece costs an object and a list slot: at most ~1% more than its bytes)
_BIG_PIECE = 4 * 1024

_INNER_FLAGS = MORE | COMMAND

#: how the body of a subscription or of a cancel starts, by whether its frame is a
#: command: a CANCEL or SUBSCRIBE command's, a ``\x00topic`` or ``\x01topic``
#: message's; shortest first, and the first byte tells them apart
_TOPIC_HEADS = {
    COMMAND: (bytes((len(CANCEL),)) + CANCEL, bytes((len(SUBSCRIBE),)) + SUBSCRIBE),
    0: (b"\x00", b"\x01"),
}
#: the heads of subscriptions: a refused one is reported, a dropped cancel is not
_SUBSCRIBE_HEADS = frozenset({_TOPIC_HEADS[COMMAND][1], _TOPIC_HEADS[0][1]})


def _collect(pieces: list[bytes | bytearray], piece: bytes) -> None:
    """Keep one more piece of a large frame's body."""
    if len(piece) >= _BIG_PIECE:
        pieces.append(piece)  # kept as is (bytes never change): copied only by the join
        return
    last = pieces[-1] if pieces else None
    if isinstance(last, bytearray):  # only ever one of ours, never the caller's
        last += piece
    else:
        pieces.append(bytearray(piece))


#: the most frames :func:`_parse_run` takes in one go: it looks this far ahead, so a
#: run cut short costs it at most this much
_RUN_WINDOW = 256
#: runs are looked for where at least this many frames could follow, and looked for
#: again after a run at least this long
_RUN_WORTH = 8


def _parse_run(
    src: bytes, pos: int, size: int, stride: int, events: list[Received], bare: bool
) -> int:
    """Take the run of short last frames of ``size`` bytes that starts at ``pos`` (at
    least the one there, at most :data:`_RUN_WINDOW`), each a whole message
    of ``stride`` bytes on the wire that the caller checked against the limit; return
    where the run ends. Their headers are compared with two strided slices (the flags
    bytes all zero, the size bytes all ``size``), their bodies cut in one
    comprehension: no Python step per frame but the slice.
    """
    count = min((len(src) - pos) // stride, _RUN_WINDOW)
    stop = pos + count * stride
    flags = src[pos:stop:stride]
    sizes = src[pos + 1 : stop : stride]
    # the leading run of zero flags and of equal sizes, whichever is shorter
    count -= max(len(flags.lstrip(b"\x00")), len(sizes.lstrip(sizes[:1])))
    stop = pos + count * stride
    # the bodies start 2 bytes into each frame: the last one at stop - stride + 2, which
    # is stop itself for empty frames
    starts = range(pos + 2, stop + 2, stride)
    if bare:
        events += [src[i : i + size] for i in starts]
    else:
        events += [[src[i : i + size]] for i in starts]
    return stop


def _ready_properties(
    socket_type: str, identity: bytes | None, metadata: Mapping[str, bytes] | None
) -> dict[str, bytes]:
    """The properties of our READY (Socket-Type, Identity where one is sent, the
    application's ``X-`` metadata), each checked now, not in the middle of a
    handshake."""
    if not socket_type or not socket_type.isascii():
        raise ValueError(f"a socket type is an ASCII name, not {socket_type!r}")
    local: dict[str, bytes] = {"Socket-Type": socket_type.encode("ascii")}
    if identity is not None:
        local["Identity"] = bytes(identity)
    for name, value in (metadata or {}).items():
        if not name.startswith("X-") or len(name) < 3:
            raise ValueError(f"application metadata names must start with 'X-': {name!r}")
        local[name] = bytes(value)
    encode_metadata(local)
    return local


class Connection(Handshaking):
    """The protocol state of one connection, from greeting to traffic.

    Its handshake half is :class:`~trizmq.zmtp.handshake.Handshaking`, its sending
    half :class:`~trizmq.zmtp.encoding.TrafficEncoder`; this class holds the state and
    parses what arrives.

    What the socket type decides comes with it (its row of the socket-type table,
    ``trizmq.patterns.sockets``): ``peers``, the Socket-Types it accepts at the
    handshake (compared exactly; None accepts any, for a test's raw peer);
    ``sends_identity``, whether its READY carries an Identity (REQ, DEALER,
    ROUTER); ``takes_subscriptions``, whether its peers subscribe to it (PUB, XPUB).

    ``maxmsgsize`` and ``max_frames`` bound each incoming message (-1: no bound);
    ``max_subscription`` (-1: no bound) is the longest topic a peer of a type that
    takes subscriptions may subscribe to before its subscription is refused at its
    header, or cancel before its cancel is dropped there (see the module docstring);
    other types ignore it.
    """

    #: every part goes on the wire as it is (``Codec.part_counts``)
    part_counts = None

    def __init__(
        self,
        socket_type: str,
        *,
        peers: Collection[str] | None,
        sends_identity: bool = False,
        takes_subscriptions: bool = False,
        mechanism: Mechanism | None = None,
        identity: bytes = b"",
        maxmsgsize: int = -1,
        max_frames: int = -1,
        max_subscription: int = -1,
        metadata: Mapping[str, bytes] | None = None,
    ) -> None:
        if len(identity) > MAX_IDENTITY:
            raise ValueError(f"identity is at most {MAX_IDENTITY} bytes")
        if maxmsgsize < -1:
            raise ValueError("maxmsgsize must be -1 (no limit) or >= 0")
        if max_frames < -1 or max_frames == 0:
            raise ValueError("max_frames must be -1 (no limit) or >= 1")
        if max_subscription < -1:
            raise ValueError("max_subscription must be -1 (no limit) or >= 0")
        local = _ready_properties(socket_type, identity if sends_identity else None, metadata)

        self._socket_type = socket_type
        #: our own routing id, as given (sent in READY only where ``sends_identity``)
        self.identity = bytes(identity)
        self._mechanism = mechanism if mechanism is not None else NullMechanism()
        self._local_metadata = local
        #: the bounds of one incoming message, in bytes and in frames (-1: none), as given
        self.maxmsgsize = maxmsgsize
        self.max_frames = max_frames
        # a single comparison per frame covers both the option and the grammar's cap
        self._limit = maxmsgsize if maxmsgsize >= 0 else MAX_FRAME_SIZE
        self._max_frames = max_frames if max_frames > 0 else MAX_FRAME_SIZE
        # the longest topic a subscription may carry, and the frame size past which a
        # frame may be a subscription over it (a ``\x01topic`` message one byte over):
        # the grammar's cap where no frame is ever refused so (not a PUB or XPUB)
        bounded = max_subscription >= 0 and takes_subscriptions
        #: the longest topic a peer may subscribe to (None: no bound, or not a type
        #: that takes subscriptions)
        self.subscription_bound = max_subscription if bounded else None
        self._max_subscription = max_subscription if bounded else MAX_FRAME_SIZE
        self._subscription_frame = max_subscription + 1 if bounded else MAX_FRAME_SIZE
        #: the wire size of the message in progress (its frames so far)
        self._used = 0
        #: the peer Socket-Types accepted (None: any)
        self._peers = None if peers is None else frozenset(peers)

        self._started = False
        #: the peer speaks ZMTP 2.0; the valid flags bytes of traffic frames and why
        #: another is not one (ZMTP 3's, or 2.0's without the COMMAND bit)
        self._zmtp2 = False
        self._header_sizes = _HEADER_SIZE
        self._flags_error: Callable[[int], str] = flags_error
        self._state = State.GREETING
        self._dead: str | None = None
        self._buf = bytearray()
        self._need = 0
        self._outbox = bytearray()
        self._frames: list[bytes] = []
        # a large message frame whose body is arriving (see _parse_traffic): the
        # pieces received so far (None when there is none), where the body starts
        # in the first one, the frame's flags and how many body bytes are missing.
        # No memoryview is kept between calls: a Connection stays deep-copyable.
        self._big: list[bytes | bytearray] | None = None
        self._big_skip = 0
        self._big_flags = 0
        self._big_missing = 0
        # or, with ``_discarding``, a subscription or a cancel over the bound is being
        # dropped: ``_big`` is an empty list then (nothing is kept), ``_big_missing``
        # counts down its body and ``_refusal`` reports a subscription at its end
        # (None for a cancel, which goes unreported)
        self._discarding = False
        self._refusal: SubscriptionRefused | None = None
        self._commands: dict[bytes, Callable[[bytes], Event]] = {}
        #: commands parsed in traffic so far: a caller that sees it unchanged across
        #: a :meth:`receive_data` call knows the call returned messages only
        self.commands_parsed = 0
        #: payload bytes (frames' bodies) of the whole messages returned so far
        self.received_bytes = 0
        #: when True, :meth:`receive_data` returns a message of one frame as that
        #: frame's ``bytes`` instead of a one-item list. A caller that queues messages
        #: by the thousand wants it: ``bytes`` are not tracked by Python's cyclic
        #: garbage collector, lists are, and queued lists that outlive two of its
        #: generations make it walk the whole heap again and again
        self.bare_messages = False
        self._wrapped = False
        #: in traffic and alive: receive_data's fast path applies
        self._traffic = False

        self._handshake_complete = False
        self._handshake_commands = 0
        self._peer_version = (0, 0)
        self._peer_v31 = False
        self._peer_socket_type = ""
        self._peer_identity = b""
        self._peer_metadata: dict[str, bytes] = {}

    @property
    def socket_type(self) -> str:
        """Our own socket type."""
        return self._socket_type

    @property
    def closed(self) -> bool:
        """True once the Connection is finished (peer ERROR or protocol error)."""
        return self._state is State.FINISHED

    @property
    def in_message(self) -> bool:
        """True while part of a message (or frame) received so far is held, unfinished.

        A peer that hangs up now loses that message; the driver may say so.
        """
        return (
            bool(self._buf)
            or bool(self._frames)
            or (self._big is not None and not self._discarding)
        )

    def receive_data(self, data: Buffer) -> list[Received]:
        """Consume ``data``; return every event and message it completed, in order."""
        if self._traffic and not self._buf and self._big is None and type(data) is bytes:
            # the hot path: traffic, nothing held back from the last call
            events: list[Received] = []
            self._parse_keeping_rest(data, 0, events)
            return events
        if self._dead is not None:
            raise ProtocolError(self._dead)
        if not self._started:
            raise StateError("call Connection.start() before receive_data()")
        big = self._big
        if big is not None:
            return self._receive_big(big, data)
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            src = bytes(buf)
            buf.clear()
        else:
            src = data if type(data) is bytes else bytes(data)
        try:
            events, pos = self._parse(src)
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        if pos < len(src) and self._dead is None:
            buf += memoryview(src)[pos:]
        return events

    def _start_big(self, src: bytes, start: int, flags: int, missing: int) -> None:
        """Collect the body of a large message frame from ``src[start:]`` on."""
        pieces: list[bytes | bytearray] = []
        skip = 0
        tail = len(src) - start
        if tail >= _BIG_PIECE and tail >= start:
            # mostly body: keep src whole and cut it with a view at the join. Keeping
            # it when it is mostly other frames would hold more than twice the body.
            pieces.append(src)
            skip = start
        elif tail:
            pieces.append(bytearray(memoryview(src)[start:]))
        self._big = pieces
        self._big_skip = skip
        self._big_flags = flags
        self._big_missing = missing
        self._need = 0  # nothing is buffered

    def _receive_big(self, pieces: list[bytes | bytearray], data: Buffer) -> list[Received]:
        """Add ``data`` to the ``pieces`` of the large frame in progress; once it is
        whole, finish that frame as :meth:`_parse_traffic` would and parse what follows."""
        if self._discarding:
            return self._receive_discarded(data)
        # the caller may reuse a bytearray or a view's memory: keep only bytes
        src = data if type(data) is bytes else bytes(data)
        missing = self._big_missing
        if len(src) < missing:
            _collect(pieces, src)
            self._big_missing = missing - len(src)
            return []
        # views copy nothing: the join is the only copy of the body's bytes
        parts: list[Buffer] = list(pieces)
        if self._big_skip:
            parts[0] = memoryview(parts[0])[self._big_skip :]
        parts.append(memoryview(src)[:missing])
        body = b"".join(parts)
        self._big = None
        self._big_skip = 0
        self._big_missing = 0
        events: list[Received] = []
        frames = self._frames
        if not self._big_flags & MORE:
            self.received_bytes += len(body)
            if not frames and self.bare_messages:
                events.append(body)
            else:
                self.received_bytes += sum(map(len, frames))
                frames.append(body)
                events.append(frames)
                self._frames = []
            self._used = 0
        else:
            frames.append(body)
        self._parse_keeping_rest(src, missing, events)
        return events

    def _topic_head(self, size: int, flags: int, frames: list[bytes], first: bytes) -> bytes | None:
        """How the body of a frame of ``size`` bytes with ``flags`` starts if it may be a
        subscription or a cancel whose topic is over the bound: the head its ``first``
        byte names or, while that byte has not come, the shortest one it could be.
        None when it cannot be one (a frame of a multipart message, another command or
        message, or too short)."""
        if not flags & COMMAND and (flags & MORE or frames):
            return None  # a multipart message's frame is a message, not a subscription
        for head in _TOPIC_HEADS[flags & COMMAND]:
            if size - len(head) > self._max_subscription and (not first or head[0] == first[0]):
                return head
        return None

    def _start_discard(self, head: bytes, size: int, missing: int) -> None:
        """Drop a subscription or a cancel (its body starts with ``head``) of a
        ``size``-byte topic whose body has ``missing`` bytes still to come: they are
        counted off as they arrive, never kept."""
        self._big = []
        self._discarding = True
        self._big_missing = missing
        self._refusal = SubscriptionRefused(size) if head in _SUBSCRIBE_HEADS else None
        self._need = 0  # nothing is buffered

    def _receive_discarded(self, data: Buffer) -> list[Received]:
        """Count ``data`` off the body of the subscription or cancel being dropped; once
        it is over, report a subscription's refusal and parse what follows."""
        missing = self._big_missing
        if len(data) < missing:
            self._big_missing = missing - len(data)
            return []
        self._big = None
        self._discarding = False
        self._big_missing = 0
        events: list[Received] = []
        if self._refusal is not None:
            # not a message: the caller must look at this call's events
            self.commands_parsed += 1
            events.append(self._refusal)
            self._refusal = None
        if type(data) is bytes:
            self._parse_keeping_rest(data, missing, events)
        else:
            self._parse_keeping_rest(bytes(memoryview(data)[missing:]), 0, events)
        return events

    def _parse_keeping_rest(self, src: bytes, pos: int, events: list[Received]) -> None:
        """Parse traffic from ``pos`` into ``events``; keep an unfinished frame's
        bytes for the next call; a violation kills the connection."""
        try:
            if self._wrapped:
                pos = self._parse_wrapped(src, pos, events)
            else:
                pos = self._parse_traffic(src, pos, events)
        except ProtocolError as exc:
            self._die(exc.reason)
            raise
        if pos < len(src) and self._dead is None:
            self._buf += memoryview(src)[pos:]

    def _die(self, reason: str) -> None:
        self._dead = reason
        self._traffic = False
        self._state = State.FINISHED
        self._buf.clear()
        self._frames = []
        self._used = 0
        self._big = None
        self._big_skip = 0
        self._big_missing = 0
        self._discarding = False

    def _parse(self, src: bytes) -> tuple[list[Received], int]:
        events: list[Received] = []
        pos = 0
        if self._state is State.GREETING:
            pos = self._parse_greeting(src, events)
            if not pos:
                return events, 0
        if self._state is State.HANDSHAKE:
            pos = self._parse_handshake(src, pos, events)
        if self._state is State.TRAFFIC:
            if self._wrapped:
                pos = self._parse_wrapped(src, pos, events)
            else:
                pos = self._parse_traffic(src, pos, events)
        return events, pos

    def _header(self, src: bytes, pos: int) -> tuple[int, int, int] | None:
        """(flags, body start, size) of the frame at ``pos``, or None if incomplete."""
        n = len(src)
        if pos >= n:
            self._need = 0
            return None
        flags = src[pos]
        header_size = HEADER_SIZE.get(flags)
        if header_size is None:
            raise ProtocolError(flags_error(flags))
        if n - pos < header_size:
            self._need = header_size
            return None
        size = src[pos + 1] if header_size == 2 else LONG_HEADER.unpack_from(src, pos)[1]
        return flags, pos + header_size, size

    def _command(self, body: bytes) -> Event:
        self.commands_parsed += 1
        name, data = split_command(body)
        build = self._commands.get(name)
        if build is None:
            return UnknownCommand(name, data)
        if name == ERROR:
            return self._peer_error(data)
        return build(data)

    def _oversize(self, size: int) -> ProtocolError:
        if size > MAX_FRAME_SIZE:
            return ProtocolError(f"frame size {size} exceeds 2^63-1")
        return ProtocolError(
            f"frame of {size} bytes exceeds maxmsgsize {self.maxmsgsize}", cause="limit"
        )

    def _overlong(self, used: int, frames: int) -> ProtocolError:
        """The message in progress broke a limit: its wire size or its frame count."""
        if used > self._limit:
            return ProtocolError(
                f"message of {used} bytes on the wire so far exceeds maxmsgsize {self.maxmsgsize}",
                cause="limit",
            )
        return ProtocolError(
            f"message of more than {frames} frames exceeds max_frames", cause="limit"
        )

    def _parse_traffic(self, src: bytes, pos: int, events: list[Received]) -> int:
        """Parse traffic from ``pos`` into ``events``; return where an unfinished frame
        starts (or ``len(src)``). The hot path: locals only, one slice per frame and, but
        for a short last frame, one dict lookup; runs of short messages first where one
        may start (:meth:`_parse_runs`), rare partial frames to :meth:`_parse_partial`."""
        n = len(src)
        frames = self._frames
        bare = self.bare_messages
        limit = self._limit
        got = 0  # the payload bytes of the messages completed here
        if not frames and pos + 1 < n and not src[pos] and pos + _RUN_WORTH * src[pos + 1] < n:
            pos, got = self._parse_runs(src, pos, events, bare, limit)
        max_frames = self._max_frames
        used = self._used
        more_or_command = _INNER_FLAGS
        header_sizes = self._header_sizes
        unpack_long = LONG_HEADER.unpack_from
        append = events.append
        while pos < n:
            flags = src[pos]
            if flags <= MORE and pos + 1 < n:
                # a short frame, the commonest by far (a last one, or an inner one:
                # an envelope's, a delimiter): no table lookup
                size = src[pos + 1]
                end = pos + 2 + size
                if end <= n:
                    if flags:
                        if used + end - pos <= limit and len(frames) < max_frames:
                            used += end - pos
                            frames.append(src[pos + 2 : end])
                            pos = end
                            continue
                    elif not frames:
                        if end - pos <= limit:
                            append(src[pos + 2 : end] if bare else [src[pos + 2 : end]])
                            got += size
                            pos = end
                            continue
                    elif used + end - pos <= limit and len(frames) < max_frames:
                        frames.append(src[pos + 2 : end])
                        append(frames)
                        # under 265 bytes on the wire (a long frame takes more) every
                        # header is 2 bytes: the payload is the rest, without a sum
                        wire = used + end - pos
                        got += wire - 2 * len(frames) if wire < 265 else sum(map(len, frames))
                        frames = []
                        used = 0
                        pos = end
                        continue
            header_size = header_sizes.get(flags)
            if header_size is None:
                raise ProtocolError(self._flags_error(flags))
            if n - pos < header_size:
                self._need = header_size
                break
            size = src[pos + 1] if header_size == 2 else unpack_long(src, pos)[1]
            if size > limit:
                raise self._oversize(size)
            start = pos + header_size
            end = start + size
            if not flags & more_or_command and not frames and end <= n:
                if end - pos > limit:  # a whole message in one frame: its wire size
                    raise self._overlong(end - pos, 0)
                append(src[start:end] if bare else [src[start:end]])
                got += size
                pos = end
                continue
            if not flags & COMMAND:
                # the message so far, this frame included, on the wire
                used += header_size + size
                if used > limit or len(frames) >= max_frames:
                    raise self._overlong(used, len(frames))
            if end > n:
                if size > self._subscription_frame or size >= _BIG_FRAME:
                    pos, used = self._parse_partial(src, pos, flags, size, frames, used)
                else:  # the commonest: the frame waits in the buffer
                    used -= 0 if flags & COMMAND else header_size + size
                    self._need = end - pos
                break
            if flags & COMMAND:
                append(self._command(src[start:end]))
                if self._dead is not None:
                    self.received_bytes += got
                    return end
            elif flags & MORE:
                frames.append(src[start:end])
            else:
                frames.append(src[start:end])
                append(frames)
                got += sum(map(len, frames))
                frames = []
                used = 0
            pos = end
        else:
            self._need = 0
        self._frames = frames
        self._used = used
        self.received_bytes += got
        return pos

    @staticmethod
    def _parse_runs(
        src: bytes, pos: int, events: list[Received], bare: bool, limit: int
    ) -> tuple[int, int]:
        """:meth:`_parse_traffic`'s start where no message is in progress: fixed-size
        records first, runs of short one-frame messages alike, taken at C speed
        (:func:`_parse_run`) for as long as they last; what follows a short run goes
        frame by frame, with no look for runs per frame. Return where the runs end
        and the payload bytes they carried."""
        n, got = len(src), 0
        while pos + 1 < n and not src[pos]:
            stride = src[pos + 1] + 2
            if pos + _RUN_WORTH * stride > n or stride > limit:
                break
            if src[pos + stride] or src[pos + stride + 1] != stride - 2:
                break
            stop = _parse_run(src, pos, stride - 2, stride, events, bare)
            taken = (stop - pos) // stride
            got += taken * (stride - 2)
            pos = stop
            if taken < _RUN_WORTH:
                break
        return pos, got

    def _parse_partial(
        self, src: bytes, pos: int, flags: int, size: int, frames: list[bytes], used: int
    ) -> tuple[int, int]:
        """:meth:`_parse_traffic`'s end at a frame whose header (at ``pos``) is whole
        and its body of ``size`` bytes not; ``used`` counts it already, unless it is a
        command. Return where the parse stops and what the message in progress then
        counts on the wire.

        Only on a PUB or XPUB, a subscription or a cancel over the bound is dropped
        before its body is kept (it was a whole message), once enough of its body has
        come to tell. A large message frame keeps what came of its body as it is; the
        rest goes to :meth:`_receive_big`, which joins it all once (commands stay
        small). Every other frame waits in the buffer, and a message frame is counted
        again when it is whole."""
        n = len(src)
        start = pos + _HEADER_SIZE[flags]
        uncounted = used if flags & COMMAND else used - (start - pos) - size
        if size > self._subscription_frame:
            head = self._topic_head(size, flags, frames, src[start : start + 1])
            if head is not None:
                if n - start < len(head):
                    self._need = start - pos + len(head)
                    return pos, uncounted
                if src.startswith(head, start):
                    self._start_discard(head, size - len(head), start + size - n)
                    return n, used if flags & COMMAND else 0
        if size >= _BIG_FRAME and not flags & COMMAND:
            self._start_big(src, start, flags, start + size - n)
            return n, used
        self._need = start + size - pos
        return pos, uncounted

    def _parse_wrapped(self, src: bytes, pos: int, events: list[Received]) -> int:
        # every outer frame carries one inner frame (CURVE MESSAGE); outer flags are
        # not interpreted beyond their validity, as libzmq accepts any. The header is
        # read inline (as _header does): this loop runs once per encrypted frame.
        mechanism = self._mechanism
        decode = mechanism.decode_frame_at
        # the mechanism's own loop over frames with short headers, where it has one
        run = mechanism.open_run if mechanism.runs else None
        limit = self._limit
        overhead = mechanism.overhead
        header_sizes = _HEADER_SIZE
        max_frames = self._max_frames
        bare = self.bare_messages
        n = len(src)
        while True:
            body: bytes | None = None
            if (
                run is not None
                and pos + 1 < n
                and src[pos] < 2
                and pos + _RUN_WORTH * (src[pos + 1] + 2) <= n
                and not self._frames
            ):
                # a read with room for a run of frames like this one (a request of a
                # frame or two, alone in its read, goes frame by frame: cheaper so):
                # whole one-frame messages are appended there; it stops at the first
                # frame it does not take, or hands back one it opened that is not one
                before, start = len(events), pos
                pos, flags, body = run(src, pos, limit, events, bare)
                # each frame of a run has a 2-byte header and the box's overhead around
                # its payload: what was read, less those, is the messages' payload
                # (less the frame handed back, which is no whole message)
                framing = overhead + 2
                self.received_bytes += (
                    pos
                    - start
                    - (len(events) - before) * framing
                    - (0 if body is None else framing + len(body))
                )
            if body is None:
                if pos >= n:
                    self._need = 0
                    break
                header_size = header_sizes.get(src[pos])
                if header_size is None:
                    raise ProtocolError(flags_error(src[pos]))
                if n - pos < header_size:
                    self._need = header_size
                    break
                if header_size == 2:
                    size = src[pos + 1]
                    start = pos + 2
                else:
                    size = LONG_HEADER.unpack_from(src, pos)[1]
                    start = pos + header_size
                # the inner frame has size - overhead bytes and a header of 2 at least
                if size - overhead + 2 > limit:
                    raise self._oversize(size - overhead)
                end = start + size
                if end > n:
                    self._need = end - pos
                    break
                flags, body = decode(src, start, end)
                pos = end
            if flags & ~_INNER_FLAGS or flags == _INNER_FLAGS:
                raise ProtocolError(f"invalid inner frame flags 0x{flags:02X}")
            if flags & COMMAND:
                if len(body) > limit:
                    raise self._oversize(len(body))
                events.append(self._command(body))
                if self._dead is not None:
                    break
            else:
                size = len(body)
                if not flags and size < 256 and bare and not self._frames:
                    # the commonest: a short one-frame message, within maxmsgsize as
                    # its outer frame was, and one frame of any max_frames
                    events.append(body)
                    self.received_bytes += size
                    continue
                frames = self._frames
                self._used += size + (2 if size < 256 else 9)
                if self._used > limit or len(frames) >= max_frames:
                    if size > limit:
                        raise self._oversize(size)
                    raise self._overlong(self._used, len(frames))
                if flags & MORE:
                    frames.append(body)
                elif not frames and self.bare_messages:
                    events.append(body)
                    self.received_bytes += size
                    self._used = 0
                else:
                    frames.append(body)
                    events.append(frames)
                    self.received_bytes += sum(map(len, frames))
                    self._frames = []
                    self._used = 0
        return pos
