"""A real Prometheus server scrapes a trizmq process, and the figures come back through
its HTTP query API (``/api/v1/query``).

Debian's ``prometheus`` package provides the server (``make prometheus`` installs it
where it can); without it the test skips. The server runs on loopback with a config
and a storage directory of the test's own, never as the system's service.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

PROMETHEUS = shutil.which("prometheus") or (
    "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None
)
SCRAPED = Path(__file__).with_name("scraped.py")
COUNT = 25
#: the slow machine's budget for the whole test: two processes, a few scrapes
DEADLINE = 240

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="no prometheus server (Debian: apt-get install prometheus, or `make prometheus`)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status), bytes(response.read())
    except OSError:  # refused while it starts, a reset: not ready yet
        return 0, b""


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> str:
    while b"\n" not in buffer:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise AssertionError(f"the scraped process ended early: {bytes(buffer)!r}")
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode()


async def query(api: str, promql: str) -> list[dict[str, Any]]:
    url = f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    status, body = await trio.to_thread.run_sync(get, url)
    if status != 200:
        return []
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


async def wait_for(api: str, promql: str, expected: float | None) -> list[dict[str, Any]]:
    """Poll the query until its one value is ``expected`` (or, for None, no series is left).

    Polling with short sleeps: Prometheus scrapes on its own clock, which nothing here
    can await; the test's deadline bounds the wait.
    """
    while True:
        result = await query(api, promql)
        if expected is None and not result:
            return result
        if expected is not None and len(result) == 1 and float(result[0]["value"][1]) == expected:
            return result
        await trio.sleep(0.25)


async def test_prometheus_scrapes_the_figures_of_a_trizmq_process(tmp_path: Path) -> None:
    assert PROMETHEUS is not None
    with trio.fail_after(DEADLINE):
        scraped = await trio.lowlevel.open_process(
            [sys.executable, str(SCRAPED), str(COUNT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        server: trio.Process | None = None
        log = (tmp_path / "prometheus.log").open("wb")
        try:
            assert scraped.stdout is not None and scraped.stdin is not None
            buffer = bytearray()
            metrics_url = await read_line(scraped.stdout, buffer)
            assert await read_line(scraped.stdout, buffer) == "exchanged"
            target = urllib.parse.urlsplit(metrics_url).netloc

            port = free_port()
            config = tmp_path / "prometheus.yml"
            config.write_text(
                "global:\n"
                "  scrape_interval: 1s\n"
                "  scrape_timeout: 1s\n"
                "scrape_configs:\n"
                "  - job_name: trizmq\n"
                "    static_configs:\n"
                f"      - targets: ['{target}']\n"
            )
            server = await trio.lowlevel.open_process(
                [
                    PROMETHEUS,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=log,
            )
            api = f"http://127.0.0.1:{port}"
            while (await trio.to_thread.run_sync(get, f"{api}/-/ready"))[0] != 200:
                assert server.poll() is None, (tmp_path / "prometheus.log").read_text()
                await trio.sleep(0.25)

            await wait_for(api, 'up{job="trizmq"}', 1)
            await wait_for(api, 'trizmq_messages_sent_total{socket="push",type="PUSH"}', COUNT)
            received = await wait_for(
                api, 'trizmq_messages_received_total{socket="pull",type="PULL"}', COUNT
            )
            assert received[0]["metric"]["job"] == "trizmq"
            payload = sum(len(b"message %d" % i) for i in range(COUNT))
            await wait_for(api, 'trizmq_bytes_sent_total{socket="push"}', payload)
            await wait_for(api, 'trizmq_bytes_received_total{socket="pull"}', payload)
            await wait_for(api, 'trizmq_peers{socket="push"}', 1)
            await wait_for(api, 'trizmq_queue_depth{socket="pull",direction="in"}', 0)
            drops = await query(api, 'trizmq_messages_dropped_total{socket="push"}')
            assert {d["metric"]["reason"] for d in drops} >= {"hwm", "no_route", "disconnect"}
            assert all(float(d["value"][1]) == 0 for d in drops)

            # a closed socket's series go stale at the next scrape: gone from queries
            await scraped.stdin.send_all(b"close\n")
            assert await read_line(scraped.stdout, buffer) == "closed"
            await wait_for(api, 'trizmq_peers{socket="push"}', None)
            await wait_for(api, 'trizmq_peers{socket="pull"}', 0)
        finally:
            with trio.CancelScope(shield=True):
                for proc in (server, scraped):
                    if proc is not None and proc.returncode is None:
                        proc.terminate()
                        with trio.move_on_after(30):
                            await proc.wait()
                        if proc.returncode is None:
                            proc.kill()
                            await proc.wait()
                if scraped.stdin is not None:
                    await scraped.stdin.aclose()
                if scraped.stdout is not None:
                    await scraped.stdout.aclose()
                log.close()
