"""The one SparkSession of the Spark tests (``local[2,2]``: two cores, tasks retried once).

Every test of this directory skips, saying so, where no Java 17+ is found; nothing
else skips them. Python workers run the interpreter of the tests (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

#: seconds a streaming query may take to catch up in a test
QUERY_TIMEOUT = 60.0


def _java_major() -> int | None:
    java = shutil.which("java")
    if os.environ.get("JAVA_HOME"):
        candidate = os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        java = candidate if os.path.exists(candidate) else java
    if java is None:
        return None
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


JAVA_MAJOR = _java_major()
NO_JAVA = JAVA_MAJOR is None or JAVA_MAJOR < 17


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_java: runs a Spark driver (skipped without Java 17+)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not NO_JAVA:
        return
    found = "no java on PATH or JAVA_HOME" if JAVA_MAJOR is None else f"found Java {JAVA_MAJOR}"
    skip = pytest.mark.skip(reason=f"Spark tests need Java 17+ ({found})")
    for item in items:
        uses_spark = "spark" in getattr(item, "fixturenames", ())
        if uses_spark or item.get_closest_marker("needs_java"):
            item.add_marker(skip)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_env() -> dict[str, str]:
    """The environment a Spark driver (this one or a subprocess) needs."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


#: two executor JVMs, each with one core, 1 GiB and its own Python workers
CLUSTER = "local-cluster[2,1,1024]"


def build_session(app: str, master: str = "local[2,2]") -> Any:
    """The SparkSession of a test run (``master``: ``local[2,2]`` or :data:`CLUSTER`)."""
    from pyspark.sql import SparkSession

    os.environ.update(spark_env())
    builder = SparkSession.builder
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        if key in os.environ:  # executors find the S3 server the standard way too
            builder = builder.config(f"spark.executorEnv.{key}", os.environ[key])
    spark = (
        builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import trizmq.spark

    trizmq.spark.register(spark)
    return spark


#: the local session the tests share (one SparkContext per process)
_SHARED: list[Any] = []


@pytest.fixture
def spark(_shared_session_stopped_at_the_end: None) -> Any:
    """The local session the tests share, made again where a module that needed its
    own (the cluster's, ``test_cluster``) stopped it: one SparkContext per process,
    whatever order the modules run in."""
    if not _SHARED or _SHARED[0].sparkContext._jsc is None:
        _SHARED[:] = [build_session("trizmq-tests")]
    return _SHARED[0]


@pytest.fixture(scope="session")
def _shared_session_stopped_at_the_end() -> Iterator[None]:
    yield
    if _SHARED:
        stop_session(_SHARED.pop())


def stop_session(session: Any) -> None:
    """Stop a session's queries, then the session (nothing if it is stopped already)."""
    if session.sparkContext._jsc is None:
        return
    for query in session.streams.active:
        query.stop()
    session.stop()


#: the bucket of the loopback S3 server
BUCKET = "trizmq-tests"


class S3:
    """A real S3 API server (moto in server mode, its own process) on loopback."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("the moto S3 server did not start") from None
                time.sleep(0.1)

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point every S3 client (pyarrow's) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def uri(self, name: str) -> str:
        """A fresh prefix of the test bucket."""
        return f"s3://{BUCKET}/{name}-{uuid.uuid4().hex[:8]}"

    def objects(self, uri: str) -> list[str]:
        """The names of the objects under ``uri`` (recursively, relative to it)."""
        from pyarrow import fs as pafs

        filesystem, root = pafs.FileSystem.from_uri(uri)
        infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True,
                                                           allow_not_found=True))
        return sorted(i.path[len(root) + 1 :] for i in infos if i.type == pafs.FileType.File)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """The loopback S3 server, its bucket made, and this process's AWS_* variables set
    (so that Spark executors and subprocesses started from here find it too)."""
    server = S3()
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    try:
        from pyarrow import fs as pafs

        pafs.S3FileSystem(endpoint_override=server.endpoint, allow_bucket_creation=True).create_dir(
            BUCKET
        )
        yield server
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.close()


class Libzmq:
    """pyzmq sockets that the fixture closes (linger 0) at the end of the test."""

    def __init__(self) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.made: list[zmq.Socket[bytes]] = []

    def socket(self, kind: int) -> zmq.Socket[bytes]:
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVTIMEO, int(QUERY_TIMEOUT * 1000))
        sock.setsockopt(zmq.SNDTIMEO, int(QUERY_TIMEOUT * 1000))
        self.made.append(sock)
        return sock

    def close(self) -> None:
        for sock in self.made:
            sock.close(linger=0)
        self.ctx.term()


@pytest.fixture
def zctx() -> Iterator[Libzmq]:
    lib = Libzmq()
    yield lib
    lib.close()
