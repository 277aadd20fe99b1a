"""``trizmq monitor``: connect a socket and print its monitor's events as they happen.

Each event is one line on stdout: the local time, the event's name and its fields
(``endpoint=... address=...``), or with ``--json`` one JSON object per line. The
socket connects to every ENDPOINT (``bind:ENDPOINT`` binds instead), so the events
show whether a peer is there, whether the handshake succeeds and when it goes away.
"""

from __future__ import annotations

import datetime
import json
import sys
from functools import partial

import attrs
import click
import trio

import trizmq

from ._common import (
    SOCKET_TYPES,
    EndpointSpec,
    attach,
    make_socket,
    parse_side,
    run,
    seconds_option,
)

__all__ = ["format_event", "monitor"]


def format_event(event: trizmq.MonitorEvent, *, as_json: bool) -> str:
    """One line for ``event``."""
    now = datetime.datetime.now()
    fields = attrs.asdict(event)
    name = type(event).__name__
    if as_json:
        return json.dumps({"time": now.isoformat(timespec="milliseconds"), "event": name, **fields})
    parts = []
    for key, value in fields.items():
        if value == "" or key == "endpoint":
            continue  # the endpoint leads the line, once
        if isinstance(value, float):
            value = f"{value:.3g}s" if key in ("interval",) else f"{value:.3g}"
        parts.append(f"{key}={value}")
    endpoint = fields.get("endpoint", "")
    text = " ".join(parts)
    return f"{now.strftime('%H:%M:%S.%f')[:-3]} {name} {endpoint} {text}".rstrip()


@click.command()
@click.option(
    "-t",
    "--type",
    "type_name",
    type=click.Choice(sorted(SOCKET_TYPES), case_sensitive=False),
    default="dealer",
    show_default=True,
    help="The socket type to connect with (its handshake must suit the peer).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
@click.option("-n", "--count", type=click.IntRange(min=1), help="Stop after this many events.")
@seconds_option("--timeout", help="Stop after SECONDS.")
@click.argument("endpoints", nargs=-1, required=True)
def monitor(
    type_name: str,
    as_json: bool,
    count: int | None,
    timeout: float | None,
    endpoints: tuple[str, ...],
) -> int:
    """Connect to ENDPOINTS and print the socket's events as they happen.

    An endpoint written bind:ENDPOINT is bound instead.

    \b
    Examples:
      trizmq monitor tcp://127.0.0.1:5555
      trizmq monitor -t sub tcp://10.0.0.5:5556 --json
      trizmq monitor -t pull bind:tcp://*:5557
    """
    specs = [parse_side(e, default="connect") for e in endpoints]
    return run(partial(_monitor, type_name.lower(), specs, as_json, count, timeout))


async def _monitor(
    type_name: str,
    specs: list[EndpointSpec],
    as_json: bool,
    count: int | None,
    timeout: float | None,
) -> int:
    seen = 0
    async with make_socket(type_name, linger=0) as sock, sock.monitor() as events:
        with trio.move_on_after(timeout if timeout is not None else float("inf")):
            await attach(sock, specs, announce=False)
            async for event in events:
                sys.stdout.write(format_event(event, as_json=as_json) + "\n")
                sys.stdout.flush()
                seen += 1
                if count is not None and seen >= count:
                    break
    return 0
