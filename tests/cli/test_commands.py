"""keygen, bench, --help, error reporting and signals of the ``trizmq`` command."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import zmq
import zmq.auth
from nacl.public import PrivateKey
from zmq.utils import z85

import trizmq

from .helpers import assert_one_line_error, bound_endpoint, free_port, run_cli, start_cli

ZSock = Callable[[int], zmq.Socket[bytes]]
REPO = Path(__file__).resolve().parents[2]


def _check_pair(public: bytes, secret: bytes) -> None:
    assert len(public) == len(secret) == 40
    raw_public, raw_secret = z85.decode(public), z85.decode(secret)
    assert len(raw_public) == len(raw_secret) == 32
    assert bytes(PrivateKey(raw_secret).public_key) == raw_public


def test_keygen_to_stdout() -> None:
    result = run_cli("keygen")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith("public-key: ") and lines[1].startswith("secret-key: ")
    _check_pair(lines[0].split()[1].encode(), lines[1].split()[1].encode())


def test_keygen_to_files_with_permissions(tmp_path: Path) -> None:
    result = run_cli("keygen", "--out", "server", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # the certificates of pyzmq's zmq.auth (and czmq): NAME.key public, NAME.key_secret
    secret_file, public_file = tmp_path / "server.key_secret", tmp_path / "server.key"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(public_file.stat().st_mode) == 0o644
    public, secret = zmq.auth.load_certificate(secret_file)
    assert zmq.auth.load_certificate(public_file) == (public, None)
    assert secret is not None
    _check_pair(public, secret)
    # never overwritten
    again = run_cli("keygen", "--out", "server", cwd=tmp_path)
    assert "already exists" in assert_one_line_error(again)


def test_every_command_has_help() -> None:
    for command in ([], ["send"], ["recv"], ["proxy"], ["monitor"], ["keygen"], ["bench"]):
        result = run_cli(*command, "--help")
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.startswith(b"Usage: trizmq"), command


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["recv", "-t", "pull", "-b", "tcp://127.0.0.1"], "has no port"),
        (["send", "-t", "push", "-c", "carrier-pigeon://x"], "carrier-pigeon"),
        (["recv", "-t", "nosuch", "-b", "tcp://127.0.0.1:0"], "'nosuch' is not one of"),
        (["send", "-t", "sub", "-c", "tcp://127.0.0.1:5"], "cannot send"),
        (["recv", "-t", "pull"], "--bind or --connect"),
        (
            [
                "send",
                "-t",
                "push",
                "-c",
                "tcp://127.0.0.1:5",
                "--curve-server-key",
                "nope",
                "--curve-secret-key",
                "x" * 40,
            ],
            "bad key",
        ),
        (["recv", "-t", "dish", "-b", "udp://127.0.0.1:0"], "--join"),
        (["send", "-t", "radio", "-c", "udp://127.0.0.1:5", "x"], "--group"),
        (["proxy", "-m", "streamer", "tcp://127.0.0.1:0"], "Missing argument"),
        (["frobnicate"], "No such command"),
    ],
)
def test_user_mistakes_are_one_line(args: list[str], expected: str) -> None:
    message = assert_one_line_error(run_cli(*args))
    assert expected in message
    assert message.startswith("trizmq")


def test_unsent_messages_after_linger_are_one_line() -> None:
    port = free_port()  # nobody listens: the PUSH queues for a peer that never comes
    result = run_cli("send", "-t", "push", "-c", f"tcp://127.0.0.1:{port}", "--linger", "0.3", "x")
    assert "1 message still unsent after --linger 0.3 s" in assert_one_line_error(result)


def test_port_in_use_is_one_line(zsock: ZSock) -> None:
    pull = zsock(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    message = assert_one_line_error(run_cli("recv", "-t", "pull", "-b", f"tcp://127.0.0.1:{port}"))
    assert "Address already in use" in message


def test_sigint_stops_recv_quickly(zsock: ZSock, procs: list[subprocess.Popen[bytes]]) -> None:
    proc = start_cli("recv", "-t", "pull", "-b", "tcp://127.0.0.1:0")
    procs.append(proc)
    push = zsock(zmq.PUSH)
    push.connect(bound_endpoint(proc))
    push.send(b"ready")
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert time.monotonic() - started < 3
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err


def test_sigint_while_send_reads_stdin(procs: list[subprocess.Popen[bytes]]) -> None:
    read_end, write_end = os.pipe()
    try:
        proc = start_cli("send", "-t", "push", "-b", "tcp://127.0.0.1:0", stdin=read_end)
        procs.append(proc)
        bound_endpoint(proc)  # it is bound and waiting on stdin
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 130
    assert b"Traceback" not in err


def test_bench_without_the_suite_is_one_line(tmp_path: Path) -> None:
    message = assert_one_line_error(run_cli("bench", "--quick", cwd=tmp_path))
    assert "benchmark suite is not available" in message


def test_bench_runs_the_suite_from_a_checkout() -> None:
    result = run_cli("bench", "--list", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert b"pushpull" in result.stdout


def test_curve_recv_from_pyzmq_client(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    assert run_cli("keygen", "--out", "server", cwd=tmp_path).returncode == 0
    server_public, _ = zmq.auth.load_certificate(tmp_path / "server.key")
    proc = start_cli(
        "recv",
        "-t",
        "pull",
        "-b",
        "tcp://127.0.0.1:0",
        "-n",
        "1",
        "--curve-secret-key",
        "@server.key_secret",
        cwd=tmp_path,
    )
    procs.append(proc)
    push = zsock(zmq.PUSH)
    client_public, client_secret = zmq.curve_keypair()
    push.curve_serverkey = server_public
    push.curve_publickey = client_public
    push.curve_secretkey = client_secret
    push.connect(bound_endpoint(proc))
    push.send(b"secret message")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"secret message\n"


def test_plain_server_admits_pyzmq_client(
    zsock: ZSock, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc = start_cli(
        "recv",
        "-t",
        "pull",
        "-b",
        "tcp://127.0.0.1:0",
        "-n",
        "1",
        "--plain-server",
        "--plain-username",
        "admin",
        "--plain-password",
        "secret",
    )
    procs.append(proc)
    push = zsock(zmq.PUSH)
    push.plain_username = b"admin"
    push.plain_password = b"secret"
    push.connect(bound_endpoint(proc))
    push.send(b"plain text")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out == b"plain text\n"


def test_no_arguments_prints_the_help_as_help() -> None:
    result = run_cli()
    assert result.returncode == 2
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith("Usage: trizmq") and len(lines) > 10
    assert b"error" not in result.stderr


def test_python_dash_m_trizmq_is_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trizmq", "--version"], capture_output=True, timeout=30
    )
    assert done.returncode == 0 and done.stdout.startswith(b"trizmq, version")


def test_verbose_shows_why_a_handshake_failed(tmp_path: Path) -> None:
    """A CURVE client with the wrong server key, against a CURVE server: without -v it
    would wait as for an absent peer; with -v stderr says what happened."""
    port = free_port()
    assert run_cli("keygen", "--out", "server", cwd=tmp_path).returncode == 0
    assert run_cli("keygen", "--out", "other", cwd=tmp_path).returncode == 0
    server = start_cli(
        "recv", "-t", "pull", "-b", f"tcp://127.0.0.1:{port}", "-n", "1",
        "--curve-secret-key", "@server.key_secret", "--timeout", "10", cwd=tmp_path,
    )  # fmt: skip
    try:
        result = run_cli(
            "send", "-t", "push", "-c", f"tcp://127.0.0.1:{port}", "-v", "--timeout", "2",
            "--curve-server-key", "@other.key", "--curve-secret-key", "@other.key_secret",
            "hello", cwd=tmp_path,
        )  # fmt: skip
    finally:
        server.kill()
        server.communicate()
    stderr = result.stderr.decode()
    assert "waiting for peers on" in stderr
    assert "Connected" in stderr and "HandshakeFailed" in stderr, stderr
    assert result.returncode == 1  # timed out: nothing was sent


def test_monitor_lines_are_short() -> None:
    from trizmq.cli.monitor import format_event

    line = format_event(trizmq.ConnectRetried("tcp://h:1", 0.10782578269566777), as_json=False)
    assert line.count("tcp://h:1") == 1 and "interval=0.108s" in line


def test_ctrl_c_while_trizmq_is_imported_is_quiet() -> None:
    """The console script's first step makes SIGINT exit 130 quietly until the command
    line runs (which then handles it itself): shown with a SIGINT in the middle of an
    import, the moment a Ctrl-C at start-up lands in."""
    script = (
        "import os, signal, _trizmq_entry\n"
        "signal.signal(signal.SIGINT, _trizmq_entry._interrupted)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "import trizmq.cli\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30)
    assert done.returncode == 130
    assert b"Traceback" not in done.stderr
