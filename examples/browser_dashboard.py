"""A live dashboard in a web browser, fed by a trizmq PUB over WebSocket.

One trio program does two things: it serves a small web page over HTTP, and it
publishes a reading every 100 ms on a ``ws://`` PUB socket. The page's JavaScript
is a ZWS 2.0 subscriber of about forty lines on the browser's own WebSocket API
(no library): it offers the ``ZWS2.0`` subprotocol, sends its routing id and a
subscription (the message ``\\x01load``), and draws every reading it receives.

    python examples/browser_dashboard.py            # then open the URL it prints
    python examples/browser_dashboard.py --http-port 8080 --ws-port 8081

Ctrl-C stops it cleanly. Each reading is ``load {"seq": N, "value": V}`` with
``V = reading(N)``, so a test can check what a page shows against what was sent
(``tests/test_example_browser_dashboard.py`` does, in headless Chromium).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import signal
import sys

import h11
import trio

import trizmq

TOPIC = b"load "

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>trizmq live dashboard</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 2em; color: #1d2733; }
  h1 { font-size: 1.3em; margin: 0 0 .3em; }
  .meta { color: #5b6775; margin-bottom: 1em; }
  .meta b { color: #1d2733; }
  svg { background: #f4f7fa; border: 1px solid #d5dde5; border-radius: 6px; }
  polyline { fill: none; stroke: #2f6fdd; stroke-width: 2.5; }
  #latest { font-size: 2.2em; font-weight: 600; }
</style>
</head>
<body>
<h1>Load, live from a trizmq PUB over <code>ws://</code></h1>
<div class="meta">status: <b id="status">connecting</b> &middot;
  readings received: <b id="count">0</b> &middot; endpoint: <code>{endpoint}</code></div>
<div id="latest">&ndash;</div>
<svg id="chart" width="640" height="220" viewBox="0 0 640 220">
  <polyline id="line" points=""></polyline>
</svg>
<script>
// A minimal ZWS 2.0 subscriber (RFC 45): the "ZWS2.0" subprotocol (no mechanism),
// our routing id first, then "\\x01" + topic to subscribe. Every WebSocket message is
// one ZeroMQ frame: a flag byte (1: more frames follow, 2: command) and the body.
const endpoint = "{endpoint}"
const topic = new TextEncoder().encode("load ")
const socket = new WebSocket(endpoint, ["ZWS2.0"])
socket.binaryType = "arraybuffer"
let peerId = null, frames = [], readings = []

socket.onopen = () => {
  document.getElementById("status").textContent = "connected"
  socket.send(new Uint8Array([0x00]))                     // our routing id: empty
  const subscribe = new Uint8Array(2 + topic.length)
  subscribe.set([0x00, 0x01]); subscribe.set(topic, 2)    // last frame, "\\x01load "
  socket.send(subscribe)
}
socket.onclose = () => { document.getElementById("status").textContent = "closed" }
socket.onmessage = (event) => {
  const data = new Uint8Array(event.data)
  const flags = data[0], body = data.subarray(1)
  if (peerId === null) { peerId = body; return }         // the server's routing id
  if (flags & 0x02) return                                // a command: nothing for us
  frames.push(body)
  if (flags & 0x01) return                                // more frames to come
  const message = frames; frames = []
  const text = new TextDecoder().decode(message[0])
  if (!text.startsWith("load ")) return
  show(JSON.parse(text.slice(5)))
}

function show(reading) {
  readings.push(reading)
  if (readings.length > 64) readings.shift()
  document.getElementById("count").textContent = String(Number(
    document.getElementById("count").textContent) + 1)
  const latest = document.getElementById("latest")
  latest.textContent = reading.value.toFixed(2) + " %"
  latest.dataset.seq = reading.seq
  latest.dataset.value = reading.value
  const points = readings.map((r, i) => `${i * 10},${210 - r.value * 2}`)
  document.getElementById("line").setAttribute("points", points.join(" "))
}
</script>
</body>
</html>
"""


def reading(seq: int) -> float:
    """The value published as reading ``seq``: a wave, so the chart has a shape."""
    return round(50 + 35 * math.sin(seq / 6) + 10 * math.sin(seq / 1.7), 2)


async def publish(pub: trizmq.Pub, interval: float) -> None:
    """One reading every ``interval`` seconds, forever."""
    seq = 0
    while True:
        body = json.dumps({"seq": seq, "value": reading(seq)}).encode()
        await pub.send(TOPIC + body)
        seq += 1
        await trio.sleep(interval)


async def serve_page(stream: trio.SocketStream, page: bytes) -> None:
    """Answer one HTTP connection (h11 parses it): the page at ``/``, 404 elsewhere."""
    conn = h11.Connection(h11.SERVER)
    with trio.move_on_after(10):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data:
                    return
                continue
            if isinstance(event, h11.Request):
                ok = event.method == b"GET" and event.target in (b"/", b"/index.html")
                body = page if ok else b"not found\n"
                kind = b"text/html; charset=utf-8" if ok else b"text/plain"
                headers = [("content-type", kind), ("content-length", str(len(body)))]
                headers.append(("connection", "close"))
                await stream.send_all(
                    conn.send(h11.Response(status_code=200 if ok else 404, headers=headers))
                )
                await stream.send_all(
                    conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
                )
            return


async def main(http_port: int, ws_port: int, interval: float) -> None:
    async with trizmq.Pub(bind=f"ws://127.0.0.1:{ws_port}/load") as pub:
        endpoint = pub.statistics()["bound"][0]
        page = PAGE.replace("{endpoint}", endpoint).encode()
        async with trio.open_nursery() as nursery:
            serve = functools.partial(
                trio.serve_tcp, lambda s: serve_page(s, page), http_port, host="127.0.0.1"
            )
            listeners = await nursery.start(serve)
            port = listeners[0].socket.getsockname()[1]
            print(f"dashboard: http://127.0.0.1:{port}/ (readings on {endpoint})", flush=True)
            nursery.start_soon(publish, pub, interval)
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    print("dashboard: stopping", flush=True)
                    nursery.cancel_scope.cancel()
                    break


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http-port", type=int, default=0, help="0: any free port")
    parser.add_argument("--ws-port", type=int, default=0, help="0: any free port")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between readings")
    args = parser.parse_args(argv)
    trio.run(main, args.http_port, args.ws_port, args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(cli())
