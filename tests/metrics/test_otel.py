"""The OpenTelemetry instruments (``trizmq.metrics.instrument_otel``), read with the SDK's
in-memory reader."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import trizmq.metrics

from .fakes import PUB_STATS, FakeSocket


@pytest.fixture
def reader() -> Iterator[tuple[InMemoryMetricReader, MeterProvider]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield reader, provider
    provider.shutdown()


def points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict[str, Any], float]]]:
    """Every data point of the last collection, by instrument name."""
    data = reader.get_metrics_data()
    found: dict[str, list[tuple[dict[str, Any], float]]] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "trizmq"
            for metric in scope.metrics:
                found[metric.name] = [
                    (dict(p.attributes or {}), p.value)  # type: ignore[union-attr]
                    for p in metric.data.data_points
                ]
    return found


BASE = {
    "messaging.system": "zeromq",
    "trizmq.socket.name": "ticks",
    "trizmq.socket.type": "PUB",
}


def test_the_messaging_conventions(reader: tuple[InMemoryMetricReader, MeterProvider]) -> None:
    memory, provider = reader
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.instrument_otel(provider, {"ticks": sock})
    got = points(memory)
    send = {**BASE, "messaging.operation.name": "send", "messaging.operation.type": "send"}
    receive = {
        **BASE,
        "messaging.operation.name": "receive",
        "messaging.operation.type": "receive",
    }
    assert got["messaging.client.sent.messages"] == [(send, 120)]
    assert got["messaging.client.consumed.messages"] == [(receive, 0)]
    assert got["trizmq.bytes.sent"] == [(send, 4800)]
    assert got["trizmq.bytes.received"] == [(receive, 0)]


def test_every_figure(reader: tuple[InMemoryMetricReader, MeterProvider]) -> None:
    memory, provider = reader
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.instrument_otel(provider, {"ticks": sock})
    got = points(memory)

    def by(name: str, key: str) -> dict[str, float]:
        return {attributes[key]: value for attributes, value in got[name]}

    assert by("trizmq.messages.dropped", "trizmq.drop.reason") == dict(PUB_STATS.drops)
    assert got["trizmq.messages.filtered"] == [(BASE, 0)]
    assert by("trizmq.queue.depth", "trizmq.queue.direction") == {"out": 5, "in": 0}
    assert by("trizmq.queue.depth.peak", "trizmq.queue.direction") == {"out": 64, "in": 0}
    assert got["trizmq.peers"] == [(BASE, 2)]
    assert by("trizmq.connection.events", "trizmq.connection.event") == dict(
        PUB_STATS.connections
    )
    assert by("trizmq.disconnects", "trizmq.disconnect.cause")["heartbeat_timeout"] == 1
    failures = by("trizmq.handshake.failures", "error.type")
    assert failures["mechanism"] == 1 and failures["zap"] == 1 and "zap_400" not in failures
    assert by("trizmq.zap.refusals", "trizmq.zap.status") == {"400": 1}
    assert got["trizmq.subscriptions"] == [(BASE, 3)]
    assert got["trizmq.subscriptions.refused"] == [(BASE, 4)]
    assert got["trizmq.rtt"] == [(BASE, pytest.approx(0.002))]
    assert got["trizmq.rtt.max"] == [(BASE, pytest.approx(0.004))]
    units = {
        m.name: m.unit
        for r in memory.get_metrics_data().resource_metrics  # type: ignore[union-attr]
        for s in r.scope_metrics
        for m in s.metrics
    }
    assert units["trizmq.rtt"] == "s" and units["trizmq.bytes.sent"] == "By"
    assert units["messaging.client.sent.messages"] == "{message}"


def test_one_snapshot_per_collection(reader: tuple[InMemoryMetricReader, MeterProvider]) -> None:
    memory, provider = reader
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.instrument_otel(provider, [sock])
    points(memory)
    assert sock.calls == 1
    points(memory)
    assert sock.calls == 2


def test_counters_follow_the_socket(reader: tuple[InMemoryMetricReader, MeterProvider]) -> None:
    memory, provider = reader
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.instrument_otel(provider, {"ticks": sock})
    points(memory)
    sock.snapshot = attrs.evolve(PUB_STATS, messages_sent=150)
    assert points(memory)["messaging.client.sent.messages"][0][1] == 150


def test_closed_sockets_and_a_closed_instrumentation_report_nothing(
    reader: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    memory, provider = reader
    open_one, closed_one = FakeSocket(PUB_STATS), FakeSocket(PUB_STATS, closed=True)
    handle = trizmq.metrics.instrument_otel(provider, {"open": open_one, "shut": closed_one})
    names = {a["trizmq.socket.name"] for a, _ in points(memory)["trizmq.peers"]}
    assert names == {"open"}
    handle.close()
    assert not points(memory).get("trizmq.peers")


def test_default_names_for_a_list(reader: tuple[InMemoryMetricReader, MeterProvider]) -> None:
    memory, provider = reader
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.instrument_otel(provider, [sock])
    ((attributes, _),) = points(memory)["trizmq.peers"]
    assert attributes["trizmq.socket.name"].startswith("pub-")


def test_each_instrument_is_a_socket_metric_of_the_same_figure() -> None:
    # both exporters' tables are made from one row per figure: same order, kind, help
    pairs = zip(trizmq.metrics.SOCKET_METRICS, trizmq.metrics.INSTRUMENTS, strict=True)
    for metric, instrument in pairs:
        assert metric.kind == instrument.kind, metric.name
        assert (metric.label is None) == (instrument.key is None), metric.name
        assert (metric.unit == "seconds") == (instrument.unit == "s"), metric.name
    described = {row.name: row.description for row in trizmq.metrics.INSTRUMENTS}
    # a description naming another figure names it as this exporter does
    assert described["trizmq.queue.depth.peak"] == (
        "The most trizmq.queue.depth has been since the socket opened."
    )
    assert described["messaging.client.sent.messages"] == (
        "Whole messages handed to a peer's queue (a message that reaches K peers counts K)."
    )
