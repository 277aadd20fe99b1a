"""Sockets' counters as Prometheus metrics: one collector per registry, read at scrape time.

Strategy: nothing happens per message. A socket's counters are always on
(``sock.stats()``); :class:`SocketCollector` is a ``prometheus_client`` custom
collector whose ``collect()`` takes every registered socket's snapshot when
Prometheus scrapes and turns it into metric families, following the tables
:data:`SOCKET_METRICS` and :data:`PEER_METRICS` (one row per metric: name, type,
help, an extra label and how to read the value). The socket's rows are made from
the figures it shares with OpenTelemetry (``_figures``); the per-peer ones are
Prometheus's alone.

Rules:

* One :class:`SocketCollector` per registry, made by the first :func:`register` or
  :func:`register_all` on it; so a socket's series exist once per registry.
* Every series is labelled ``socket`` (the name given at registration, or the
  socket's default name ``<type>-<n>``) and ``type`` (``PUB``, ``ROUTER``, ...).
  Per-peer series (``peers=True``) add ``peer``: the peer's address, else the
  endpoint it came through, with ``#2``, ``#3``, ... on repeats.
* Registering a socket twice in one registry, a closed socket, or a name that an
  open socket of the registry already has is a ``ValueError``. A closed socket's
  series disappear from the next scrape; :func:`register_all` is idempotent.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

import attrs
from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .. import _open_sockets
from .._open_sockets import Observed
from .._stats import PeerStats, SocketStats
from ._figures import FIGURES, Value
from ._snapshot import take

__all__ = [
    "PEER_METRICS",
    "SOCKET_METRICS",
    "MetricsServer",
    "SocketCollector",
    "collector",
    "register",
    "register_all",
    "serve",
    "unregister",
]

#: what a row reads its value from: a socket's snapshot, or one of its peers'
Source = TypeVar("Source", SocketStats, PeerStats)


@attrs.frozen
class MetricRow(Generic[Source]):
    """One exported metric: ``trizmq_<name>`` (``_total`` added to a counter)."""

    name: str
    kind: str  # "counter" or "gauge"
    help: str
    #: the label that tells the values of a mapping apart, or None for one value
    label: str | None
    value: Callable[[Source], Value]
    unit: str = ""


#: what Prometheus calls a unit of the figures' (UCUM): seconds alone
_UNITS = {"s": "seconds"}
#: the figures' Prometheus names, as their descriptions name one another
_NAMES = {figure.name: figure.name for figure in FIGURES}

#: the metrics of every socket, labelled ``socket`` and ``type``: the figures'
SOCKET_METRICS: tuple[MetricRow[SocketStats], ...] = tuple(
    MetricRow(
        figure.name,
        figure.kind,
        figure.describe(_NAMES),
        None if figure.by is None else figure.by[0],
        figure.value,
        unit=_UNITS.get(figure.unit, ""),
    )
    for figure in FIGURES
)

#: the per-peer metrics (``register(..., peers=True)``), labelled ``socket``, ``type``, ``peer``
PEER_METRICS: tuple[MetricRow[PeerStats], ...] = (
    MetricRow(
        "peer_messages_sent", "counter", "Whole messages handed to this peer's queue.",
        None, lambda p: p.messages_sent,
    ),
    MetricRow(
        "peer_messages_received", "counter",
        "Whole messages from this peer handed to the application.",
        None, lambda p: p.messages_received,
    ),
    MetricRow(
        "peer_messages_dropped", "counter", "Whole messages discarded for this peer, by reason.",
        "reason", lambda p: p.drops,
    ),
    MetricRow(
        "peer_queue_depth", "gauge", "Messages waiting now in this peer's queues.",
        "direction", lambda p: {"out": p.queued_out, "in": p.queued_in},
    ),
    MetricRow(
        "peer_pings_sent", "counter", "Heartbeat PINGs sent to this peer.",
        None, lambda p: p.pings_sent,
    ),
    MetricRow(
        "peer_rtt_seconds", "gauge", "The last heartbeat round trip (PING to PONG) of this peer.",
        None, lambda p: p.rtt, unit="seconds",
    ),
)

_BASE_LABELS = ("socket", "type")


def _family(row: MetricRow[Source], labels: tuple[str, ...]) -> Metric:
    names = list(labels) if row.label is None else [*labels, row.label]
    full = f"trizmq_{row.name}"
    if row.kind == "counter":
        return CounterMetricFamily(full, row.help, labels=names, unit=row.unit)
    return GaugeMetricFamily(full, row.help, labels=names, unit=row.unit)


def _add(family: Metric, row: MetricRow[Source], labels: list[str], source: Source) -> None:
    value = row.value(source)
    if value is None:
        return
    add = family.add_metric  # type: ignore[attr-defined]
    if isinstance(value, Mapping):
        for key, number in value.items():
            add([*labels, key], number)
    else:
        add(labels, value)


def peer_names(peers: Iterable[PeerStats]) -> list[str]:
    """The ``peer`` label of each peer: its address, else its endpoint; repeats numbered."""
    seen: dict[str, int] = {}
    names = []
    for peer in peers:
        base = peer.remote or peer.endpoint
        count = seen[base] = seen.get(base, 0) + 1
        names.append(base if count == 1 else f"{base}#{count}")
    return names


@attrs.define
class _Entry:
    name: str | None  # None: the default name
    peers: bool


class SocketCollector(Collector):
    """The collector of one registry: the sockets registered there, read at scrape time.

    Made by :func:`register` and :func:`register_all` (:func:`collector` returns a
    registry's); it can also be built and registered by hand.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: weakref.WeakKeyDictionary[Observed, _Entry] = weakref.WeakKeyDictionary()
        self._every = False
        self._every_peers = False

    def add(self, sock: Observed, name: str | None = None, *, peers: bool = False) -> str:
        """Export ``sock``'s series.

        Args:
            sock: an open (or not yet entered) trizmq socket.
            name: the ``socket`` label; default ``<type>-<n>`` (``pub-1``).
            peers: also export one series per peer (``trizmq_peer_*``).

        Returns:
            The ``socket`` label of its series.

        Raises:
            ValueError: the socket is closed or already registered here, or an open
                socket registered here already has that name.
        """
        if sock.closed:
            raise ValueError(f"{sock!r} is closed: a closed socket has no metrics")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a socket's metrics name is a non-empty str, not {name!r}")
        with self._lock:
            if sock in self._sockets:
                raise ValueError(
                    f"{sock!r} is already registered in this registry as "
                    f"{self._name_locked(sock)!r}"
                )
            label = name if name is not None else _open_sockets.default_name(sock)
            for other in self._targets_locked():
                if other[0] == label and other[2] is not sock:
                    raise ValueError(
                        f"an open socket of this registry is already named {label!r}"
                    )
            self._sockets[sock] = _Entry(name, peers)
        return label

    def remove(self, sock: Observed) -> bool:
        """Stop exporting ``sock`` as registered by :meth:`add`; True if it was."""
        with self._lock:
            return self._sockets.pop(sock, None) is not None

    def add_every_socket(self, *, peers: bool = False) -> None:
        """Export every socket the process opens, now and later (idempotent)."""
        with self._lock:
            self._every = True
            self._every_peers = peers

    def _name_locked(self, sock: Observed) -> str:
        entry = self._sockets.get(sock)
        if entry is not None and entry.name is not None:
            return entry.name
        return _open_sockets.default_name(sock)

    def _targets_locked(self) -> list[tuple[str, bool, Observed]]:
        targets = [
            (self._name_locked(sock), entry.peers, sock)
            for sock, entry in list(self._sockets.items())
            if not sock.closed
        ]
        if self._every:
            for sock in _open_sockets.open_sockets():
                if sock not in self._sockets and not sock.closed:
                    targets.append((_open_sockets.default_name(sock), self._every_peers, sock))
        targets.sort(key=lambda t: t[0])
        return targets

    def describe(self) -> Iterable[Metric]:
        """The metric families, without samples (what the registry checks for clashes).

        Returns:
            One empty family per metric of :data:`SOCKET_METRICS` and :data:`PEER_METRICS`.
        """
        return [_family(row, _BASE_LABELS) for row in SOCKET_METRICS] + [
            _family(row, (*_BASE_LABELS, "peer")) for row in PEER_METRICS
        ]

    def collect(self) -> Iterator[Metric]:
        """Take each registered socket's snapshot and yield the metric families.

        Yields:
            Every family of :data:`SOCKET_METRICS`, then those of :data:`PEER_METRICS`
            that have samples.
        """
        with self._lock:
            targets = self._targets_locked()
        snapshots = take([sock for _, _, sock in targets])
        return self.families(
            (name, peers, stats)
            for (name, peers, _), stats in zip(targets, snapshots, strict=True)
            if stats is not None
        )

    @staticmethod
    def families(
        snapshots: Iterable[tuple[str, bool, SocketStats]],
    ) -> Iterator[Metric]:
        """The metric families of some named snapshots.

        Args:
            snapshots: ``(name, with_peers, stats)`` for each socket.

        Yields:
            Every family of :data:`SOCKET_METRICS`, then those of :data:`PEER_METRICS`
            that have samples.
        """
        socket_families = [(row, _family(row, _BASE_LABELS)) for row in SOCKET_METRICS]
        peer_families = [(row, _family(row, (*_BASE_LABELS, "peer"))) for row in PEER_METRICS]
        used: set[str] = set()
        for name, with_peers, stats in snapshots:
            label, n = name, 1
            while label in used:  # never two sockets' series under one label
                n += 1
                label = f"{name}#{n}"
            used.add(label)
            labels = [label, stats.socket_type]
            for row, family in socket_families:
                _add(family, row, labels, stats)
            if with_peers:
                for peer, peer_label in zip(stats.peers, peer_names(stats.peers), strict=True):
                    peer_labels = [*labels, peer_label]
                    for peer_row, peer_family in peer_families:
                        _add(peer_family, peer_row, peer_labels, peer)
        for _, family in socket_families:
            yield family  # even empty: the page says it serves trizmq metrics
        for _, family in peer_families:
            if family.samples:
                yield family


_collectors: weakref.WeakKeyDictionary[CollectorRegistry, SocketCollector] = (
    weakref.WeakKeyDictionary()
)
_collectors_lock = threading.Lock()


def collector(registry: CollectorRegistry | None = None) -> SocketCollector:
    """The :class:`SocketCollector` of ``registry`` (default: ``prometheus_client.REGISTRY``),
    made and registered on first use.

    Args:
        registry: a ``prometheus_client.CollectorRegistry``.

    Returns:
        The registry's collector of trizmq sockets.
    """
    target = REGISTRY if registry is None else registry
    with _collectors_lock:
        found = _collectors.get(target)
        if found is None:
            found = SocketCollector()
            target.register(found)
            _collectors[target] = found
        return found


def register(
    sock: Observed,
    registry: CollectorRegistry | None = None,
    name: str | None = None,
    *,
    peers: bool = False,
) -> str:
    """Export a socket's counters to Prometheus, read at each scrape.

    Args:
        sock: a trizmq socket, open or not yet entered (its series appear once it is
            entered, and disappear once it is closed).
        registry: the ``prometheus_client`` registry; default its global ``REGISTRY``.
        name: the ``socket`` label of its series; default ``<type>-<n>`` (``pub-1``).
        peers: also export one series per peer (``trizmq_peer_*``, labelled ``peer``).

    Returns:
        The ``socket`` label of its series.

    Raises:
        ValueError: the socket is closed or already registered in this registry, or
            an open socket of the registry already has that name.
    """
    return collector(registry).add(sock, name, peers=peers)


def unregister(sock: Observed, registry: CollectorRegistry | None = None) -> bool:
    """Stop exporting a socket registered with :func:`register`.

    Args:
        sock: the socket.
        registry: the registry it was registered in (default ``REGISTRY``).

    Returns:
        True if it was registered there (under :func:`register_all` it stays
        exported, by its default name).
    """
    return collector(registry).remove(sock)


def register_all(registry: CollectorRegistry | None = None, *, peers: bool = False) -> None:
    """Export every socket of the process, those open now and those opened later.

    Idempotent. A socket registered by :func:`register` in the same registry keeps
    the name given there; the others are named ``<type>-<n>``.

    Args:
        registry: the ``prometheus_client`` registry; default its global ``REGISTRY``.
        peers: also export one series per peer of the sockets it adds.
    """
    collector(registry).add_every_socket(peers=peers)


class _HTTPServer(Protocol):
    """What :class:`MetricsServer` uses of the server ``start_http_server`` runs."""

    @property
    def server_port(self) -> int: ...

    def shutdown(self) -> None: ...

    def server_close(self) -> None: ...


class MetricsServer:
    """A running metrics endpoint (:func:`serve`): its address, and :meth:`close`.

    Attributes:
        host: the address it listens on.
        port: the port it listens on (the one the system chose for port 0).
        url: ``http://host:port/metrics``.
    """

    def __init__(self, httpd: _HTTPServer, thread: threading.Thread, host: str) -> None:
        self._httpd = httpd
        self._thread = thread
        self.host = host
        self.port: int = int(httpd.server_port)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/metrics"
        self._closed = False

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<trizmq.metrics.MetricsServer {self.url}{' closed' if self._closed else ''}>"


def serve(
    port: int, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> MetricsServer:
    """Serve ``registry``'s metrics over HTTP from a daemon thread, for Prometheus to scrape.

    Args:
        port: the tcp port; 0 lets the system choose (read it from ``.port``).
        addr: the address to listen on; default loopback only.
        registry: the registry to serve; default ``prometheus_client.REGISTRY``.

    Returns:
        The running server; ``close()`` it (or use it as a context manager).

    Raises:
        OSError: the port is in use (or the address is not this host's); the
            message names the address and port.
    """
    target = REGISTRY if registry is None else registry
    try:
        httpd, thread = start_http_server(port, addr=addr, registry=target)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OSError(exc.errno, f"cannot serve metrics on {addr}:{port}: {reason}") from exc
    return MetricsServer(httpd, thread, addr)
