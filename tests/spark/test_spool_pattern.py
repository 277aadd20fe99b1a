"""``spool`` as a pattern: spools found between batches, locally and on S3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trizmq.spark import _wal
from trizmq.spark._datasource import _log_locations

from .conftest import S3
from .test_admission import Batches, rows, spool
from .test_source_sink import wait_for


@pytest.fixture
def spark_on_s3(spark: Any, s3: S3) -> Iterator[Any]:
    """The shared session with its Python workers pointed at the S3 server: the data
    source is registered again with the AWS variables in the workers' environment."""
    import trizmq.spark

    env = spark.sparkContext.environment
    saved = dict(env)
    env.update(s3.env())
    trizmq.spark.register(spark)
    try:
        yield spark
    finally:
        env.clear()
        env.update(saved)
        trizmq.spark.register(spark)


def start(spark: Any, pattern: str, ck: Path, batches: Batches) -> Any:
    return (
        spark.readStream.format("zmq").option("spool", pattern).load()
        .writeStream.foreachBatch(batches)
        .option("checkpointLocation", str(ck))
        .trigger(processingTime="100 milliseconds")
        .start()
    )


def end_offsets(query: Any) -> dict[str, int]:
    """The offsets of the last batch, as the query's progress reports them."""
    progress = query.lastProgress
    if not progress:
        return {}
    offset = progress["sources"][0]["endOffset"]
    value = json.loads(offset) if isinstance(offset, str) else offset
    return dict(value["offsets"])


def payloads(batches: Batches) -> list[bytes]:
    return sorted(p for batch in batches.full() for p in batch)


def expected(*spools: list[list[bytes]]) -> list[bytes]:
    return sorted(f[-1] for frames in spools for f in frames)


def test_a_pattern_finds_new_spools_and_keeps_gone_ones(spark: Any, tmp_path: Path) -> None:
    parent = tmp_path / "spools"
    a1, b1, b2, a2 = rows(b"a", 20), rows(b"b", 15), rows(b"b2", 5), rows(b"a2", 6)
    spool(parent / "spool-a", a1)
    (parent / "spool-junk").mkdir()  # matches, but holds no log: not a spool
    spool(parent / "other", rows(b"other", 3))  # a log the pattern does not match
    pattern = f"{parent}/spool-*"
    assert spark.read.format("zmq").option("spool", pattern).load().count() == 20
    batches = Batches()
    query = start(spark, pattern, tmp_path / "ck", batches)
    a, b = str(parent / "spool-a"), str(parent / "spool-b")
    try:
        wait_for(lambda: payloads(batches) == expected(a1), "spool-a's rows")
        # one spool matched, and the offset is the map form all the same
        wait_for(lambda: end_offsets(query) == {a: 20}, "the offsets of spool-a")
        spool(parent / "spool-b", b1)  # a new spool, found while the query runs
        wait_for(lambda: payloads(batches) == expected(a1, b1), "the new spool's rows")
        wait_for(lambda: end_offsets(query) == {a: 20, b: 15}, "both offsets")
        wait_for(lambda: _wal.read_committed(a) == 20, "spool-a's commit")
        # spool-a goes away: its offset stays in the checkpoint
        (parent / "spool-a").rename(parent / "hidden-a")
        spool(parent / "spool-b", b2)
        wait_for(lambda: payloads(batches) == expected(a1, b1, b2), "spool-b's new rows")
        wait_for(lambda: end_offsets(query) == {a: 20, b: 20}, "spool-a's offset, kept")
        assert not (parent / "spool-a").exists(), "a commit recreated the gone spool"
        # and it comes back: reading resumes at its offset
        (parent / "hidden-a").rename(parent / "spool-a")
        spool(parent / "spool-a", a2)
        wait_for(lambda: payloads(batches) == expected(a1, b1, b2, a2), "spool-a's new rows")
        b3 = rows(b"b3", 2)
        spool(parent / "spool-b", b3)  # a batch more, so that the source commits the one before
        wait_for(lambda: payloads(batches) == expected(a1, b1, b2, a2, b3), "spool-b's last rows")
        wait_for(lambda: _wal.read_committed(a) == 26, "spool-a's second commit")
        assert not (parent / "spool-junk" / "committed").exists()
        assert _wal.read_committed(parent / "other") == 0
    finally:
        query.stop()


def test_a_pattern_on_s3_finds_a_spool_that_appears(
    spark_on_s3: Any, s3: S3, tmp_path: Path
) -> None:
    spark = spark_on_s3
    parent = s3.uri("spools")
    a1, b1 = rows(b"a", 12), rows(b"b", 9)
    a, b = f"{parent}/spool-a", f"{parent}/spool-b"
    spool(a, a1)
    batches = Batches()
    query = start(spark, f"{parent}/spool-*", tmp_path / "ck", batches)
    try:
        wait_for(lambda: payloads(batches) == expected(a1), "spool-a's rows")
        spool(b, b1)
        wait_for(lambda: payloads(batches) == expected(a1, b1), "the new spool's rows")
        wait_for(lambda: end_offsets(query) == {a: 12, b: 9}, "both offsets")
        a2 = rows(b"a2", 4)
        spool(a, a2)  # a batch more, so that the source commits the one before
        wait_for(lambda: payloads(batches) == expected(a1, b1, a2), "spool-a's new rows")
        wait_for(lambda: _wal.read_committed(b) == 9, "spool-b's commit on S3")
    finally:
        query.stop()


def test_a_glob_before_the_last_component_is_refused() -> None:
    with pytest.raises(ValueError, match="option spool: only the last component"):
        _log_locations({"spool": "s3://bucket/spool*/log"})
    assert _log_locations({"spool": "s3://b/spools/*,/tmp/x"}) == (
        ["s3://b/spools/*", "/tmp/x"], True
    )
