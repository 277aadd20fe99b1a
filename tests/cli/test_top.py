"""``trizmq top``: a snapshot of a served metrics page (``--once``), the live view, bad input."""

from __future__ import annotations

import http.server
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import attrs
import pytest
import zmq
from metrics.fakes import PUB_STATS, FakeSocket  # tests/metrics (a package of its own)
from prometheus_client import CollectorRegistry, Counter

import trizmq.metrics
from trizmq.cli.top import normalise_url, parse

from .helpers import assert_one_line_error, free_port, run_cli, start_cli

ZSock = Callable[[int], zmq.Socket[bytes]]


class Busy(FakeSocket):
    """A socket whose counters move: 100 messages (4 KB) more at every snapshot."""

    def stats(self):  # type: ignore[no-untyped-def]
        self.calls += 1
        return attrs.evolve(
            self.snapshot,
            messages_sent=self.snapshot.messages_sent + 100 * self.calls,
            bytes_sent=self.snapshot.bytes_sent + 4000 * self.calls,
        )


@pytest.fixture
def served() -> Iterator[tuple[str, CollectorRegistry]]:
    """A metrics endpoint of this process (an empty registry to fill), and its URL."""
    registry = CollectorRegistry()
    trizmq.metrics.collector(registry)
    with trizmq.metrics.serve(0, registry=registry) as server:
        yield server.url, registry


def test_once_prints_one_snapshot(served: tuple[str, CollectorRegistry]) -> None:
    url, registry = served
    ticks = FakeSocket(PUB_STATS)
    pull = Busy(attrs.evolve(PUB_STATS, socket_type="PUSH", peers=(), drops={}))
    trizmq.metrics.register(ticks, registry, name="ticks")
    trizmq.metrics.register(pull, registry, name="work")
    result = run_cli("top", "--once", "--interval", "0.3", url)
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    lines = out.splitlines()
    assert lines[0].startswith(f"trizmq top  {url}  2 sockets  ")
    assert lines[1] == "traffic"
    assert lines[2].split() == [
        "socket", "type", "peers", "sent/s", "recv/s", "sent", "received", "bytes/s", "out",
        "bytes/s", "in", "wire", "saved", "queue", "out", "(peak)", "queue", "in", "(peak)",
        "drops", "rtt", "mean/max",
    ]
    ticks_row = next(line for line in lines if line.startswith(" ticks "))
    assert ticks_row.split() == [
        "ticks", "PUB", "2", "0", "0", "120", "0", "0", "B", "0", "B", "75%", "/", "-", "5",
        "(64)", "0", "(0)",
        "hwm", "7,", "disconnect", "2", "2.00", "ms", "/", "4.00", "ms",
    ]
    work = next(line for line in lines if line.startswith(" work ")).split()
    assert work[:3] == ["work", "PUSH", "0"]
    assert float(work[3].replace(",", "")) > 0  # 100 messages between the two reads
    assert work[5] == "320"  # 120 + 100 at each of the two reads
    assert work[-3:] == ["-", "/", "-"]  # no peer measured an RTT
    assert "connections" in lines
    links = next(line for line in lines[lines.index("connections") :] if " ticks " in line)
    assert links.split() == [
        "ticks", "3", "0", "0", "heartbeat_timeout", "1", "mechanism", "1,", "zap", "1", "1",
    ]


def test_once_with_host_and_port_only(served: tuple[str, CollectorRegistry]) -> None:
    url, registry = served
    sock = FakeSocket(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="ticks")
    address = re.sub(r"^http://(.*)/metrics$", r"\1", url)
    result = run_cli("top", "--once", "--interval", "0.1", address)
    assert result.returncode == 0, result.stderr.decode()
    assert " ticks " in result.stdout.decode()


def test_once_without_open_sockets(served: tuple[str, CollectorRegistry]) -> None:
    url, _ = served
    result = run_cli("top", "--once", "--interval", "0.1", url)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines()[1:] == ["no open sockets"]


def test_an_address_that_does_not_answer() -> None:
    port = free_port()
    result = run_cli("top", "--once", f"127.0.0.1:{port}")
    err = assert_one_line_error(result)
    assert result.returncode == 1
    assert err == (
        f"trizmq top: error: http://127.0.0.1:{port}/metrics does not answer: Connection refused"
    )


def test_a_metrics_page_without_trizmq() -> None:
    registry = CollectorRegistry()
    Counter("requests", "Requests served.", registry=registry).inc()
    with trizmq.metrics.serve(0, registry=registry) as server:
        result = run_cli("top", "--once", server.url)
    err = assert_one_line_error(result)
    assert result.returncode == 1
    assert err == f"trizmq top: error: {server.url} serves no trizmq metrics (no trizmq_* series)"


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 404 if self.path == "/missing" else 200
        body = b"<html><body>hello</body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web_page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_page_that_is_not_metrics(web_page: str) -> None:
    result = run_cli("top", "--once", f"{web_page}/index.html")
    err = assert_one_line_error(result)
    assert err.endswith("/index.html serves no trizmq metrics (no trizmq_* series)")


def test_an_http_error(web_page: str) -> None:
    result = run_cli("top", "--once", f"{web_page}/missing")
    err = assert_one_line_error(result)
    assert err == f"trizmq top: error: {web_page}/missing answered HTTP 404 Not Found"


def test_not_a_metrics_url() -> None:
    result = run_cli("top", "ftp://example.org/metrics")
    err = assert_one_line_error(result)
    assert result.returncode == 2
    assert "expected a metrics URL" in err


def test_the_live_view_refreshes_until_interrupted(
    served: tuple[str, CollectorRegistry], procs: list[subprocess.Popen[bytes]]
) -> None:
    url, registry = served
    sock = Busy(PUB_STATS)
    trizmq.metrics.register(sock, registry, name="ticks")
    proc = start_cli("top", "--interval", "0.2", url)
    procs.append(proc)
    deadline = time.monotonic() + 30
    while sock.calls < 3 and time.monotonic() < deadline:  # three reads: it refreshes
        time.sleep(0.05)
    assert sock.calls >= 3
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    assert b"ticks" in out


def test_urls_and_pages_as_functions() -> None:
    assert normalise_url("127.0.0.1:9100") == "http://127.0.0.1:9100/metrics"
    assert normalise_url("http://h:1/") == "http://h:1/metrics"
    assert normalise_url("https://h:1/m") == "https://h:1/m"
    views = parse(
        '# TYPE trizmq_peers gauge\ntrizmq_peers{socket="a",type="PUB"} 3\n'
        '# TYPE trizmq_messages_dropped_total counter\n'
        'trizmq_messages_dropped_total{socket="a",type="PUB",reason="hwm"} 4\n'
    )
    assert views[("a", "PUB")].figures == {"peers": 3.0}
    assert views[("a", "PUB")].drops == {"hwm": 4.0}


# -- trizmq proxy --metrics --------------------------------------------------------------
def _metrics_url(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert line.startswith("trizmq: metrics on http://127.0.0.1:"), line
    return line.split()[-1]


def test_proxy_serves_its_sockets_for_top(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    front, back = free_port(), free_port()
    proc = start_cli(
        "proxy", "-m", "streamer", f"tcp://127.0.0.1:{front}", f"tcp://127.0.0.1:{back}",
        "-q", "--metrics", "127.0.0.1:0",
    )
    procs.append(proc)
    url = _metrics_url(proc)
    push, pull = zsock(zmq.PUSH), zsock(zmq.PULL)
    push.connect(f"tcp://127.0.0.1:{front}")
    pull.connect(f"tcp://127.0.0.1:{back}")
    for i in range(5):
        push.send(b"job %d" % i)
    assert [pull.recv() for _ in range(5)] == [b"job %d" % i for i in range(5)]
    result = run_cli("top", "--once", "--interval", "0.2", url)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith(f"trizmq top  {url}  2 sockets  ")
    backend = next(line for line in lines if line.startswith(" backend ")).split()
    frontend = next(line for line in lines if line.startswith(" frontend ")).split()
    assert backend[:3] == ["backend", "PUSH", "1"] and backend[5:7] == ["5", "0"]
    assert frontend[:3] == ["frontend", "PULL", "1"] and frontend[5:7] == ["0", "5"]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()


def test_proxy_metrics_on_a_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "proxy", "-m", "streamer", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "-q",
            "--metrics", f"127.0.0.1:{port}",
        )
    err = assert_one_line_error(result)
    assert result.returncode == 1
    assert err == (
        f"trizmq proxy: error: cannot serve metrics on 127.0.0.1:{port}: Address already in use"
    )


def test_proxy_metrics_address_must_have_a_port() -> None:
    result = run_cli("proxy", "-m", "streamer", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0",
                     "--metrics", "127.0.0.1:http")
    err = assert_one_line_error(result)
    assert result.returncode == 2
    assert "--metrics takes HOST:PORT" in err
