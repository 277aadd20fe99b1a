"""The relay: publishes the exactly-once sink's committed batches, so that no row passes
through the Spark driver.

    python -m trizmq.spark.relay --staging URI [--metrics HOST:PORT] [--lease-seconds S]
    python -m trizmq.spark.relay --staging URI --status [--json]

With ``delivery="exactly-once"`` and ``publish="relays"`` the executors stage their rows
under ``staging/pending/`` and the driver's commit of batch N writes only a manifest,
``staging/manifests/<N, 20 digits>.json``: the batch's staged files (name, partition,
rows) and the sink's ``endpoint``, ``socket`` and ``mode`` (with its ``hwm`` and
``linger``). A relay publishes the manifests on their own socket, and records each done.

Rules:

1. **Batch order.** A relay sends a file of manifest N only while N is the first
   manifest not yet in the ledger (``staging/published/N``): every file of batch N-1 was
   written out to its socket's connection before any row of batch N is handed to one.
2. **One publisher per file, under a lease.** Before it sends a file, a relay takes the
   file's lease (``staging/relay/leases/<file>/lease``, :class:`~trizmq.spark._wal.Lease`).
   The files of one batch go out in parallel when several relays run (in partition
   order with one relay); a relay may take a file of the next batch while it waits for
   its turn, so that the lease's settle time overlaps the current batch.
3. **Progress.** Every ``--progress-rows`` rows the relay waits until its socket has
   written them out and records how many rows of the file are out
   (``staging/relay/progress/<file>``); a successor that takes the file over (after the
   lease of a killed relay runs out) sends the rest from there. So a relay killed mid-file
   leads to at most the rows of that file since its last record being sent twice, which a
   consumer of ``header=true`` messages drops by their ``(batch, partition, sequence)``.
4. **Done.** A finished file is recorded in ``staging/relay/done/``; whichever relay
   finds every file of a manifest done writes the ledger entry ``published/N``, then
   deletes the staged files, the markers and the manifest.

Once it runs, a relay prints ``ready <staging>``; SIGTERM or SIGINT stops it cleanly
(the rows of the chunk it was sending may be sent again by its successor, as in rule
3). ``--status`` prints what is pending; ``--metrics HOST:PORT`` serves Prometheus text
on ``http://HOST:PORT/metrics``, as the spool does. This module needs trio, not pyspark.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypedDict

import trio

import trizmq

from ._runtime import SocketSpec
from ._store import open_store
from ._wal import DEFAULT_LEASE_SECONDS, Lease, LeaseRecord, decode_all
from ._wal import LeaseLost as _LeaseLost
from .spool import _MAX_REQUEST, _REQUEST_TIMEOUT

__all__ = ["RelayStatus", "main", "manifest_name", "status"]

_log = logging.getLogger("trizmq")

#: where the driver writes manifests, and the ledger of published batches, in ``staging``
MANIFESTS = "manifests"
LEDGER = "published"
#: rows a relay sends between two progress records (and waits to be written out)
DEFAULT_PROGRESS_ROWS = 65536
#: seconds between two looks at the staging area while there is nothing to do
DEFAULT_POLL = 0.1
#: messages handed to ``send_many`` at a time
_SEND_BATCH = 256
#: manifests (from the first pending one) whose files a relay may take
_AHEAD = 2
#: seconds a relay waits after writing a file's lease before it reads it back (of two
#: relays racing for one file, the one whose write is read back goes on): a store's
#: write is visible within this, and a relay takes a lease per file, so it is shorter
#: than the spool's second
SETTLE = 0.25


def manifest_name(batch_id: int) -> str:
    """The manifest's name under ``staging/manifests/`` for a stream's batch ``batch_id``
    (names sort in batch order; a batch write's, ``w-…``, sort after every batch)."""
    if batch_id >= 0:
        return f"{batch_id:020d}.json"
    return f"w-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"


@dataclass(frozen=True)
class StagedFile:
    """One task's staged rows, as a manifest lists it."""

    name: str
    partition: int
    rows: int


@dataclass(frozen=True)
class Manifest:
    """A committed batch: its staged files and the socket to publish them on."""

    name: str
    batch: int
    spec: SocketSpec
    files: tuple[StagedFile, ...]

    @classmethod
    def parse(cls, name: str, data: bytes) -> Manifest:
        """The manifest ``name`` from its JSON."""
        body = json.loads(data)
        spec = SocketSpec(
            str(body["socket"]),
            [e.strip() for e in str(body["endpoint"]).split(",") if e.strip()],
            str(body["mode"]),
            hwm=int(body.get("hwm", 10000)),
            linger=float(body.get("linger", 30)),
        )
        files = tuple(
            StagedFile(str(f["name"]), int(f["partition"]), int(f["rows"]))
            for f in body["files"]
        )
        return cls(name, int(body["batch"]), spec, files)


class Staging:
    """The relay's view of a staging area (blocking calls: run them in a thread)."""

    def __init__(self, location: str) -> None:
        self.store = open_store(location)
        self.location = self.store.location
        self.pending = self.store.child("pending")
        self.manifests = self.store.child(MANIFESTS)
        self.done = self.store.child("relay/done")
        self.progress = self.store.child("relay/progress")
        self._parsed: dict[str, Manifest] = {}

    def lease(self, file: str, seconds: float) -> Lease:
        """The lease of one staged file (settling for :data:`SETTLE` seconds)."""
        lease = Lease(self.store.child(f"relay/leases/{file}"), seconds)
        lease.settle = min(lease.settle, SETTLE)
        return lease

    def _manifest(self, name: str) -> Manifest:
        found = self._parsed.get(name)
        if found is None:
            found = self._parsed[name] = Manifest.parse(name, self.manifests.read(name))
        return found

    def pending_manifests(self, most: int | None = None) -> list[Manifest]:
        """The manifests not in the ledger yet, in batch order (finishing any found done)."""
        out: list[Manifest] = []
        names = [n for n in self.manifests.list() if n.endswith(".json")]
        for gone in set(self._parsed) - set(names):
            del self._parsed[gone]
        for name in names:
            try:
                manifest = self._manifest(name)
            except FileNotFoundError:  # another relay finished it meanwhile
                continue
            if self.published(manifest) or all(self.is_done(f) for f in manifest.files):
                self.finish(manifest)
                continue
            out.append(manifest)
            if most is not None and len(out) >= most:
                break
        return out

    def published(self, manifest: Manifest) -> bool:
        """Whether the manifest's batch is in the ledger."""
        return manifest.batch >= 0 and self.store.exists(f"{LEDGER}/{manifest.batch}")

    def is_done(self, file: StagedFile) -> bool:
        """Whether every row of ``file`` is out."""
        return self.done.exists(file.name)

    def sent(self, file: StagedFile) -> int:
        """Rows of ``file`` recorded as written out."""
        try:
            return int(self.progress.read(file.name).decode() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def record(self, file: StagedFile, rows: int) -> None:
        """Record that the first ``rows`` rows of ``file`` are out."""
        self.progress.write(file.name, str(rows).encode(), sync=True)

    def file_done(self, file: StagedFile) -> None:
        """Record ``file`` done."""
        self.done.write(file.name, b"1", sync=True)
        self.progress.delete(file.name)

    def finish(self, manifest: Manifest) -> None:
        """Put the batch in the ledger, then delete its files, markers and manifest."""
        if manifest.batch >= 0:
            self.store.write(f"{LEDGER}/{manifest.batch}", b"1", sync=True)
        for file in manifest.files:
            self.pending.delete(file.name)
            self.progress.delete(file.name)
            self.done.delete(file.name)
        self.manifests.delete(manifest.name)
        self._parsed.pop(manifest.name, None)


def _free(staging: Staging, file: StagedFile, lease: Lease | None = None) -> bool:
    """Whether ``file`` is not done and no live lease (but ``lease``, ours) holds it."""
    if staging.is_done(file):
        return False
    holder = staging.lease(file.name, 1.0).holder()
    if holder is None or float(holder.get("expires", 0)) <= time.time():
        return True
    return lease is not None and holder.get("owner") == lease.owner


@dataclass
class Claim:
    """A file a relay holds the lease of, and its manifest."""

    manifest: Manifest
    file: StagedFile
    lease: Lease


def claim(staging: Staging, seconds: float) -> Claim | None:
    """Take the lease of the first free file of the first pending manifests, or None."""
    for manifest in staging.pending_manifests(_AHEAD):
        for file in sorted(manifest.files, key=lambda f: f.partition):
            if not _free(staging, file):
                continue
            lease = staging.lease(file.name, seconds)
            try:
                lease.acquire(wait=0)
            except RuntimeError:  # another relay took it first
                continue
            if staging.is_done(file):  # finished by another relay just before
                lease.release()
                continue
            return Claim(manifest, file, lease)
    return None


def _turn(staging: Staging, held: Claim) -> bool | None:
    """True when ``held``'s manifest is the first pending one; False when an earlier
    manifest has a free file (so that the relay lets its claim go and takes that); None
    to go on waiting."""
    pending = staging.pending_manifests()
    if not pending or pending[0].name >= held.manifest.name:
        return True
    for manifest in pending:
        if manifest.name >= held.manifest.name:
            break
        if any(_free(staging, f) for f in manifest.files):
            return False
    return None


class RelayCounters:
    """What this relay published since it started (for the metrics)."""

    def __init__(self) -> None:
        self.rows = 0
        self.files = 0


class _Sockets:
    """The relay's open sockets, one per manifest socket spec."""

    def __init__(self, stack: contextlib.AsyncExitStack) -> None:
        self.stack = stack
        self.open: dict[object, trizmq.Socket] = {}

    async def get(self, spec: SocketSpec) -> trizmq.Socket:
        key = spec.key()
        sock = self.open.get(key)
        if sock is None or sock.closed:
            sock = await self.stack.enter_async_context(spec.open())
            self.open[key] = sock
        return sock


async def _send(sock: trizmq.Socket, messages: list[list[bytes]], hwm: int) -> None:
    if isinstance(sock, trizmq.Radio):
        for i, msg in enumerate(messages):
            sock.send_nowait(msg[1], group=msg[0])
            if i % 64 == 63:
                await trio.sleep(0)
        return
    # no batch larger than the high-water mark: a send_many of more than the mark
    # waits for good once the peer falls behind (seen with a mark of 20)
    batch = max(1, min(_SEND_BATCH, hwm))
    for start in range(0, len(messages), batch):
        await sock.send_many(messages[start : start + batch])


async def _written_out(sock: trizmq.Socket, strict: bool) -> None:
    """Until the socket's queue is empty (a PUB or RADIO: at most a second, as the sink)."""
    with trio.move_on_after(float("inf") if strict else 1.0):
        while sock.statistics().get("queued_out", 0):
            await trio.sleep(0.002)


async def _publish(
    staging: Staging, held: Claim, sockets: _Sockets, counters: RelayCounters, every: int
) -> None:
    file = held.file
    try:
        data = await trio.to_thread.run_sync(staging.pending.read, file.name)
    except FileNotFoundError:  # published and deleted by another relay meanwhile
        return
    messages = [rec.frames for rec in decode_all(data)]
    start = await trio.to_thread.run_sync(staging.sent, file)
    sock = await sockets.get(held.manifest.spec)
    strict = held.manifest.spec.kind == "push"
    at = start
    while at < len(messages):
        await trio.to_thread.run_sync(held.lease.check)
        if await trio.to_thread.run_sync(staging.is_done, file):
            return  # a successor took it over while this relay was frozen, and finished it
        chunk = messages[at : at + every]
        await _send(sock, chunk, held.manifest.spec.hwm)
        await _written_out(sock, strict)
        at += len(chunk)
        counters.rows += len(chunk)
        if at < len(messages):
            await trio.to_thread.run_sync(staging.record, file, at)
    await trio.to_thread.run_sync(staging.file_done, file)
    counters.files += 1
    await trio.to_thread.run_sync(staging.pending_manifests, 1)  # finishes it if all done


async def relay(
    staging: Staging,
    counters: RelayCounters,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    progress_rows: int = DEFAULT_PROGRESS_ROWS,
    poll: float = DEFAULT_POLL,
) -> None:
    """Publish the staging area's manifests until cancelled (the relay's one loop)."""
    async with contextlib.AsyncExitStack() as stack:
        sockets = _Sockets(stack)
        while True:
            try:
                held = await trio.to_thread.run_sync(claim, staging, lease_seconds)
            except OSError as exc:
                _log.warning("relay: %s; trying again", exc)
                held = None
            if held is None:
                await trio.sleep(poll)
                continue
            try:
                while (turn := await trio.to_thread.run_sync(_turn, staging, held)) is None:
                    await trio.to_thread.run_sync(held.lease.check)
                    await trio.sleep(poll)
                if turn:
                    await _publish(staging, held, sockets, counters, progress_rows)
            except _LeaseLost as exc:
                _log.warning("relay: %s", exc)
            except OSError as exc:  # the store out of reach: the lease runs out, or we retry
                _log.warning("relay: %s; trying again", exc)
                await trio.sleep(poll)
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(held.lease.release)


class FileStatus(TypedDict):
    """One staged file of a pending manifest."""

    file: str
    partition: int
    rows: int
    sent: int
    done: bool
    lease: LeaseRecord | None


class ManifestStatus(TypedDict):
    """A pending manifest: its batch and files."""

    manifest: str
    batch: int
    files: list[FileStatus]


class RelayStatus(TypedDict):
    """:func:`status`: the manifests not yet published, and their rows still to send."""

    staging: str
    pending_manifests: int
    pending_files: int
    pending_rows: int
    published_batches: int
    manifests: list[ManifestStatus]


def status(location: str) -> RelayStatus:
    """What the staging area at ``location`` holds for relays to publish."""
    staging = Staging(location)
    manifests: list[ManifestStatus] = []
    files_left = rows_left = 0
    for name in staging.manifests.list():
        if not name.endswith(".json"):
            continue
        try:
            manifest = staging._manifest(name)
        except FileNotFoundError:
            continue
        if staging.published(manifest):
            continue
        files: list[FileStatus] = []
        for f in manifest.files:
            done = staging.is_done(f)
            sent = f.rows if done else staging.sent(f)
            files.append({"file": f.name, "partition": f.partition, "rows": f.rows,
                          "sent": sent, "done": done,
                          "lease": staging.lease(f.name, 1.0).holder()})
            files_left += not done
            rows_left += f.rows - sent
        manifests.append({"manifest": name, "batch": manifest.batch, "files": files})
    return {
        "staging": staging.location,
        "pending_manifests": len(manifests),
        "pending_files": files_left,
        "pending_rows": rows_left,
        "published_batches": len(staging.store.list(under=LEDGER)),
        "manifests": manifests,
    }


def _metrics_text(location: str, counters: RelayCounters) -> str:
    info = status(location)
    escaped = location.replace("\\", "\\\\").replace('"', '\\"')
    label = '{staging="' + escaped + '"}'
    lines = []
    for name, kind, value, text in (
        ("pending_manifests", "gauge", info["pending_manifests"], "committed batches not yet "
         "published"),
        ("pending_files", "gauge", info["pending_files"], "staged files not yet published"),
        ("pending_rows", "gauge", info["pending_rows"], "rows of pending manifests not yet out"),
        ("published_batches", "gauge", info["published_batches"], "batches in the ledger"),
        ("published_rows_total", "counter", counters.rows, "rows this relay wrote out"),
        ("published_files_total", "counter", counters.files, "files this relay finished"),
    ):
        lines += [f"# HELP trizmq_relay_{name} {text}", f"# TYPE trizmq_relay_{name} {kind}",
                  f"trizmq_relay_{name}{label} {value}"]
    return "\n".join(lines) + "\n"


async def _serve_metric(stream: trio.SocketStream, location: str, counters: RelayCounters
                        ) -> None:
    async with stream:
        request = b""
        with trio.move_on_after(_REQUEST_TIMEOUT):
            while b"\r\n\r\n" not in request and len(request) < _MAX_REQUEST:
                chunk = await stream.receive_some(_MAX_REQUEST)
                if not chunk:
                    break
                request += chunk
        line = request.split(b"\r\n", 1)[0].split()
        if len(line) >= 2 and line[0] == b"GET" and line[1] in (b"/metrics", b"/"):
            try:
                text = await trio.to_thread.run_sync(_metrics_text, location, counters)
                body = text.encode()
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            except OSError as exc:
                body = f"staging unreadable: {exc}\n".encode()
                head = b"HTTP/1.1 503 Unavailable\r\n"
        else:
            body, head = b"GET /metrics\n", b"HTTP/1.1 404 Not Found\r\n"
        with trio.move_on_after(_REQUEST_TIMEOUT):
            await stream.send_all(
                head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
            )


async def _serve(args: argparse.Namespace) -> None:
    staging = Staging(args.staging)
    counters = RelayCounters()
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            if args.metrics:
                host, _, port = args.metrics.rpartition(":")
                listeners = await nursery.start(
                    partial(trio.serve_tcp, host=host or None),
                    partial(_serve_metric, location=staging.location, counters=counters),
                    int(port),
                )
                bound = listeners[0].socket.getsockname()
                print(f"metrics http://{bound[0]}:{bound[1]}/metrics", flush=True)
            nursery.start_soon(partial(
                relay, staging, counters, lease_seconds=args.lease_seconds,
                progress_rows=args.progress_rows, poll=args.poll,
            ))
            print(f"ready {staging.location}", flush=True)
            async for _sig in signals:
                nursery.cancel_scope.cancel()
                break


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trizmq.spark.relay",
        description="Publish the exactly-once sink's committed manifests (publish=relays), "
        "in batch order, sharing the work with other relays under leases.",
    )
    p.add_argument("--staging", required=True, help="the sink's staging: a directory or a URI")
    p.add_argument("--status", action="store_true", help="print what is pending and exit")
    p.add_argument("--json", action="store_true", help="--status: one JSON object")
    p.add_argument("--metrics", default="", metavar="HOST:PORT",
                   help="serve Prometheus metrics (pending manifests, rows) on this address")
    p.add_argument("--lease-seconds", type=float, default=DEFAULT_LEASE_SECONDS,
                   help="how long a relay's lease on a file lasts unless renewed")
    p.add_argument("--progress-rows", type=int, default=DEFAULT_PROGRESS_ROWS,
                   help="rows sent between two progress records")
    p.add_argument("--poll", type=float, default=DEFAULT_POLL,
                   help="seconds between two looks at the staging area when idle")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run a relay (or, with ``--status``, print what is pending); the exit status."""
    parser = _parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.status:
        info = status(args.staging)
        if args.json:
            print(json.dumps(info))
            return 0
        for key, value in info.items():
            if key != "manifests":
                print(f"{key}: {value}")
        for m in info["manifests"]:
            for f in m["files"]:
                lease = f["lease"]
                held = f"{lease.get('owner')}" if lease else "-"
                print(f"batch {m['batch']} partition {f['partition']}: {f['sent']}/{f['rows']} "
                      f"rows out{' (done)' if f['done'] else ''}, lease {held}")
        return 0
    if args.metrics and ":" not in args.metrics:
        parser.error(f"--metrics takes HOST:PORT, not {args.metrics!r}")
    if not args.lease_seconds > 0:
        parser.error(f"--lease-seconds must be more than 0, not {args.lease_seconds!r}")
    if args.progress_rows < 1:
        parser.error(f"--progress-rows must be at least 1, not {args.progress_rows!r}")
    if not args.poll > 0:
        parser.error(f"--poll must be more than 0, not {args.poll!r}")
    trio.run(_serve, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
