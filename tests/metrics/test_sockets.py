"""The exporters on real sockets: what ``stats()`` counts reaches Prometheus and
OpenTelemetry, a closed socket leaves, and a scrape from the HTTP thread reads the
sockets in their own run."""

from __future__ import annotations

import urllib.request

import trio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import trizmq
import trizmq.metrics

COUNT = 10


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


async def exchange(push: trizmq.Push, pull: trizmq.Pull) -> None:
    for i in range(COUNT):
        await push.send(b"job %d" % i)
    for _ in range(COUNT):
        await pull.recv()


async def test_a_push_and_a_pull_over_tcp() -> None:
    registry = CollectorRegistry()
    with trio.fail_after(60):
        async with trizmq.Pull(linger=0) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            async with trizmq.Push(linger=0, connect=[endpoint]) as push:
                trizmq.metrics.register(push, registry, name="push")
                trizmq.metrics.register(pull, registry, name="pull", peers=True)
                await exchange(push, pull)
                text = generate_latest(registry).decode()
                payload = float(sum(len(b"job %d" % i) for i in range(COUNT)))
                push_labels = {"socket": "push", "type": "PUSH"}
                pull_labels = {"socket": "pull", "type": "PULL"}
                assert value(text, "trizmq_messages_sent_total", **push_labels) == COUNT
                assert value(text, "trizmq_bytes_sent_total", **push_labels) == payload
                assert value(text, "trizmq_messages_received_total", **pull_labels) == COUNT
                assert value(text, "trizmq_bytes_received_total", **pull_labels) == payload
                assert value(text, "trizmq_peers", **push_labels) == 1
                assert value(text, "trizmq_peers", **pull_labels) == 1
                assert (
                    value(text, "trizmq_queue_depth", direction="in", **pull_labels) == 0
                )
                assert (
                    value(text, "trizmq_connection_events_total", event="accepted", **pull_labels)
                    == 1
                )
                assert (
                    value(text, "trizmq_connection_events_total", event="connected", **push_labels)
                    == 1
                )
                peer_received = [
                    v
                    for (name, labels), v in samples(text).items()
                    if name == "trizmq_peer_messages_received_total"
                ]
                assert peer_received == [COUNT]
            # the PUSH is closed: its series are gone from the next scrape
            text = generate_latest(registry).decode()
            assert 'socket="push"' not in text
            assert 'socket="pull"' in text
    assert "trizmq_peers{" not in generate_latest(registry).decode()


async def test_register_all_names_by_type_and_number() -> None:
    registry = CollectorRegistry()
    trizmq.metrics.register_all(registry)
    with trio.fail_after(60):
        async with (
            trizmq.Pull(linger=0, bind="inproc://metrics-all") as pull,
            trizmq.Push(linger=0, connect="inproc://metrics-all") as push,
        ):
            await exchange(push, pull)
            push_name = trizmq.metrics.register(push, registry, name="jobs")
            text = generate_latest(registry).decode()
            assert push_name == "jobs"
            assert value(text, "trizmq_messages_sent_total", socket="jobs", type="PUSH") == COUNT
            received = {
                dict(labels)["socket"]: v
                for (name, labels), v in samples(text).items()
                if name == "trizmq_messages_received_total" and ("type", "PULL") in labels
            }
            assert COUNT in received.values()
            assert all(n.startswith("pull-") for n in received)
            # the explicit name replaces the default one, never beside it
            assert text.count('type="PUSH"') == text.count('socket="jobs"')


async def test_a_scrape_over_http_reads_the_sockets_in_their_run() -> None:
    registry = CollectorRegistry()
    with trio.fail_after(60):
        async with (
            trizmq.Pull(linger=0, bind="inproc://metrics-http") as pull,
            trizmq.Push(linger=0, connect="inproc://metrics-http") as push,
        ):
            trizmq.metrics.register(push, registry, name="push")
            with trizmq.metrics.serve(0, registry=registry) as server:
                await exchange(push, pull)

                def scrape() -> str:
                    with urllib.request.urlopen(server.url, timeout=30) as response:
                        return bytes(response.read()).decode()

                # the trio run goes on meanwhile, and answers the server's thread
                text = await trio.to_thread.run_sync(scrape)
                sent = value(text, "trizmq_messages_sent_total", socket="push", type="PUSH")
                assert sent == COUNT


async def test_opentelemetry_on_real_sockets() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    try:
        with trio.fail_after(60):
            async with (
                trizmq.Pull(linger=0, bind="inproc://metrics-otel") as pull,
                trizmq.Push(linger=0, connect="inproc://metrics-otel") as push,
            ):
                trizmq.metrics.instrument_otel(provider, {"push": push, "pull": pull})
                await exchange(push, pull)
                data = reader.get_metrics_data()
                assert data is not None
                found = {
                    (m.name, (p.attributes or {})["trizmq.socket.name"]): p.value  # type: ignore[union-attr]
                    for r in data.resource_metrics
                    for s in r.scope_metrics
                    for m in s.metrics
                    for p in m.data.data_points
                    if "trizmq.socket.name" in (p.attributes or {})
                }
                assert found[("messaging.client.sent.messages", "push")] == COUNT
                assert found[("messaging.client.consumed.messages", "pull")] == COUNT
                assert found[("trizmq.peers", "pull")] == 1
    finally:
        provider.shutdown()
