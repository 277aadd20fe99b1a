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


def build_session(app: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.update(spark_env())
    spark = (
        SparkSession.builder.master("local[2,2]")
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


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = build_session("trizmq-tests")
    try:
        yield session
    finally:
        for query in session.streams.active:
            query.stop()
        session.stop()


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
