"""``trizmq top URL``: a live view of a process's sockets, read from its metrics endpoint.

Strategy: the command knows nothing of the process but what it serves (its
``trizmq.metrics`` endpoint, Prometheus's text format): every ``--interval``
seconds it reads the page, parses it (``prometheus_client.parser``), folds the
``trizmq_*`` series into one :class:`SocketView` per socket and draws two tables:
traffic (rates between the last two reads, totals, queues, drops by reason, RTT)
and connections (events and failures by cause).

Rules:

* ``--once`` reads twice, ``--interval`` apart (the rates need two reads), prints
  one snapshot and exits 0.
* An address that does not answer, answers with an HTTP error, or serves no
  ``trizmq_`` metrics is a one-line error (status 1), at the first read as later.
"""

from __future__ import annotations

import datetime
import io
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from functools import partial

import attrs
import click
import trio
from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ._common import (
    CliError,
    byte_size,
    needs_prometheus_client,
    plural,
    run,
    seconds_option,
)

__all__ = ["SocketView", "fetch", "normalise_url", "parse", "render", "top"]

#: metric family (without ``trizmq_``) -> the SocketView mapping it fills, by its label
_MAPPINGS = {
    "messages_dropped": ("drops", "reason"),
    "queue_depth": ("queued", "direction"),
    "queue_depth_peak": ("peak", "direction"),
    "connection_events": ("connections", "event"),
    "handshake_failures": ("failures", "cause"),
    "disconnects": ("disconnects", "cause"),
}
#: metric family (without ``trizmq_``) -> the SocketView figure it sets
_FIGURES = {
    "messages_sent": "sent",
    "messages_received": "received",
    "bytes_sent": "bytes_sent",
    "bytes_received": "bytes_received",
    "wire_bytes_sent": "wire_bytes_sent",
    "wire_bytes_received": "wire_bytes_received",
    "peers": "peers",
    "subscriptions": "subscriptions",
    "rtt_seconds": "rtt",
    "rtt_max_seconds": "rtt_max",
}


@attrs.define
class SocketView:
    """One socket's figures as its metrics endpoint served them."""

    name: str
    type: str
    figures: dict[str, float] = attrs.field(factory=dict)
    drops: dict[str, float] = attrs.field(factory=dict)
    queued: dict[str, float] = attrs.field(factory=dict)
    peak: dict[str, float] = attrs.field(factory=dict)
    connections: dict[str, float] = attrs.field(factory=dict)
    failures: dict[str, float] = attrs.field(factory=dict)
    disconnects: dict[str, float] = attrs.field(factory=dict)


def normalise_url(text: str) -> str:
    """``host:port`` → ``http://host:port/metrics``; a bare ``http://host:port`` gets ``/metrics``.

    Raises:
        CliError: for a scheme other than http(s) (status 2).
    """
    url = text if "://" in text else f"http://{text}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(
            f"expected a metrics URL such as http://127.0.0.1:9100/metrics, not {text!r}", code=2
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path="/metrics")
    return urllib.parse.urlunsplit(parts)


def fetch(url: str, timeout: float) -> str:
    """The page at ``url``, or a :class:`CliError` saying in one line why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body: bytes = response.read()
    except urllib.error.HTTPError as exc:
        raise CliError(f"{url} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, OSError) and reason.strerror:
            reason = reason.strerror
        raise CliError(f"{url} does not answer: {reason}") from None
    except TimeoutError:
        raise CliError(f"{url} does not answer within {timeout:g} s") from None
    except OSError as exc:  # a reset connection, ...
        raise CliError(f"{url} does not answer: {exc.strerror or exc}") from None
    return body.decode("utf-8", errors="replace")


def parse(text: str, url: str = "the endpoint") -> dict[tuple[str, str], SocketView]:
    """Each socket's figures in a page of Prometheus's text format, by (name, type).

    Raises:
        CliError: the page holds no ``trizmq_`` metric family (or is not that format).
    """
    from prometheus_client.parser import text_string_to_metric_families

    views: dict[tuple[str, str], SocketView] = {}
    found = False
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError:
        families = []
    for family in families:
        if not family.name.startswith("trizmq_"):
            continue
        found = True
        short = family.name[len("trizmq_") :]
        if short.startswith("peer_"):
            continue  # the per-peer series: the socket's own sum them up
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            labels = sample.labels
            key = (labels.get("socket", "?"), labels.get("type", "?"))
            view = views.get(key)
            if view is None:
                view = views[key] = SocketView(*key)
            if short in _FIGURES:
                view.figures[_FIGURES[short]] = sample.value
            elif short in _MAPPINGS:
                attribute, label = _MAPPINGS[short]
                getattr(view, attribute)[labels.get(label, "?")] = sample.value
    if not found:
        raise CliError(f"{url} serves no trizmq metrics (no trizmq_* series)")
    return views


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.2f} s"


def _nonzero(mapping: Mapping[str, float]) -> str:
    parts = [f"{key} {value:,.0f}" for key, value in mapping.items() if value]
    return ", ".join(parts) if parts else "0"


def _rate(
    now: SocketView, before: SocketView | None, figure: str, dt: float | None
) -> float | None:
    if before is None or dt is None or dt <= 0:
        return None
    delta = now.figures.get(figure, 0.0) - before.figures.get(figure, 0.0)
    # a counter that went back (a restarted process): count from zero
    return (delta if delta >= 0 else now.figures.get(figure, 0.0)) / dt


def _saved(figures: Mapping[str, float]) -> str:
    """What compression saved, out and in, as a share of the payload bytes ("-" where
    the endpoint serves no wire figures, or nothing was sent or received)."""
    shares = []
    for way in ("sent", "received"):
        payload, wire = figures.get(f"bytes_{way}"), figures.get(f"wire_bytes_{way}")
        if payload is None or wire is None or not payload:
            shares.append("-")
        else:
            shares.append(f"{100 * (payload - wire) / payload:.0f}%")
    return " / ".join(shares)


def render(
    url: str,
    views: Mapping[tuple[str, str], SocketView],
    before: Mapping[tuple[str, str], SocketView] | None = None,
    dt: float | None = None,
) -> Group:
    """The two tables of a read (``before``/``dt``: the previous read, for the rates)."""
    when = datetime.datetime.now().strftime("%H:%M:%S")
    title = Text(f"trizmq top  {url}  {plural(len(views), 'socket')}  {when}", style="bold")
    traffic = Table(box=box.SIMPLE, title="traffic", title_justify="left", show_edge=False)
    for column in ("socket", "type", "peers", "sent/s", "recv/s", "sent", "received",
                   "bytes/s out", "bytes/s in", "wire saved", "queue out (peak)",
                   "queue in (peak)", "drops", "rtt mean/max"):
        traffic.add_column(column, justify="left" if column in ("socket", "type", "drops")
                           else "right", no_wrap=True)
    links = Table(box=box.SIMPLE, title="connections", title_justify="left", show_edge=False)
    for column in ("socket", "accepted", "connected", "reconnects", "disconnects",
                   "handshake failures", "heartbeat timeouts"):
        links.add_column(column, justify="left" if column in ("socket", "disconnects",
                                                              "handshake failures")
                         else "right", no_wrap=True)
    for key in sorted(views):
        view = views[key]
        old = before.get(key) if before is not None else None
        rates = [_rate(view, old, f, dt) for f in ("sent", "received", "bytes_sent",
                                                    "bytes_received")]
        f = view.figures
        traffic.add_row(
            view.name,
            view.type,
            _count(f.get("peers")),
            _count(rates[0]),
            _count(rates[1]),
            _count(f.get("sent")),
            _count(f.get("received")),
            "-" if rates[2] is None else byte_size(rates[2]),
            "-" if rates[3] is None else byte_size(rates[3]),
            _saved(f),
            f"{_count(view.queued.get('out'))} ({_count(view.peak.get('out'))})",
            f"{_count(view.queued.get('in'))} ({_count(view.peak.get('in'))})",
            _nonzero(view.drops),
            f"{_seconds(f.get('rtt'))} / {_seconds(f.get('rtt_max'))}",
        )
        c = view.connections
        links.add_row(
            view.name,
            _count(c.get("accepted")),
            _count(c.get("connected")),
            _count(c.get("reconnects")),
            _nonzero(view.disconnects) if view.disconnects else _count(c.get("disconnects")),
            _nonzero(view.failures) if view.failures else _count(c.get("handshake_failures")),
            _count(c.get("heartbeat_timeouts")),
        )
    if not views:
        return Group(title, Text("no open sockets"))
    return Group(title, traffic, Text(""), links)


async def _read(url: str, timeout: float) -> dict[tuple[str, str], SocketView]:
    text = await trio.to_thread.run_sync(fetch, url, timeout, abandon_on_cancel=True)
    return parse(text, url)


async def _top(url: str, interval: float, once: bool, timeout: float) -> int:
    before = await _read(url, timeout)
    taken = time.monotonic()
    if once:
        await trio.sleep(interval)
        views = await _read(url, timeout)
        # plain text, trailing blanks trimmed: a snapshot is for logs, pipes and diffs
        width = shutil.get_terminal_size((240, 24)).columns if sys.stdout.isatty() else 240
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, color_system=None, highlight=False)
        console.print(render(url, views, before, time.monotonic() - taken))
        lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
        sys.stdout.write("\n".join(lines).strip("\n") + "\n")
        sys.stdout.flush()
        return 0
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 240)
    with Live(render(url, before), console=console, auto_refresh=False) as live:
        while True:
            await trio.sleep(interval)
            views = await _read(url, timeout)
            now = time.monotonic()
            live.update(render(url, views, before, now - taken), refresh=True)
            before, taken = views, now


@click.command()
@seconds_option(
    "--interval",
    minimum=0.05,
    default=1.0,
    help="Seconds between reads (the rates are taken over it).",
)
@click.option(
    "--once", is_flag=True, help="Print one snapshot (two reads INTERVAL apart) and exit."
)
@seconds_option(
    "--timeout",
    minimum=0.1,
    default=5.0,
    help="How long one read may take before the endpoint counts as not answering.",
)
@click.argument("url")
def top(url: str, interval: float, once: bool, timeout: float) -> int:
    """Show a process's sockets live, read from its metrics endpoint at URL.

    URL is what trizmq.metrics.serve() (or trizmq proxy --metrics) serves:
    http://HOST:PORT/metrics, or just HOST:PORT.

    \b
    Examples:
      trizmq top 127.0.0.1:9100
      trizmq top http://10.0.0.5:9100/metrics --interval 2
      trizmq top 127.0.0.1:9100 --once
    """
    target = normalise_url(url)
    needs_prometheus_client("trizmq top")
    return run(partial(_top, target, interval, once, timeout))
