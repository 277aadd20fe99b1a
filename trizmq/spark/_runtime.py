"""One trio loop per Python process, in a background thread, reached through a portal.

Spark calls the connector from plain threads (executor tasks, the driver's source and
commit runners). Each process gets, lazily, one daemon thread running ``trio.run``;
code on other threads calls into it with :meth:`Runtime.run`
(``trio.from_thread.run``). Sockets opened there stay open across tasks and batches
(keyed by their settings) until the process exits. Nothing here is created at import
or kept in a pickled object; a forked child (PySpark's daemon forks its workers)
notices the pid change and starts its own loop.

The receiver (:func:`receive_into_log`) is shared by the in-query source and the
spool process: it owns a Pull/Sub/Dish and appends every message to a
:class:`~trizmq.spark._wal.LogWriter` before the log's head (the offset a query
may see) moves past it.

This module needs trio, not pyspark.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol, TypeAlias, TypeVar

import trio

import trizmq

from ._wal import LogWriter

__all__ = ["Admission", "Runtime", "SocketSpec", "receive_into_log", "runtime"]

_log = logging.getLogger("trizmq")

T = TypeVar("T")
#: what tells a process's sockets apart: kind, endpoints, bind or connect, topics,
#: high-water mark, linger (:meth:`SocketSpec.key`)
SocketKey: TypeAlias = tuple[str, tuple[str, ...], str, tuple[str, ...], int, float]

#: messages appended to the log per write (and fsync)
LOG_BATCH = 8192
#: seconds a batch waits for more messages before it is written
LOG_BATCH_WAIT = 0.002
#: the same on remote storage, where every write is a new object (one upload per batch)
REMOTE_LOG_BATCH = 65536
REMOTE_LOG_BATCH_WAIT = 0.05


class SocketSpec:
    """What socket to open: type, endpoints, bind or connect, topics or groups, options."""

    def __init__(
        self,
        kind: str,
        endpoints: Sequence[str],
        mode: str,
        *,
        topics: Sequence[str] = (),
        hwm: int = 1000,
        linger: float = 5.0,
    ) -> None:
        self.kind = kind
        self.endpoints = tuple(endpoints)
        self.mode = mode
        self.topics = tuple(topics)
        self.hwm = hwm
        self.linger = linger

    def key(self) -> SocketKey:
        return (self.kind, self.endpoints, self.mode, self.topics, self.hwm, self.linger)

    def open(self) -> trizmq.Socket:
        """The unentered socket."""
        where = {self.mode: list(self.endpoints)}
        kind = self.kind
        if kind == "pull":
            return trizmq.Pull(rcvhwm=self.hwm, **where)
        if kind == "sub":
            return trizmq.Sub(rcvhwm=self.hwm, subscribe=list(self.topics) or [b""], **where)
        if kind == "dish":
            return trizmq.Dish(rcvhwm=self.hwm, **where)
        if kind == "push":
            return trizmq.Push(sndhwm=self.hwm, linger=self.linger, **where)
        if kind == "pub":
            return trizmq.Pub(sndhwm=self.hwm, linger=self.linger, **where)
        if kind == "radio":
            return trizmq.Radio(sndhwm=self.hwm, linger=self.linger, **where)
        raise ValueError(f"socket must be pull, sub, dish, push, pub or radio, not {kind!r}")


class Admission(Protocol):
    """What the receive loop asks before it takes messages off its socket (the spool's
    back-pressure: ``trizmq.spark.spool``)."""

    async def room(self, most: int) -> int:
        """How many messages (1 to ``most``) may be received now; waits while none may."""
        ...

    def appended(self, head: int, nbytes: int) -> None:
        """The log's head is now ``head``, after an append of ``nbytes`` message bytes."""
        ...


async def receive_into_log(
    spec: SocketSpec,
    log: LogWriter,
    *,
    failed: Callable[[Exception], None] | None = None,
    admission: Admission | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Receive forever, appending every message to ``log`` (then moving its head).

    An error before the socket is open is raised; one after it is passed to ``failed``
    if given (the in-query receiver keeps it for the query to raise), else raised.
    With ``admission``, each receive takes at most what it grants, and none while it
    waits: the socket is not read then, so its queues fill to their high-water mark and
    the senders block (the lease is still renewed meanwhile).
    """
    sock = spec.open()
    async with sock:
        if isinstance(sock, trizmq.Dish):
            for group in spec.topics:
                sock.join(group)
        stats = sock.statistics()
        task_status.started(list(stats.get("bound", [])) or list(spec.endpoints))
        try:
            async with trio.open_nursery() as nursery:
                if log.renew_interval is not None:
                    nursery.start_soon(_renew_lease, log, log.renew_interval)
                await _receive_loop(spec, sock, log, admission)
        except Exception as exc:
            if failed is None:
                raise
            failed(exc)


async def _renew_lease(log: LogWriter, interval: float) -> None:
    """Keep a remote log's lease while no message comes (appends renew it too).

    A renewal that fails with an I/O error is tried again at the next interval
    (:func:`_while_the_lease_holds`).
    """
    while True:
        await trio.sleep(interval)
        await _while_the_lease_holds(log, log.renew, "renewing the lease", interval, interval)


async def _while_the_lease_holds(
    log: LogWriter, call: Callable[[], object], what: str, wait: float, longest: float
) -> None:
    """``call()`` in a worker thread; on a remote log, a call that fails with an I/O
    error (the object store slow to answer, or briefly out of reach) is made again
    after ``wait`` seconds, doubled each time up to ``longest``. The error is raised
    when the next try would come after the lease ran out, or a lease's length after
    the first failure (a store that takes the lease but never the log);
    :class:`LeaseLost` (another writer took it) and a local log's errors at once."""
    lease = log.lease
    first_failure: float | None = None
    while True:
        try:
            await trio.to_thread.run_sync(call)
            return
        except OSError as exc:
            now = time.monotonic()
            if first_failure is None:
                first_failure = now
            if lease is None or max(now - lease.renewed, now - first_failure) + wait >= (
                lease.seconds
            ):
                raise
            _log.warning(
                "%s of the log in %s failed (%s); trying again in %.2f s",
                what,
                log.location,
                exc,
                wait,
            )
        await trio.sleep(wait)
        wait = min(2 * wait, longest)


async def _receive_loop(
    spec: SocketSpec, sock: trizmq.Socket, log: LogWriter, admission: Admission | None = None
) -> None:
    """Batch messages (up to LOG_BATCH, or LOG_BATCH_WAIT after the first) into log writes;
    with ``admission``, no more than it grants, and nothing while it waits."""
    most, wait = (LOG_BATCH, LOG_BATCH_WAIT) if log.lease is None else (
        REMOTE_LOG_BATCH, REMOTE_LOG_BATCH_WAIT)
    receive: Callable[[int], Awaitable[list[_Entry]]]
    if spec.kind == "dish":
        receive = partial(_group_message, sock)
    else:
        receive = partial(_messages, sock, spec.kind == "sub")
    while True:
        take = most if admission is None else await admission.room(most)
        batch = await receive(take)
        deadline = trio.current_time() + wait
        while len(batch) < take:
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                break
            with trio.move_on_after(remaining):
                batch += await receive(take - len(batch))
        await _append(log, batch)
        if admission is not None:
            admission.appended(log.next_offset, _message_bytes(batch))


#: the first wait before an append that failed is made again (doubled each time, up
#: to the lease's renewal interval)
APPEND_RETRY = 0.05


async def _append(log: LogWriter, batch: list[_Entry]) -> None:
    """``log.append(batch)``, made again after an I/O error while the lease holds
    (:func:`_while_the_lease_holds`; the same messages rewrite the same segment: see
    ``LogWriter.append``). Meanwhile the socket queues what comes, up to its
    high-water mark."""
    await _while_the_lease_holds(
        log,
        partial(log.append, batch),
        f"appending {len(batch)} messages",
        APPEND_RETRY,
        log.renew_interval or APPEND_RETRY,
    )


#: a log entry: (received at, in microseconds since the epoch; topic; frames)
_Entry = tuple[int, bytes | None, list[bytes]]


def _message_bytes(batch: list[_Entry]) -> int:
    """The bytes of the messages of ``batch``: every frame, and a DISH message's group."""
    total = 0
    for _at, topic, frames in batch:
        total += sum(map(len, frames))
        if topic is not None and not (frames and topic is frames[0]):
            total += len(topic)
    return total


async def _messages(sock: trizmq.Socket, sub: bool, most: int) -> list[_Entry]:
    """Up to ``most`` queued messages (at least one); a SUB's topic is its first frame."""
    messages = await sock.recv_many(most)
    now = time.time_ns() // 1000
    if sub:
        return [(now, frames[0] if frames else None, frames) for frames in messages]
    return [(now, None, frames) for frames in messages]


async def _group_message(sock: trizmq.Socket, most: int) -> list[_Entry]:
    """One DISH message, its group as its topic."""
    msg = await sock.recv_message()
    return [(time.time_ns() // 1000, msg.group, msg.frames)]


async def _hold(sock: trizmq.Socket, task_status: trio.TaskStatus[None]) -> None:
    async with sock:
        task_status.started()
        await trio.sleep_forever()


class Runtime:
    """The process's trio loop and the sockets it keeps open."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._sockets: dict[SocketKey, trizmq.Socket] = {}
        self._lock = threading.Lock()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=trio.run, args=(self._main, ready), name="trizmq-spark", daemon=True
        )
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the trizmq runtime thread did not start")
        atexit.register(self.shutdown)

    async def _main(self, ready: threading.Event) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            ready.set()
            await trio.sleep_forever()

    def run(self, afn: Callable[..., Awaitable[T]], *args: object) -> T:
        """Run ``afn(*args)`` in the loop and return its result (from any other thread)."""
        return trio.from_thread.run(afn, *args, trio_token=self._token)

    def start(self, afn: Callable[..., Awaitable[object]], *args: object) -> object:
        """Start a background task in the loop's nursery; return what it passes to started()."""
        assert self._nursery is not None
        nursery = self._nursery

        async def go() -> object:
            return await nursery.start(afn, *args)

        return self.run(go)

    def socket(self, spec: SocketSpec) -> trizmq.Socket:
        """The process's open socket for ``spec``, opened on first use."""
        key = spec.key()
        with self._lock:
            sock = self._sockets.get(key)
            if sock is None or sock.closed:
                sock = spec.open()
                self.start(_hold, sock)
                self._sockets[key] = sock
            return sock

    def shutdown(self) -> None:
        """Close every socket (each flushing for its linger), then stop the loop."""
        if self._token is None or os.getpid() != self.pid:
            return
        sockets, self._sockets = list(self._sockets.values()), {}

        async def close_all() -> None:
            for sock in sockets:
                await sock.aclose()
            assert self._nursery is not None
            self._nursery.cancel_scope.cancel()

        with contextlib.suppress(trio.RunFinishedError, RuntimeError):
            self.run(close_all)
        self._thread.join(10)
        self._token = None


_RUNTIME: Runtime | None = None
_RUNTIME_LOCK = threading.Lock()


def runtime() -> Runtime:
    """This process's runtime, started on first use (again after a fork)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None or _RUNTIME.pid != os.getpid():
            _RUNTIME = Runtime()
        return _RUNTIME
