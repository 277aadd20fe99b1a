"""``trizmq proxy``: a forwarder, queue or streamer device with live counters.

Rules:

* ``--mode forwarder`` is XSUB (frontend) / XPUB (backend), ``queue`` is ROUTER /
  DEALER, ``streamer`` is PULL / PUSH; the forwarding is :func:`trizmq.proxy_steerable`.
* FRONTEND and BACKEND are endpoints; a side binds unless its endpoint is written
  ``connect:tcp://...`` (``bind:tcp://...`` is accepted too).
* Counters come from the proxy's own ``STATISTICS`` command over an inproc control
  socket: messages and bytes per direction, refreshed every ``--interval`` seconds,
  as a live table on a terminal, else as one line per interval on stdout.
* ``--metrics HOST:PORT`` serves the frontend's, backend's (and capture's) metrics
  (``trizmq.metrics``, sockets named ``frontend``, ``backend``, ``capture``) in a
  registry of their own, for Prometheus or ``trizmq top``; the URL is said on stderr.
"""

from __future__ import annotations

import struct
import sys
import time
from functools import partial
from typing import TYPE_CHECKING

import attrs
import click
import trio
from rich.console import Console
from rich.live import Live
from rich.table import Table

import trizmq

from ._common import (
    CliError,
    EndpointSpec,
    attach,
    byte_size,
    make_socket,
    needs_prometheus_client,
    parse_side,
    run,
    seconds_option,
)

if TYPE_CHECKING:
    from trizmq.metrics import MetricsServer

__all__ = ["MODES", "parse_metrics_address", "proxy"]

#: mode -> (frontend type, backend type)
MODES = {
    "forwarder": ("xsub", "xpub"),
    "queue": ("router", "dealer"),
    "streamer": ("pull", "push"),
}

_UINT64 = struct.Struct("=Q")


def parse_metrics_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``PORT``: loopback; ``*:PORT``: every address) for ``--metrics``."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", text
    host = host.strip("[]")
    host = "0.0.0.0" if host == "*" else host or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise CliError(f"--metrics takes HOST:PORT (a port 0-65535), not {text!r}", code=2)
    return host, port


@attrs.define
class Counters:
    """One direction's totals."""

    messages: int = 0
    bytes: int = 0


def _line(down: Counters, up: Counters) -> str:
    return (
        f"frontend->backend {down.messages} msgs {down.bytes} bytes | "
        f"backend->frontend {up.messages} msgs {up.bytes} bytes"
    )


def _table(
    mode: str, down: Counters, up: Counters, rates: tuple[float, float, float, float]
) -> Table:
    table = Table(title=f"trizmq proxy ({mode})", title_justify="left")
    for column in ("direction", "messages", "bytes", "msg/s", "bytes/s"):
        table.add_column(column, justify="left" if column == "direction" else "right")
    for name, c, (mr, br) in (
        ("frontend → backend", down, rates[:2]),
        ("backend → frontend", up, rates[2:]),
    ):
        table.add_row(
            name, f"{c.messages:,}", byte_size(c.bytes), f"{mr:,.0f}", byte_size(br) + "/s"
        )
    return table


async def _statistics(control: trizmq.Socket) -> tuple[Counters, Counters]:
    await control.send(b"STATISTICS")
    frames = await control.recv_multipart()
    v = [_UINT64.unpack(f)[0] for f in frames]
    # frontend in = frontend->backend; backend in = backend->frontend
    return Counters(v[0], v[1]), Counters(v[4], v[5])


async def _report(control: trizmq.Socket, mode: str, interval: float, live: bool) -> None:
    console = Console()
    last = (Counters(), Counters())
    last_time = time.monotonic()

    def rates(now_pair: tuple[Counters, Counters], dt: float) -> tuple[float, float, float, float]:
        d, u = now_pair
        ld, lu = last
        dt = max(dt, 1e-9)
        return (
            (d.messages - ld.messages) / dt,
            (d.bytes - ld.bytes) / dt,
            (u.messages - lu.messages) / dt,
            (u.bytes - lu.bytes) / dt,
        )

    if live:
        with Live(
            _table(mode, *last, (0, 0, 0, 0)), console=console, auto_refresh=False
        ) as display:
            while True:
                await trio.sleep(interval)
                now = await _statistics(control)
                t = time.monotonic()
                display.update(_table(mode, *now, rates(now, t - last_time)), refresh=True)
                last, last_time = now, t
    else:
        while True:
            await trio.sleep(interval)
            now = await _statistics(control)
            print(_line(*now), flush=True)


@click.command()
@click.option(
    "-m",
    "--mode",
    type=click.Choice(sorted(MODES)),
    required=True,
    help="forwarder (XSUB/XPUB), queue (ROUTER/DEALER) or streamer (PULL/PUSH).",
)
@seconds_option(
    "--interval", minimum=0.01, default=1.0, help="How often the counters are refreshed."
)
@click.option("-q", "--quiet", is_flag=True, help="No counters.")
@click.option(
    "--capture",
    metavar="ENDPOINT",
    help="Also publish a copy of every forwarded message on a PUB bound here.",
)
@seconds_option("--timeout", help="Stop after SECONDS.")
@click.option(
    "--metrics",
    metavar="HOST:PORT",
    help="Serve the proxy's socket metrics (Prometheus, trizmq top) at http://HOST:PORT/metrics.",
)
@click.argument("frontend")
@click.argument("backend")
def proxy(
    mode: str,
    interval: float,
    quiet: bool,
    capture: str | None,
    timeout: float | None,
    metrics: str | None,
    frontend: str,
    backend: str,
) -> int:
    """Forward messages between FRONTEND and BACKEND until interrupted.

    Each side binds its endpoint; write it as connect:ENDPOINT to connect instead
    (bind:ENDPOINT is accepted too).

    \b
    Examples:
      trizmq proxy -m streamer tcp://*:5557 tcp://*:5558
      trizmq proxy -m forwarder connect:tcp://10.0.0.5:5556 tcp://*:5556
      trizmq proxy -m queue tcp://*:5559 tcp://*:5560 --capture tcp://*:5561
      trizmq proxy -m streamer tcp://*:5557 tcp://*:5558 --metrics 127.0.0.1:9100
    """
    sides = (parse_side(frontend), parse_side(backend))
    live = not quiet and sys.stdout.isatty()
    address = None
    if metrics is not None:
        address = parse_metrics_address(metrics)
        needs_prometheus_client("trizmq proxy --metrics")
    return run(partial(_proxy, mode, sides, capture, interval, quiet, live, timeout, address))


async def _proxy(
    mode: str,
    sides: tuple[EndpointSpec, EndpointSpec],
    capture_endpoint: str | None,
    interval: float,
    quiet: bool,
    live: bool,
    timeout: float | None,
    metrics_address: tuple[str, int] | None = None,
) -> int:
    front_type, back_type = MODES[mode]
    options: dict[str, object] = {"linger": 0}
    name = f"inproc://trizmq-cli-proxy-{id(sides)}"
    async with (
        make_socket(front_type, **options) as front,
        make_socket(back_type, **options) as back,
        make_socket("pair", **options) as control,
        make_socket("pair", **options) as steer,
        make_socket("pub", **options) as capture,
    ):
        server = None
        if metrics_address is not None:
            # before the endpoints: a port in use fails first, as the only line
            named = {"frontend": front, "backend": back}
            if capture_endpoint is not None:
                named["capture"] = capture
            server = _serve_metrics(named, *metrics_address)
        try:
            await attach(front, [sides[0]], announce=True)
            await attach(back, [sides[1]], announce=True)
            if capture_endpoint is not None:
                await attach(capture, [EndpointSpec("bind", capture_endpoint)], announce=True)
            await control.bind(name)
            await steer.connect(name)
            with trio.move_on_after(timeout if timeout is not None else float("inf")):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        partial(
                            trizmq.proxy_steerable,
                            front,
                            back,
                            capture if capture_endpoint is not None else None,
                            control=control,
                        )
                    )
                    if not quiet:
                        nursery.start_soon(_report, steer, mode, interval, live)
        finally:
            if server is not None:
                server.close()
    return 0


def _serve_metrics(sockets: dict[str, trizmq.Socket], host: str, port: int) -> MetricsServer:
    # imported here: the extra trizmq[metrics] is needed only with --metrics
    from prometheus_client import CollectorRegistry

    from trizmq import metrics

    registry = CollectorRegistry(auto_describe=True)
    for name, sock in sockets.items():
        metrics.register(sock, registry, name=name)
    server = metrics.serve(port, host, registry)
    print(f"trizmq: metrics on {server.url}", file=sys.stderr, flush=True)
    return server

