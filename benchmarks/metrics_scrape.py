"""What a Prometheus scrape of a process with many peers costs (``trizmq.metrics``).

    python -m benchmarks.metrics_scrape                  # 1,000 peers over tcp
    python -m benchmarks.metrics_scrape --peers 200 --transport inproc --rounds 5

One ROUTER binds; P DEALERs (in this process) connect to it and each sends one
message, so that the ROUTER knows them all. Three registries are scraped: the ROUTER
alone (P peers), the ROUTER with its per-peer series (``peers=True``), and every
socket of the process (``register_all``: the ROUTER and P DEALERs of one peer each).
Each scrape is timed ``--rounds`` times each way:

* **in the run**: ``generate_latest(registry)`` called from the sockets' own trio
  run (every ``stats()`` called directly), the collector's and the exposition's cost;
* **over HTTP**: a GET of ``serve()``'s endpoint from a worker thread, as Prometheus
  scrapes: the server's thread hands the snapshots to the trio run and waits.

Reported as median and max milliseconds, with the size of the page. The issue's
budget is a scrape under 100 ms with 1,000 peers.
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request

import trio
from prometheus_client import CollectorRegistry, generate_latest

import trizmq
import trizmq.metrics


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return bytes(response.read())


async def _time_rounds(rounds: int, registry: CollectorRegistry, url: str) -> list[str]:
    rows = []
    inside = []
    size = 0
    for _ in range(rounds):
        started = time.perf_counter()
        size = len(generate_latest(registry))
        inside.append((time.perf_counter() - started) * 1e3)
    over_http = []
    for _ in range(rounds):
        started = time.perf_counter()
        await trio.to_thread.run_sync(_get, url)
        over_http.append((time.perf_counter() - started) * 1e3)
    for label, figures in (("in the run", inside), ("over HTTP", over_http)):
        rows.append(
            f"  {label:<11} median {statistics.median(figures):7.1f} ms   "
            f"max {max(figures):7.1f} ms   ({size / 1024:.0f} KiB a page)"
        )
    return rows


async def main(peers: int, transport: str, rounds: int) -> None:
    endpoint = "tcp://127.0.0.1:0" if transport == "tcp" else "inproc://metrics-scrape"
    with trio.fail_after(1800):
        async with trizmq.Router(linger=0) as router, trio.open_nursery() as nursery:
            resolved = await router.bind(endpoint)
            dealers_open = trio.Event()
            done = trio.Event()

            async def crowd() -> None:
                sockets = [trizmq.Dealer(linger=0, connect=[resolved]) for _ in range(peers)]
                async with trio.open_nursery() as inner:
                    for sock in sockets:
                        await inner.start(_hold, sock, done)
                    dealers_open.set()

            nursery.start_soon(crowd)
            await dealers_open.wait()
            for _ in range(peers):
                await router.recv_multipart()
            stats = router.stats()
            print(f"{peers} peers over {transport}: the ROUTER sees {len(stats.peers)}")

            for title, every, with_peers in (
                ("the ROUTER, its series", False, False),
                ("the ROUTER, its series and one set per peer", False, True),
                (f"every socket ({peers + 1}), their series", True, False),
            ):
                registry = CollectorRegistry()
                trizmq.metrics.register(router, registry, name="router", peers=with_peers)
                if every:
                    trizmq.metrics.register_all(registry)
                with trizmq.metrics.serve(0, registry=registry) as server:
                    print(f"scrape of {title}:")
                    for row in await _time_rounds(rounds, registry, server.url):
                        print(row)
            done.set()


async def _hold(
    sock: trizmq.Dealer, done: trio.Event, task_status: trio.TaskStatus[None]
) -> None:
    async with sock:
        await sock.send(b"hello")
        task_status.started()
        await done.wait()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", type=int, default=1000)
    parser.add_argument("--transport", choices=("tcp", "inproc"), default="tcp")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    trio.run(main, args.peers, args.transport, args.rounds)


if __name__ == "__main__":
    run()
