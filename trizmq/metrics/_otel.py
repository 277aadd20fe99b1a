"""Sockets' counters as OpenTelemetry observable instruments (``opentelemetry-api``).

Strategy: as for Prometheus, nothing happens per message. :func:`instrument_otel`
creates one observable instrument per row of :data:`INSTRUMENTS` (made from the
figures it shares with Prometheus, ``_figures``); when the SDK
collects, the first instrument's callback takes every socket's snapshot and the
others read the same snapshots, so one collection costs one ``stats()`` per socket.

Rules:

* Names follow OpenTelemetry's messaging semantic conventions where they fit: the
  messages sent and received are ``messaging.client.sent.messages`` and
  ``messaging.client.consumed.messages`` with ``messaging.operation.name`` /
  ``messaging.operation.type`` ``send`` / ``receive``; everything ZeroMQ-specific
  is under ``trizmq.``. A handshake's failure cause is ``error.type``.
* Every observation carries ``messaging.system="zeromq"``, ``trizmq.socket.name``
  (the name given, or ``<type>-<n>``) and ``trizmq.socket.type``.
* Closed sockets are not observed; :meth:`OtelInstrumentation.close` stops the
  observations (instruments cannot be removed from a meter).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from functools import partial

import attrs
from opentelemetry import metrics as otel

from .. import __version__, _open_sockets
from .._open_sockets import Observed
from .._stats import SocketStats
from ._figures import FIGURES, Value
from ._snapshot import take

__all__ = ["INSTRUMENTS", "InstrumentRow", "OtelInstrumentation", "instrument_otel"]

#: a snapshot older than this is taken again even if the first instrument was not observed
_STALE = 1.0


@attrs.frozen
class InstrumentRow:
    """One instrument: its name, kind, unit and how to read it from a snapshot."""

    name: str
    kind: str  # "counter" (monotonic) or "gauge"
    unit: str
    description: str
    value: Callable[[SocketStats], Value]
    #: the attribute that tells the values of a mapping apart, or None for one value
    key: str | None = None
    attributes: Mapping[str, str] = attrs.field(factory=dict)


#: the attributes of the messaging operation a figure counts
_OPERATIONS: dict[str, Mapping[str, str]] = {
    "send": {"messaging.operation.name": "send", "messaging.operation.type": "send"},
    "receive": {"messaging.operation.name": "receive", "messaging.operation.type": "receive"},
    "": {},
}
#: the figures' instrument names, as their descriptions name one another
_NAMES = {figure.name: figure.otel for figure in FIGURES}

#: the instruments, in the order the SDK observes them: the figures'
INSTRUMENTS: tuple[InstrumentRow, ...] = tuple(
    InstrumentRow(
        figure.otel,
        figure.kind,
        figure.unit,
        figure.describe(_NAMES),
        figure.value,
        key=None if figure.by is None else figure.by[1],
        attributes=_OPERATIONS[figure.operation],
    )
    for figure in FIGURES
)


class OtelInstrumentation:
    """The instruments :func:`instrument_otel` made; :meth:`close` stops their observations."""

    def __init__(
        self,
        meter: otel.Meter,
        sockets: Mapping[str, Observed] | Iterable[Observed] | None,
    ) -> None:
        self._lock = threading.Lock()
        self._closed = False
        # weakly: instrumenting a socket does not keep it alive
        self._named: weakref.WeakKeyDictionary[Observed, str | None] | None = None
        if sockets is not None:
            self._named = weakref.WeakKeyDictionary()
            if isinstance(sockets, Mapping):
                for name, sock in sockets.items():
                    self._named[sock] = name
            else:
                for sock in sockets:
                    self._named[sock] = None
        self._snapshots: list[tuple[dict[str, str], SocketStats]] = []
        self._taken = float("-inf")
        self.instruments: list[otel.ObservableCounter | otel.ObservableGauge] = []
        for index, row in enumerate(INSTRUMENTS):
            callback = partial(self._observe, row, index == 0)
            create = (
                meter.create_observable_counter
                if row.kind == "counter"
                else meter.create_observable_gauge
            )
            self.instruments.append(
                create(row.name, callbacks=[callback], unit=row.unit, description=row.description)
            )

    def close(self) -> None:
        """Stop observing: the instruments report nothing from now on (idempotent)."""
        self._closed = True

    def _targets(self) -> list[tuple[str, Observed]]:
        socks: list[tuple[Observed, str | None]] = (
            [(s, None) for s in _open_sockets.open_sockets()]
            if self._named is None
            else list(self._named.items())
        )
        targets = [
            (name if name is not None else _open_sockets.default_name(s), s)
            for s, name in socks
            if not s.closed
        ]
        targets.sort(key=lambda t: t[0])
        return targets

    def _refresh(self) -> list[tuple[dict[str, str], SocketStats]]:
        targets = self._targets()
        taken = take([sock for _, sock in targets])
        snapshots = [
            (
                {
                    "messaging.system": "zeromq",
                    "trizmq.socket.name": name,
                    "trizmq.socket.type": stats.socket_type,
                },
                stats,
            )
            for (name, _), stats in zip(targets, taken, strict=True)
            if stats is not None
        ]
        self._snapshots, self._taken = snapshots, time.monotonic()
        return snapshots

    def _observe(
        self, row: InstrumentRow, first: bool, options: otel.CallbackOptions
    ) -> list[otel.Observation]:
        if self._closed:
            return []
        with self._lock:
            if first or time.monotonic() - self._taken > _STALE:
                snapshots = self._refresh()
            else:
                snapshots = self._snapshots
        out: list[otel.Observation] = []
        for attributes, stats in snapshots:
            value = row.value(stats)
            if value is None:
                continue
            base = {**attributes, **row.attributes}
            if isinstance(value, Mapping):
                assert row.key is not None
                for key, number in value.items():
                    out.append(otel.Observation(number, {**base, row.key: key}))
            else:
                out.append(otel.Observation(value, base))
        return out


def instrument_otel(
    meter_provider: otel.MeterProvider | None = None,
    sockets: Mapping[str, Observed] | Iterable[Observed] | None = None,
) -> OtelInstrumentation:
    """Observe sockets' counters with OpenTelemetry instruments, read at each collection.

    Args:
        meter_provider: the provider to make the ``trizmq`` meter with; default the
            global one (``opentelemetry.metrics.get_meter_provider()``).
        sockets: the sockets to observe, as a mapping from name to socket or as
            sockets (named ``<type>-<n>``); default every socket of the process, those
            opened later included. Held weakly; closed ones are not observed.

    Returns:
        The instrumentation; ``close()`` stops its observations.
    """
    provider = meter_provider if meter_provider is not None else otel.get_meter_provider()
    meter = provider.get_meter("trizmq", __version__)
    return OtelInstrumentation(meter, sockets)
