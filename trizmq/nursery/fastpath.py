"""The fast path: every optimisation that bends a rule, behind one switch.

Everything here is an optimisation of something the portable runtime already does
correctly with trio's public API; set ``TRIZMQ_FASTPATH=0`` in the environment (read
once, when trizmq is imported) or :data:`ENABLED` to False before a socket is
entered, and that socket runs the portable path only. The test suite runs both.

What it holds:

* **Direct socket I/O** (:class:`RawSocket`): trio's ``SocketStream`` reschedules
  the calling task after every system call that succeeded at once, ~10 µs here on
  top of the call. A connection's reader and writer instead call ``recv``/``send``
  on a duplicate of the stream's descriptor and wait in trio's
  ``wait_readable``/``wait_writable`` only when a call would block
  (:class:`RawInput`, :class:`RawOutput`); a frame of :data:`BIG_FRAME` bytes or
  more is written from the sender's own object. Only POSIX socket streams get it;
  anything else (the virtual network's streams) keeps trio's stream calls.
* **TLS reads in one go** (:class:`TlsInput`): over ``wss://`` a reader takes,
  after each awaited read of trio's ``SSLStream``, every record TLS can already
  decrypt (trio's call returns one, of 16 KiB at most, and yields), reading the
  stream's private ``ssl.SSLObject``.
* **Write-through** (:class:`FastPath`): while a connection's writer is idle, the
  first message the socket's sending task routes to it (once between two waits or
  yields of the socket) is encoded and written by that task itself, after routing,
  with one non-blocking call; what the kernel does not take goes back to the writer.
  Encrypted connections too: the task writes only while the writer is parked with
  nothing queued and sends what it encodes at once (the rest stays queued as bytes
  owed), so CURVE's nonces go out in the order they were taken. A publisher's
  batches are corked instead: held back while the socket goes on publishing, then
  written several at a time with one ``sendmsg`` (:meth:`FastPath.route_batch`).
* **Read-through** (:class:`ReadThrough`): a task that would park in a receive, on a
  socket whose only peer is a live connection with nothing queued, waits on the
  connection's descriptor and parses what arrives itself, while the reader stands
  by: one scheduler pass instead of two per message. The reader is woken to watch
  the connection again only when the task has not come back to wait by the time
  trio's run loop next waits for I/O (:class:`Revival`, a trio instrument): a task
  that receives in a loop never wakes it.
* **The inlined cancellation check** (:func:`cancel_pending`): the test that
  ``trio.lowlevel.checkpoint_if_cancelled`` makes, without creating a coroutine,
  including its count of cancel points. It reads trio internals, probed once; a trio
  without them gets the public function.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import enable_ki_protection

from ..patterns.sockets.base import Fanout, FanoutRun
from ..zmtp import ProtocolError
from ..zmtp.encoding import Buffer, encode_plain_into
from ..zmtp.frames import MORE, SHORT_HEADERS, frame_header
from .handshake import RECEIVE_SIZE
from .waiters import Waiters

if TYPE_CHECKING:
    from ..patterns.routing import FairQueue
    from ..patterns.sockets.base import PeerLike
    from ..patterns.sockets.pubsub import PubStrategy
    from ..zmtp.mechanism import Mechanism
    from .connection import ConnectionActor
    from .pipe import Pipe

__all__ = [
    "BIG_FRAME",
    "ENABLED",
    "FastPath",
    "RawInput",
    "RawOutput",
    "RawSocket",
    "ReadThrough",
    "Revival",
    "TlsInput",
    "cancel_pending",
    "revival",
]

log = logging.getLogger("trizmq")

#: frames at least this big are written from the caller's object, not copied
BIG_FRAME = 64 * 1024
#: a write-through of a batch stops gathering messages past this many bytes
WRITE_BATCH = 64 * 1024
#: the header of a short frame (its flags and its one-byte size)
SHORT_HEADER = len(SHORT_HEADERS[0][0])
#: a published batch is encoded into one shared buffer up to this many bytes
RUN_BYTES = 256 * 1024
#: scheduler passes a reader lets go by before it reads again after handing on a message
LOOK_AGAIN_AFTER = 2
#: a publisher's batches held back for an idle connection (corked) go out once this
#: many messages wait (or half the connection's ``sndhwm``, when that is fewer: see
#: :func:`cork_limit`), ...
CORK_ITEMS = 512
#: ... or once the oldest has waited this long (seconds, trio's clock) while the
#: publisher kept publishing in every scheduler pass
CORK_TIME = 0.0005

_current_task = trio.lowlevel.current_task
#: a message's first frame (its only one, for the runs a mechanism seals)
_first = itemgetter(0)


class _CurrentTask:
    """``.task`` as trio's public ``current_task()`` (where trio's own context moved)."""

    @property
    def task(self) -> trio.lowlevel.Task:
        return _current_task()


#: ``RUN_CONTEXT.task`` is the running task; the inlined check reads it (valid only
#: where :func:`cancel_pending` returned the inlined check)
RUN_CONTEXT: Any
try:
    # trio's thread-local run context: ``.task`` is what current_task() returns, read
    # without the function call (the probe checks that it is so)
    from trio._core._run import GLOBAL_RUN_CONTEXT as RUN_CONTEXT
except ImportError:  # pragma: no cover - a trio that moved it: the probe fails
    RUN_CONTEXT = _CurrentTask()


def _env_enabled() -> bool:
    return os.environ.get("TRIZMQ_FASTPATH", "1").strip().lower() not in ("0", "off", "false", "no")


#: the switch: False makes every socket entered afterwards run the portable path only
ENABLED = _env_enabled()


# -- the inlined cancellation check -------------------------------------------------------
def _cancel_pending_inline() -> bool:
    task = RUN_CONTEXT.task
    if task._cancel_status.effectively_cancelled or (
        task._runner.ki_pending and task is task._runner.main_task
    ):
        return True
    task._cancel_points += 1
    return False


def _probe_cancel_check() -> bool:
    """Whether this trio has the fields ``checkpoint_if_cancelled`` reads and counts."""
    try:
        task = _current_task()
        runner = task._runner
        return (
            RUN_CONTEXT.task is task
            and isinstance(task._cancel_status.effectively_cancelled, bool)
            and isinstance(runner.ki_pending, bool)
            and runner.main_task is not None
            and isinstance(task._cancel_points, int)
        )
    except AttributeError:
        return False


_PROBED: bool | None = None


def cancel_pending() -> Callable[[], bool] | None:
    """The inlined check, or None where the caller must await
    ``trio.lowlevel.checkpoint_if_cancelled()`` (fast path off, or a trio whose
    internals moved). The check returns True when the caller must await a
    checkpoint (it is cancelled), and otherwise counts a cancel point as trio does.
    Call it from inside a ``trio.run``.
    """
    global _PROBED
    if not ENABLED:
        return None
    if _PROBED is None:
        _PROBED = _probe_cancel_check()
    return _cancel_pending_inline if _PROBED else None


def run_vars() -> dict[str, Any] | None:
    """This thread's values of trio's run context: ``run_vars()["task"]`` is the running
    task, one dict subscript where ``RUN_CONTEXT.task`` is a thread-local lookup
    (~40 ns less on every send and receive). None where trio keeps it otherwise.
    Call it from inside a ``trio.run``; the dict is this thread's, so it serves the
    sockets of this run (a socket lives within one).
    """
    values = getattr(RUN_CONTEXT, "__dict__", None)
    if isinstance(values, dict) and values.get("task") is _current_task():
        return values
    return None


# -- direct socket I/O ----------------------------------------------------------------------
class RawSocket:
    """Non-blocking ``recv``/``send`` straight on a socket stream's own socket.

    The trio stream keeps owning the connection: waits are on the stream's
    descriptor (closing the stream wakes them with ``trio.ClosedResourceError``),
    and calls on a closed stream fail with ``OSError``. A second task may wait for
    input (:meth:`wait_readable_too`) while the reader waits on the stream: that
    wait is on a duplicate descriptor, made the first time it is needed (only a
    socket with a single peer reads through), so a crowd of connections costs one
    descriptor each; where the calls go through a socket object of its own (a trio
    that keeps no stdlib socket), that one is on a duplicate already and serves.
    :meth:`interrupt` ends that wait early; :meth:`close` releases the duplicate.
    """

    __slots__ = ("_dup", "_fd", "_own", "_sock", "closed", "recv", "send", "sendmsg")

    def __init__(self, stream: trio.SocketStream) -> None:
        tsock = stream.socket
        self._fd = tsock.fileno()
        # the stdlib socket under trio's (non-blocking already); where a trio keeps
        # it elsewhere, a socket object of our own on a duplicate does the same
        inner = getattr(tsock, "_sock", None)
        self._own = not isinstance(inner, socket.socket) or inner.fileno() != self._fd
        if isinstance(inner, socket.socket) and not self._own:
            sock = inner
        else:
            sock = socket.socket(tsock.family, tsock.type, tsock.proto, fileno=os.dup(self._fd))
        sock.setblocking(False)
        self._sock: socket.socket = sock
        # a socket of our own is on a duplicate already: a second reader waits there
        self._dup: int | None = sock.fileno() if self._own else None
        #: True once :meth:`close` released the duplicate
        self.closed = False
        #: ``recv(max_bytes) -> bytes``; raises ``BlockingIOError`` when nothing is there
        self.recv = sock.recv
        #: ``send(data) -> int``; raises ``BlockingIOError`` when the kernel buffer is full
        self.send = sock.send
        #: ``sendmsg(buffers) -> int``: several buffers with one call, likewise
        self.sendmsg = sock.sendmsg

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> RawSocket | None:
        """A :class:`RawSocket` for a POSIX socket stream, else None (use the stream)."""
        if not ENABLED or os.name != "posix" or type(stream) is not trio.SocketStream:
            return None
        try:
            return cls(stream)
        except OSError:
            return None

    async def wait_readable(self) -> None:
        """Park until the socket has data (or an EOF/error) to read."""
        await trio.lowlevel.wait_readable(self._fd)

    async def wait_writable(self) -> None:
        """Park until the socket can take more data."""
        await trio.lowlevel.wait_writable(self._fd)

    async def wait_readable_too(self) -> None:
        """Park until the socket has data, on the duplicate descriptor, so that one
        task may wait here while another waits in :meth:`wait_readable`.

        Raises ``trio.ClosedResourceError`` when :meth:`interrupt` or :meth:`close`
        ends the wait.
        """
        dup = self._dup
        if dup is None and not self.closed and self._sock.fileno() == self._fd:
            dup = self._dup = os.dup(self._fd)
        if self.closed or dup is None:
            await trio.lowlevel.checkpoint()  # a caller that loops still yields
            raise trio.ClosedResourceError("the connection has ended")
        await trio.lowlevel.wait_readable(dup)

    def interrupt(self) -> None:
        """Wake a task parked in :meth:`wait_readable_too` (a no-op if none is)."""
        if not self.closed and self._dup is not None:
            trio.lowlevel.notify_closing(self._dup)

    def close(self) -> None:
        """Release the duplicate descriptor, if one was made (the stream still owns
        the connection, and the socket under it)."""
        if not self.closed:
            self.closed = True
            dup, self._dup = self._dup, None
            if dup is not None:
                trio.lowlevel.notify_closing(dup)
                if not self._own:
                    os.close(dup)
            if self._own:
                self._sock.close()

    async def send_all(self, data: Buffer) -> None:
        """Write all of ``data`` with direct calls, waiting only when blocked."""
        view = memoryview(data)
        send = self.send
        while view:
            try:
                sent = send(view)
            except BlockingIOError:
                await self.wait_writable()
                continue
            view = view[sent:]


class RawInput:
    """A connection reader's reads on a :class:`RawSocket`.

    A short read means the socket was drained, so the next read waits first; a full
    read yields (a checkpoint) and reads again, so a flood never starves other tasks.
    After handing on a message, it lets the woken task run and looks once more
    before sleeping in epoll, as trio's own streams do after every call: a reply
    written meanwhile is read without a wake-up from the kernel.
    """

    __slots__ = ("_fast", "_ready", "raw", "read_through")

    def __init__(self, raw: RawSocket, read_through: ReadThrough, fast: FastPath) -> None:
        self.raw = raw
        self.read_through = read_through
        self._fast = fast
        self._ready = True

    def start(self) -> None:
        """Offer read-through to the socket's receiving tasks from now on."""
        self._fast.readers[self.read_through.peer] = self.read_through

    def stop(self) -> None:
        """Withdraw read-through and release the duplicate descriptor."""
        readers, peer = self._fast.readers, self.read_through.peer
        if readers.get(peer) is self.read_through:
            del readers[peer]
        self.raw.close()

    async def receive(self, ttl: float) -> bytes | bytearray | None:
        """The next bytes (b"" at the end); None when ``ttl`` passed without any.

        Raises :class:`_InputEnded` when a receiving task already ended the connection.
        """
        read_through = self.read_through
        raw = self.raw
        deadline = trio.current_time() + ttl if ttl else None
        while True:
            if not self._ready:
                if deadline is None:
                    if read_through.waiting is not None:
                        await read_through.stand_by()
                        continue
                    await raw.wait_readable()
                else:
                    with trio.move_on_at(deadline):
                        await raw.wait_readable()
                    if trio.current_time() >= deadline:
                        return None
            if read_through.ended:
                raise _InputEnded
            try:
                return raw.recv(RECEIVE_SIZE)
            except BlockingIOError:
                self._ready = False

    async def after(self, size: int, pipe: Pipe) -> None:
        """What follows a read of ``size`` bytes whose messages went to ``pipe``."""
        self._ready = size == RECEIVE_SIZE
        if self._ready:
            await trio.lowlevel.checkpoint()
        elif pipe:
            for _ in range(LOOK_AGAIN_AFTER):
                await trio.lowlevel.checkpoint()
            self._ready = True


class _InputEnded(Exception):
    """A receiving task reading the connection itself met its end first.

    Private: the reader catches it (``reader.py``); it never reaches the application.
    """


class TlsInput:
    """A connection reader's reads on a trio ``SSLStream`` (``wss://``): each awaited
    read is followed by what TLS can decrypt at once from the bytes it holds.

    trio's ``receive_some`` returns one TLS record (16 KiB at most) a call and yields
    after each, while it reads up to 64 KiB of the socket at a time: a stream of
    records cost a read, a parse and a trip through the scheduler each. Here the
    stream's ``ssl.SSLObject`` is asked for more, without I/O, until it wants to read
    the socket (or has something to send: trio sends it at its next call) or
    :data:`RECEIVE_SIZE` is reached. It reads trio's private ``_ssl_object`` and
    ``_outgoing`` (``MemoryBIO``), probed once per stream; a stream without them
    keeps trio's calls alone (:meth:`of` gives None). Any error is left for trio's
    next call to meet and report.
    """

    __slots__ = ("_outgoing", "_read", "_stream")

    def __init__(self, stream: trio.SSLStream[Any], ssl_object: Any, outgoing: Any) -> None:
        self._stream = stream
        self._read: Callable[[int], bytes] = ssl_object.read
        self._outgoing = outgoing

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> TlsInput | None:
        """A :class:`TlsInput` for a trio ``SSLStream`` whose insides are as expected."""
        if not ENABLED or not isinstance(stream, trio.SSLStream):
            return None
        ssl_object = getattr(stream, "_ssl_object", None)
        outgoing = getattr(stream, "_outgoing", None)
        if not isinstance(ssl_object, ssl.SSLObject) or not isinstance(outgoing, ssl.MemoryBIO):
            return None
        return cls(stream, ssl_object, outgoing)

    def start(self) -> None:
        """Nothing to offer."""

    def stop(self) -> None:
        """Nothing to release."""

    async def receive(self, ttl: float) -> bytes | bytearray | None:
        """``receive_some`` (bounded by ``ttl`` when given), then what TLS has ready."""
        if not ttl:
            data = await self._stream.receive_some(RECEIVE_SIZE)
        else:
            with trio.move_on_after(ttl):
                data = await self._stream.receive_some(RECEIVE_SIZE)
                return self._more(data)
            return None
        return self._more(data)

    def _more(self, data: bytes | bytearray) -> bytes | bytearray:
        """``data`` and the records decrypted after it without waiting."""
        if not data or self._outgoing.pending:
            return data
        read = self._read
        pieces = [data]
        size = len(data)
        while size < RECEIVE_SIZE:
            try:
                more = read(RECEIVE_SIZE - size)
            except ssl.SSLError:  # SSLWantReadError above all: the socket's turn
                break
            if not more:
                break
            pieces.append(more)
            size += len(more)
            if self._outgoing.pending:
                break
        return data if len(pieces) == 1 else b"".join(pieces)

    async def after(self, size: int, pipe: Pipe) -> None:
        """trio's stream calls already yield after every read."""


class RawOutput:
    """A connection writer's writes on a :class:`RawSocket`, and its write-through."""

    __slots__ = (
        "_encode_into",
        "_fast",
        "_idle",
        "_parked",
        "_pipe",
        "_plain",
        "_share",
        "actor",
        "raw",
    )

    def __init__(self, raw: RawSocket, actor: ConnectionActor, fast: FastPath) -> None:
        self.raw = raw
        self.actor = actor
        self._fast = fast
        self._pipe = actor.peer.out_pipe
        self._idle = Waiters()
        #: True while the writer is parked idle, counted in ``FastPath.idle``
        self._parked = False
        codec = actor.codec
        #: do a publisher's shared encodings (Fanout wires) fit this connection?
        self._share = codec.shares_encoding
        self._encode_into = codec.message_encoder()
        #: unencrypted ZMTP: a message under 265 bytes has only 2-byte headers
        self._plain = self._encode_into is encode_plain_into

    @property
    def zero_copy(self) -> bool:
        """Big frames go out from the sender's own object (plain ZMTP only: the
        header is written apart from the frame)."""
        return self._share

    async def write(self, data: Buffer) -> None:
        """Write all of ``data``."""
        await self.raw.send_all(data)

    async def pause(self) -> None:
        """Between two batches written at once: let other tasks run."""
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def idle(self) -> None:
        """Wait for work; meanwhile the sending task may write through."""
        pipe = self._pipe
        if pipe:
            await trio.lowlevel.checkpoint()
            return
        fast = self._fast
        fast.idle += 1
        fast.allowed = fast.armed = True
        self._parked = True
        pipe.on_readable = self._on_work
        try:
            await self._idle.park()
        finally:
            pipe.on_readable = None
            if self._parked:  # cancelled: nobody woke us
                self._unpark()

    def _on_work(self) -> None:
        fast = self._fast
        if fast.routing and fast.allowed:
            fast.pending.append(self)
        else:
            self.wake()

    def _unpark(self) -> None:
        self._parked = False
        fast = self._fast
        fast.idle -= 1
        fast.armed = fast.allowed and fast.idle > 0

    def wake(self) -> None:
        """Wake the idle writer: the work is its (it is idle no more)."""
        if self._parked:
            self._unpark()
            self._idle.unpark_all()

    @enable_ki_protection
    def write_queue_now(self) -> bool:
        """Write what the sending task just queued to the idle writer's pipe, with one
        non-blocking call from that task; True when all of it went out.

        As :meth:`write_now`, for a batch: up to :data:`WRITE_BATCH` bytes of
        messages, stopping at a big frame or a command, which the writer takes (a
        publisher's batches are corked instead and written by :meth:`flush`). Whatever the
        kernel did not take stays queued, a message begun as the bytes still owed.
        """
        items = self._pipe._items
        if self.actor.codec.closed:
            return False
        self._fast.allowed = self._fast.armed = False
        share = self._share
        encode_into = self._encode_into
        short = _short_headers(encode_into)
        buf = bytearray()
        ends: list[int] = []
        # each message's payload bytes, for the counts of what goes out
        sizes: list[int] = []
        batch: Iterable[object] = items
        seal_run = run_sealer(self.actor.codec.mechanism, encode_into)
        if seal_run is not None:
            # a run of short one-frame messages boxed in the mechanism's loop (CURVE),
            # as the writer does
            used = seal_run(buf, items, 0, WRITE_BATCH, ends)
            if used:
                sizes = list(map(len, map(_first, islice(items, used))))  # type: ignore[arg-type]
            if len(buf) >= WRITE_BATCH:
                batch = ()
            elif used:
                batch = islice(items, used, None)
        for item in batch:
            cls = item.__class__
            if cls is list:
                last = item[-1]  # type: ignore[index]
                size = len(last)
                if size < 256 and short is not None and len(item) == 1:  # type: ignore[arg-type]
                    # the commonest: encode_plain_into's work, inline (as the writer)
                    buf += short[size]
                    buf += last
                    sizes.append(size)
                elif size < BIG_FRAME:
                    encode_into(buf, item)  # type: ignore[arg-type]
                    sizes.append(sum(map(len, item)))  # type: ignore[call-overload]
                else:
                    break
            elif cls is Fanout:
                wire = item.wire  # type: ignore[attr-defined]
                if not share:
                    encode_into(buf, item.frames)  # type: ignore[attr-defined]
                elif wire is None:
                    start = len(buf)
                    encode_into(buf, item.frames)  # type: ignore[attr-defined]
                    item.wire = bytes(buf[start:])  # type: ignore[attr-defined]
                else:
                    buf += wire
                sizes.append(item.size)  # type: ignore[attr-defined]
            else:
                break
            ends.append(len(buf))
            if len(buf) >= WRITE_BATCH:
                break
        return bool(ends) and self._send_owed(items, ends, buf, sizes)

    def corkable(self) -> bool:
        """Does the queue begin with a published batch whose encoding this connection
        shares (what a cork may hold back and :meth:`flush` write with others)?"""
        head = self._pipe._items[0]
        return self._share and head.__class__ is Fanout and head.run is not None

    @enable_ki_protection
    def flush(self) -> None:
        """Write what a cork held back, the published batches queued whole with one
        call (their shared encodings, one buffer each); the writer takes what the
        kernel does not, and whatever else is queued."""
        if not self._parked:
            return  # the writer is at work (or gone): the queue is its
        if not self._write_runs():
            self.wake()

    def _write_runs(self) -> bool:
        """The queue's leading whole runs written with one ``sendmsg``; True when the
        queue is empty afterwards."""
        items = self._pipe._items
        if not items or self.actor.codec.closed:
            return False
        runs, wires, total, count = leading_runs(items, self._encode_into, RUN_BYTES)
        if not wires:
            return self.write_queue_now()
        try:
            sent = self.raw.sendmsg(wires)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        pipe = self._pipe
        if len(items) > pipe.peak:
            pipe.peak = len(items)
        if sent == total and count == len(items):
            items.clear()
            pipe.passed += count
            pipe.octets += sum([run.payload for run in runs])
            return True
        ends: list[int] = []
        base = 0
        cut, cut_at = b"", 0  # the wire the write stopped in, and where it begins
        for run, wire in zip(runs, wires, strict=True):
            ends += [base + end for end in run.ends]
            if base <= sent < base + len(wire):
                cut, cut_at = wire, base
            base += len(wire)
        # a message cut short lies in one run's wire: its rest is sliced from there,
        # not from a copy of every wire (with many subscribers left behind at once,
        # those copies were most of what a publisher allocated)
        left = _split_sent(items, ends, cut, sent, cut_at)
        pipe.passed += left
        for run in runs:
            if left < run.count:
                pipe.octets += run.payload_of(left)
                break
            pipe.octets += run.payload
            left -= run.count
        return not items

    def _send_owed(
        self, items: deque[object], ends: list[int], buf: Buffer, sizes: list[int]
    ) -> bool:
        """Write ``buf``, the first ``len(ends)`` queued items encoded (their payload
        bytes in ``sizes``), with one call; what went out leaves the queue (see
        :func:`_split_sent`) and is counted. True when the queue is empty then."""
        try:
            sent = self.raw.send(buf)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        pipe = self._pipe
        if len(items) > pipe.peak:
            pipe.peak = len(items)
        if sent == len(buf) and len(ends) == len(items):
            items.clear()
            pipe.passed += len(ends)
            pipe.octets += sum(sizes)
            return True
        left = _split_sent(items, ends, buf, sent)
        pipe.passed += left
        pipe.octets += sum(sizes[:left])
        return not items

    @enable_ki_protection
    def write_now(self) -> bool:
        """Write the message just queued to the idle writer's empty pipe, from the
        sending task; True when it went out whole and nothing else waits.

        It works on the pipe's deque directly: the item came and goes within one
        routing step, so no wake-up is owed to anyone for it.
        """
        items = self._pipe._items
        item = items[0]
        fanout: Fanout | None = None
        if item.__class__ is list:
            frames: list[bytes] = item
        elif item.__class__ is Fanout:
            fanout = item
            frames = item.frames
        else:
            return False
        if self.actor.codec.closed or len(frames[-1]) >= BIG_FRAME:
            return False
        fast = self._fast
        fast.allowed = fast.armed = False
        buf = bytearray()
        self._encode_into(buf, frames)
        try:
            sent = self.raw.send(buf)
        except OSError:  # BlockingIOError included: the writer meets it again
            return False
        if fanout is not None and fanout.wire is None and self._share:
            fanout.wire = bytes(buf)
        # it left the queue (whole, or begun): counted as the writer counts
        pipe = self._pipe
        pipe.passed += 1
        if fanout is not None:
            pipe.octets += fanout.size
        elif self._plain and len(buf) < 265:
            pipe.octets += len(buf) - 2 * len(frames)  # every header short: 2 bytes
        else:
            pipe.octets += sum(map(len, frames))
        if len(items) > pipe.peak:
            pipe.peak = len(items)
        if sent < len(buf):
            # the rest belongs to this connection only: never resent on another
            items[0] = bytes(buf[sent:])
            return False
        items.popleft()
        return not items


def leading_runs(
    items: deque[object], encode_into: Callable[[bytearray, Sequence[Buffer]], None], limit: int
) -> tuple[list[FanoutRun], list[bytes], int, int]:
    """The published batches queued whole at the head of ``items``, with their shared
    encodings (made by the first connection that needs one), as far as ``limit``
    bytes: (runs, wires, bytes, messages). A run is whole where its first message
    is at its place and its last where the run must end: a run cut short for this
    connection by its mark, or begun by a write before, is not shared. A run's
    encoding may cover only its first messages (see :func:`encode_run`); the rest
    is left for the ordinary path."""
    runs: list[FanoutRun] = []
    wires: list[bytes] = []
    total = count = pos = 0
    queued = len(items)
    while pos < queued:
        first = items[pos]
        if first.__class__ is not Fanout:
            break
        run = first.run
        if run is None or first.index:
            break
        size = len(run.msgs)
        # indexing a deque costs a step per 64 items from its nearer end, not one
        # per item
        end = pos + size
        if end > queued:
            break
        last = items[end - 1]
        if last.__class__ is not Fanout or last.run is not run or last.index != size - 1:
            break
        pos = end
        wire = run.wire if run.wire is not None else encode_run(run, encode_into)
        if not wire:
            break
        runs.append(run)
        wires.append(wire)
        total += len(wire)
        count += run.count
        if run.count < size or total >= limit:
            break  # the rest of that run (big frames) or of the queue: later
    return runs, wires, total, count


def encode_run(run: FanoutRun, encode_into: Callable[[bytearray, Sequence[Buffer]], None]) -> bytes:
    """A published batch's shared encoding, made by the first connection that writes
    it whole (up to :data:`RUN_BYTES`, and not past a big frame), each message's end
    in ``run.ends``."""
    short = _short_headers(encode_into)
    msgs = run.msgs
    if short is not None:
        framed = frame_short_messages(msgs, short, RUN_BYTES)
        if framed is not None:
            wire, count = framed
            run.encoded_alike(SHORT_HEADER, count)
            run.payload = len(wire) - SHORT_HEADER * count
            run.wire = wire
            return wire
    buf = bytearray()
    ends = run.ends
    octets = 0
    for frames in msgs:
        last = frames[-1]
        size = len(last)
        if size < 256 and short is not None and len(frames) == 1:
            # the commonest, framed inline; not held to RUN_BYTES one by one: a run
            # holds at most a chunk of ``send_many`` (256), so at most 64 KiB of these
            buf += short[size]
            buf += last
            octets += size
        elif size >= BIG_FRAME or len(buf) >= RUN_BYTES:
            break  # not copied for one write: the writers take the rest
        else:
            encode_into(buf, frames)
            octets += sum(map(len, frames))
        ends.append(len(buf))
    run.count = len(ends)
    run.payload = octets
    wire = run.wire = bytes(buf)
    return wire


def frame_short_messages(
    items: Sequence[object], short: Sequence[bytes], limit: int
) -> tuple[bytes, int] | None:
    """``items`` framed at C speed on unencrypted ZMTP, when every one is a
    one-frame message (a list) under 256 bytes: (the bytes, how many of the items
    they hold); None otherwise (the caller frames them one by one). As a loop that
    stops once its buffer holds ``limit`` bytes, the items are taken up to the
    first that brings the bytes to ``limit``.

    The commonest queue, framed without a Python step a message: the frames taken
    and their headers looked up (``short``, by size) in two comprehensions,
    interleaved by slice assignment, joined once: ~60 ns a message against ~145 for
    a loop that appends each to a buffer.
    """
    if not items:
        return None
    first = items[0]
    if first.__class__ is not list or len(first) != 1 or len(first[0]) >= 256:
        return None  # most likely a queue of other things: not looked through
    frames: list[bytes] = [item[0] for item in items if item.__class__ is list and len(item) == 1]
    if len(frames) != len(items):
        return None
    try:
        heads = [short[len(frame)] for frame in frames]
    except IndexError:  # a frame of 256 bytes or more
        return None
    count = len(frames)
    if sum(map(len, frames)) + SHORT_HEADER * count > limit:
        ends = list(accumulate([len(frame) + SHORT_HEADER for frame in frames]))
        count = bisect_left(ends, limit) + 1
        del frames[count:], heads[count:]
    parts = heads + frames
    parts[::2] = heads
    parts[1::2] = frames
    return b"".join(parts), count


def _short_headers(encode_into: object) -> tuple[bytes, ...] | None:
    """On unencrypted ZMTP, the headers of a short last frame by size: a short one-frame
    message is framed with one of them, as the writer does, without the codec's call."""
    return SHORT_HEADERS[0] if encode_into is encode_plain_into else None


def run_sealer(mechanism: Mechanism, encode_into: object) -> Callable[..., int] | None:
    """The mechanism's ``seal_run``, where it wraps a run of short one-frame messages in
    one loop (CURVE) and the codec's bytes are the mechanism's own (not inside
    WebSocket frames); None elsewhere. The writer and the write-through use it alike."""
    if mechanism.runs and encode_into == mechanism.encode_message_into:
        return mechanism.seal_run
    return None


def _split_sent(
    items: deque[object], ends: list[int], buf: Buffer, sent: int, buf_at: int = 0
) -> int:
    """Remove from ``items`` the first ``len(ends)`` items, encoded into bytes of which
    ``buf`` holds those from ``buf_at`` on (item ``i`` ending at ``ends[i]``), as far
    as ``sent`` bytes of them went out: a message only partly written stays at the
    head as the bytes still owed for it, which ``buf`` must hold. Returns how many
    messages left the queue as messages (written whole, or begun)."""
    whole = bisect_right(ends, sent)
    for _ in range(whole):
        items.popleft()
    if whole < len(ends) and sent > (ends[whole - 1] if whole else 0):
        items[0] = bytes(buf[sent - buf_at : ends[whole] - buf_at])
        return whole + 1
    return whole


def encode_big(parts: list[Buffer], buf: bytearray, frames: Sequence[bytes]) -> None:
    """Queue ``buf`` and a message with a big last frame into ``parts``, copying no
    frame of :data:`BIG_FRAME` bytes or more."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        size = len(frame)
        buf += frame_header(MORE if i < last else 0, size)
        if size < BIG_FRAME:
            buf += frame
        else:
            parts.append(buf)
            parts.append(frame)
            buf = bytearray()
    if buf:
        parts.append(buf)


class FastPath:
    """One socket's fast-path state: write-through and read-through.

    ``allowed``: may the next message routed to an idle connection be written by the
    sending task? Cleared by such a write; set again whenever the socket's tasks wait
    or yield (:meth:`waited`) and when a writer goes idle. ``armed`` is True while
    it is allowed and some writer is idle: the one thing a send looks at before it
    routes through :meth:`route`. ``routing`` is True while the socket's sending task
    routes a message: an idle writer that gets work then leaves it to that task
    (``pending``) instead of waking.
    """

    __slots__ = (
        "_gatherer",
        "_inbound",
        "_park",
        "_recent",
        "_revival",
        "allowed",
        "armed",
        "fed_at",
        "idle",
        "pending",
        "readers",
        "reading",
        "routing",
    )

    def __init__(self, inbound: FairQueue[PeerLike], receivers: Waiters) -> None:
        #: the socket's fair queue (its ``only`` peer may be read through)
        self._inbound = inbound
        #: how a receiving task parks when it cannot read through
        self._park = receivers.park
        #: among several peers, the one the last message came from at the last wait
        self._recent: object = None
        self.allowed = True
        self.armed = False
        #: writers idle right now that the sending task may write for
        self.idle = 0
        self.routing = False
        self.pending: list[RawOutput] = []
        #: the scheduler pass (Revival.passes) in which the socket last published a
        #: batch: its corks stay on while it goes on publishing
        self.fed_at = 0
        self._revival: Revival | None = None
        #: peer -> the ReadThrough of its live connection
        self.readers: dict[object, ReadThrough] = {}
        #: the ReadThrough a receiving task of this socket waits in, if any
        self.reading: ReadThrough | None = None
        #: a publisher's strategy that gathers one-at-a-time publishes (see gather)
        self._gatherer: PubStrategy | None = None

    def gather(self, strategy: PubStrategy) -> None:
        """Let a publisher's ``strategy`` gather the messages it is given one at a
        time to its stream subscribers: they are routed as one batch
        (:meth:`route_batch`, corks and all) just before trio's run loop next waits
        for I/O (:meth:`Revival.before_io_wait`), as ``send_many`` would route them."""
        self._gatherer = strategy
        strategy.gather = self._gathering

    def _gathering(self) -> None:
        """The gatherer began to gather: route its messages before the loop waits.

        Until then a send only gathers, with nothing to write through: it need not
        route through :meth:`route` (``armed`` is set again by :meth:`route_gathered`
        and whenever the socket's task waits or yields)."""
        self.armed = False
        revival_ = self._revival
        if revival_ is None:
            revival_ = self._revival = revival()
        revival_.gathering.append(self)

    def route_gathered(self) -> None:
        """Route what the gatherer gathered, as a batch."""
        strategy = self._gatherer
        if strategy is not None:
            msgs = strategy.take_gathered()
            if msgs:
                self.route_batch(strategy.send_batch, msgs, 0)
            self.armed = self.allowed and self.idle > 0

    def waited(self) -> None:
        """The socket's task waited or yielded: write-through may happen again."""
        self.allowed = True
        self.armed = self.idle > 0

    def route(self, send: Callable[[list[bytes]], bool], msg: list[bytes]) -> bool:
        """``send(msg)`` (a strategy's routing), then write through what it queued for
        an idle connection."""
        self.routing = True
        try:
            return send(msg)
        finally:
            self.routing = False
            if self.pending:
                # write each pending message, or leave it to its writer
                pending, self.pending = self.pending, []
                for output in pending:
                    if not (self.allowed and output.write_now()):
                        output.wake()

    def route_batch(
        self,
        send_batch: Callable[[list[list[bytes]], int], int],
        msgs: list[list[bytes]],
        start: int,
    ) -> int:
        """``send_batch(msgs, start)`` (a strategy's routing of a batch), then write
        through, with one call each, what it queued for the connections that were
        idle: a batch costs each of them one system call and no wake-up.

        A published batch is corked instead (:meth:`Revival.cork`): held back, the
        writer left idle, so that the batches the socket goes on publishing join it
        and one system call writes several (a system call per subscriber and batch
        is most of what a subscriber costs a publisher). The cork comes off before
        trio's run loop next waits for I/O, or after two scheduler passes in a row in
        which the socket published nothing (a loop of ``send_many`` and
        ``trio.sleep(0)`` publishes every other pass), or once :func:`cork_limit`
        messages wait (then at once, as the batch that reached it is corked) or the
        oldest has waited :data:`CORK_TIME`.
        """
        self.routing = True
        try:
            return send_batch(msgs, start)
        finally:
            self.routing = False
            # the run's instrument is installed by the first cork (a socket that
            # never corks, a PUSH's say, costs no scheduler pass a look at corks)
            corks = self._revival
            if corks is not None:
                self.fed_at = corks.passes
            if self.pending:
                pending, self.pending = self.pending, []
                allowed = self.allowed
                corked: RawOutput | None = None
                for output in pending:
                    if not allowed:
                        output.wake()
                    elif output.corkable():
                        if corks is None:
                            corks = self._revival = revival()
                            self.fed_at = corks.passes
                        corks.cork(output)
                        corked = output
                    elif not output.write_queue_now():
                        output.wake()
                # the queue of one connection corked stands for the others (they were
                # given the same batches): a cork never waits for the pass to end
                # with a queue at its limit, where the next batch would find it full
                if corked is not None and corks is not None:
                    pipe = corked._pipe
                    if len(pipe._items) >= cork_limit(pipe):
                        corks.uncork()

    async def wait_to_recv(self) -> None:
        """Park a receiving task: on a peer's connection (read-through) when that has
        nothing queued, else with the socket's receivers. Write-through may happen
        again afterwards (the socket waited).

        The peer read through is the only one, or, among several, the one the last
        message came from when the wait before came after that peer's message too (a
        socket with one busy peer among idle ones then reads as with that peer
        alone; a REQ or DEALER whose replies come from its peers in turn, each
        waited for elsewhere, parks). Input from any other peer wakes the socket's
        receivers, which ends the wait (``interrupt``), so the task then takes it in
        its turn.
        """
        self.allowed = True
        self.armed = self.idle > 0
        inbound = self._inbound
        only = inbound.only
        if only is None:
            recent = inbound.recent()
            if recent is not None and recent is self._recent:
                only = recent
            self._recent = recent
        reader = self.readers.get(only) if only is not None else None
        if reader is None or reader.ended or reader.waiting is not None or reader.peer.in_pipe:
            await self._park()
            return
        self.reading = reader
        try:
            await reader.wait()
        except trio.ClosedResourceError:
            return  # interrupted: look again
        finally:
            if reader.waiting is None:
                self.reading = None
        reader.read()

    def interrupt(self) -> None:
        """Something a receiver must see happened: end a read-through wait."""
        reading = self.reading
        if reading is not None:
            reading.interrupt()


class Revival(trio.abc.Instrument):
    """Wakes the readers whose receiving task left a read-through and did not come
    back to wait, and takes the corks off a publisher's batches when one is due, just
    before trio's run loop waits for I/O (one per trio run, installed by the first
    read-through or cork).

    A receiving task that read a connection through leaves its reader standing by:
    were the reader woken at once, it would run only to see the task waiting again
    (a scheduler pass and a ``epoll_wait`` per message, ~5 µs). So the read-through
    is *owed* a wake-up instead, paid here unless the task waited once more. When the
    loop is about to sleep (``timeout`` > 0), a wake-up through trio's token ends that
    sleep at once, so the reader watches the connection without delay: messages,
    PINGs and the peer's close are read while the application does something else.
    The loop is woken so only when a task waits to run: corks that came off with
    everything written (a publisher's gathered messages) woke nobody.
    """

    __slots__ = ("_corked_at", "_token", "corked", "gathering", "owed", "passes")

    def __init__(self) -> None:
        self.owed: list[ReadThrough] = []
        #: sockets whose publishes were gathered in this pass (see FastPath.gather)
        self.gathering: list[FastPath] = []
        #: connections whose published batches are held back (see FastPath.route_batch)
        self.corked: list[RawOutput] = []
        self._corked_at = 0.0
        #: scheduler passes so far (counted as each ends)
        self.passes = 0
        self._token = trio.lowlevel.current_trio_token()

    def cork(self, output: RawOutput) -> None:
        """Hold back what the idle ``output`` was just given (a published batch)."""
        if not self.corked:
            self._corked_at = trio.current_time()
        self.corked.append(output)

    def before_io_wait(self, timeout: float) -> None:
        """Route the gathered publishes; wake the readers still owed a wake-up;
        write what corks held back."""
        gathering = self.gathering
        if gathering:
            self.gathering = []
            for fast in gathering:
                fast.route_gathered()  # may wake writers: the loop must not sleep
        woke = (self._uncork(timeout) if self.corked else False) or bool(gathering)
        self.passes += 1
        owed = self.owed
        if owed:
            self.owed = []
            for read_through in owed:
                if read_through.owed:
                    read_through.owed = False
                    read_through._reader.unpark_all()
                    woke = True
        if woke and timeout > 0 and _anything_runnable():
            # a task woken here would wait for the loop's sleep to end: end it now
            self._token.run_sync_soon(_nothing, idempotent=True)

    def _uncork(self, timeout: float) -> bool:
        """Flush every cork once one is due (at once when the loop is about to
        sleep); True when they were flushed. Looking costs the same whatever the
        number of connections corked: the first one's queue stands for the others
        (a publisher's batches go to all of them alike)."""
        first = self.corked[0]
        pipe = first._pipe
        quiet = self.passes - 2  # fed in neither this pass nor the one before
        if not (
            timeout > 0
            or first._fast.fed_at <= quiet
            or len(pipe._items) >= cork_limit(pipe)
            or trio.current_time() - self._corked_at >= CORK_TIME
        ):
            return False
        self.uncork()
        return True

    def uncork(self) -> None:
        """Take every cork off now: each corked connection writes what it holds."""
        corked, self.corked = self.corked, []
        for output in corked:
            output.flush()


def cork_limit(pipe: Pipe) -> int:
    """The most messages a cork holds for a connection whose queue is ``pipe``:
    :data:`CORK_ITEMS`, or half the queue's mark where that is fewer. A cork held to
    the mark would have the publisher drop what an idle subscriber could take."""
    hwm = pipe.hwm
    return CORK_ITEMS if not hwm or hwm >= 2 * CORK_ITEMS else max(1, hwm // 2)


def _nothing() -> None:
    """Run by trio's token only to end a wait for I/O."""


def _anything_runnable() -> bool:
    """Whether trio's run loop has a task to run (from its internals; True where they
    moved, so that the loop is woken as if one were). A write that went out whole,
    corks that came off with nothing left for a writer, woke nobody: the loop may
    sleep until the answers come, without a wake-up of its own first."""
    try:
        return bool(RUN_CONTEXT.runner.runq)
    except AttributeError:  # pragma: no cover - a trio that moved it
        return True


_REVIVAL: trio.lowlevel.RunVar[Revival] = trio.lowlevel.RunVar("trizmq_revival")


def revival() -> Revival:
    """This trio run's :class:`Revival`, installed on first use."""
    try:
        return _REVIVAL.get()
    except LookupError:
        instrument = Revival()
        trio.lowlevel.add_instrument(instrument)
        _REVIVAL.set(instrument)
        return instrument


class ReadThrough:
    """A receiving task's way to read its only peer's connection itself.

    The task waits on the connection's socket (:meth:`wait`) and reads and parses
    what arrives (:meth:`read` does one turn of the reader's loop). The reader
    stands by meanwhile (:meth:`stand_by`): were both parked on the socket, the
    reader would wake for every message too and read it first half of the time.
    Whenever the task stops waiting, for any reason, the reader looks at the socket
    again unless the task waits once more, so one of them always watches. The end of
    the stream, an error or a protocol violation met here ends the connection
    exactly as the reader would.
    """

    __slots__ = ("_raw", "_reader", "_revival", "actor", "ended", "owed", "peer", "waiting")

    def __init__(self, actor: ConnectionActor, raw: RawSocket) -> None:
        self.actor = actor
        self.peer = actor.peer
        self._raw = raw
        #: set once :meth:`read` met the end of the connection: read it no more
        self.ended = False
        #: the receiving task parked in :meth:`wait`, if one is (one at a time)
        self.waiting: trio.lowlevel.Task | None = None
        self._reader = Waiters()
        #: the task left a wait with data and the reader still stands by: it is woken
        #: before trio next waits for I/O unless the task waits again first
        self.owed = False
        self._revival: Revival | None = None

    async def wait(self) -> None:
        """Park until the connection has data; ``trio.ClosedResourceError`` when
        :meth:`interrupt` is called or the connection ends meanwhile.

        Whenever the wait ends, the reader looks at the socket again unless the task
        waits once more first: at once when the wait failed, else before trio's run
        loop next waits for I/O (:class:`Revival`).
        """
        task = _current_task()
        self.waiting = task
        self.owed = False
        try:
            await self._raw.wait_readable_too()
        except BaseException:
            if self.waiting is task:
                self.waiting = None
            self._reader.unpark_all()
            raise
        if self.waiting is task:
            self.waiting = None
        if self._reader._tasks:
            self.owed = True
            owing = self._revival
            if owing is None:
                owing = self._revival = revival()
            owing.owed.append(self)

    def interrupt(self) -> None:
        """Wake the task parked in :meth:`wait`; a no-op when none is."""
        if self.waiting is not None:
            self.waiting = None
            self._raw.interrupt()

    async def stand_by(self) -> None:
        """The reader's wait while a receiving task waits on the socket for it."""
        await self._reader.park()

    @enable_ki_protection
    def read(self) -> None:
        """Read what the socket holds now and hand its messages on, as the reader
        would (protected from ``KeyboardInterrupt``, like the reader: a Ctrl-C between
        the read and the parse would lose bytes from the middle of the stream)."""
        if self.ended:
            return
        actor = self.actor
        try:
            data = self._raw.recv(RECEIVE_SIZE)
        except BlockingIOError:
            return  # the reader was first
        except OSError as exc:
            actor.log_lost(exc)
            self._end()
            return
        if not data:
            actor.log_closed()
            self._end()
            return
        actor.heard()
        try:
            actor.deliver_parsed(actor.codec.receive_data(data))
        except ProtocolError as exc:
            actor.refuse(exc)
            self._end()

    def _end(self) -> None:
        self.ended = True
        self.actor.close()
