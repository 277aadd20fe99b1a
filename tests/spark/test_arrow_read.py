"""Reading the log as Arrow: blocks in columns, logs of records written before blocks,
partitions on remote segment boundaries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from trizmq.spark import _arrowlog, _wal
from trizmq.spark._datasource import _ranges

from .conftest import S3

Message = tuple[int, bytes | None, list[bytes]]


def _messages(count: int, offset: int = 0) -> list[Message]:
    """Messages of every shape: a topic or none, no frame, one, several, empty frames."""
    out: list[Message] = []
    for i in range(offset, offset + count):
        topic = None if i % 3 else b"topic-%d" % (i % 7)
        frames = [[b"p%d" % i], [], [b"h%d" % i, b"", b"body-%d" % i], [b""]][i % 4]
        out.append((1_700_000_000_000_000 + i, topic, frames))
    return out


def _rows(messages: list[Message], first: int) -> list[dict[str, Any]]:
    """The rows the source yields for ``messages`` logged at ``first`` on."""
    return [
        {
            "offset": first + i,
            "received_at_us": at,
            "topic": topic,
            "payload": frames[-1] if frames else b"",
            "frames": frames,
        }
        for i, (at, topic, frames) in enumerate(messages)
    ]


def _read(location: str | Path, start: int, end: int, rows: int = 65536) -> list[dict[str, Any]]:
    out = []
    for batch in _arrowlog.read_batches(location, start, end, rows):
        assert batch.schema.equals(_arrowlog.ARROW_SCHEMA)
        micros = batch.column("received_at").cast(pa.int64()).to_pylist()
        for row, at in zip(batch.to_pylist(), micros, strict=True):
            del row["received_at"]
            out.append({**row, "received_at_us": at})
    return [{k: row[k] for k in ("offset", "received_at_us", "topic", "payload", "frames")}
            for row in out]


def write_log_of_records(directory: Path, messages: list[Message], per_segment: int) -> None:
    """A log as the writer before blocks wrote it: ``.log`` segments of records (``encode``)
    and a ``head``."""
    directory.mkdir(parents=True, exist_ok=True)
    for first in range(0, len(messages), per_segment):
        chunk = messages[first : first + per_segment]
        data = b"".join(
            _wal.encode(first + i, at, topic, frames) for i, (at, topic, frames) in enumerate(chunk)
        )
        (directory / f"seg-{first:020d}.log").write_bytes(data)
    (directory / "head").write_text(str(len(messages)))


@pytest.mark.parametrize("per_append", [1, 5, 63, 64, 300, 1500])
def test_blocks_read_in_columns_as_record_by_record(tmp_path: Path, per_append: int) -> None:
    messages = _messages(4000)
    log = _wal.LogWriter(tmp_path, fsync=False, segment_bytes=32 * 1024)
    for at in range(0, len(messages), per_append):
        log.append(messages[at : at + per_append])
    log.close()
    assert len(_wal.segments(tmp_path)) > 2
    assert all(path.endswith(".cols") for _first, path in _wal.segments(tmp_path))
    expected = _rows(messages, 0)
    assert _read(tmp_path, 0, 4000) == expected
    # ranges that start and end inside blocks and segments, in batches of 700 rows at most
    for start, end in ((1, 2), (17, 3999), (2333, 4000), (3999, 4000)):
        assert _read(tmp_path, start, end, rows=700) == expected[start:end]
    plain = list(_wal.read_range(tmp_path, 17, 3999))
    assert [(r.offset, r.topic, r.frames) for r in plain] == [
        (row["offset"], row["topic"], row["frames"]) for row in expected[17:3999]
    ]
    batches = list(_arrowlog.read_batches(tmp_path, 0, 4000, 1000))
    assert sum(b.num_rows for b in batches) == 4000
    assert max(b.num_rows for b in batches) < 1000 + per_append  # about 1000 each


def test_a_block_that_fails_its_crc_is_not_read(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path, fsync=False)
    log.append(_messages(200))
    log.append(_messages(200, 200))
    log.close()
    (_first, seg), = _wal.segments(tmp_path)
    data = bytearray(Path(seg).read_bytes())
    data[-20] ^= 0xFF  # a frame byte of the second block
    Path(seg).write_bytes(bytes(data))
    assert len(_read(tmp_path, 0, 200)) == 200
    with pytest.raises(LookupError, match="no record 200"):
        _read(tmp_path, 0, 400)
    with pytest.raises(LookupError, match="no record 200"):
        list(_wal.read_range(tmp_path, 0, 400))


def test_a_log_of_records_stays_readable_and_goes_on_in_blocks(tmp_path: Path) -> None:
    old = _messages(1000)
    write_log_of_records(tmp_path, old, per_segment=300)
    assert _read(tmp_path, 0, 1000) == _rows(old, 0)
    assert _read(tmp_path, 250, 650, rows=100) == _rows(old, 0)[250:650]
    log = _wal.LogWriter(tmp_path, fsync=False)  # a writer of today opens it
    assert log.next_offset == 1000
    new = _messages(500, 1000)
    log.append(new)
    log.close()
    names = [Path(path).name for _first, path in _wal.segments(tmp_path)]
    assert names[:-1] == [f"seg-{f:020d}.log" for f in (0, 300, 600, 900)]
    assert names[-1] == f"seg-{1000:020d}.cols"
    assert _read(tmp_path, 0, 1500) == _rows(old + new, 0)
    assert _read(tmp_path, 950, 1100) == _rows(old + new, 0)[950:1100]
    _wal.commit(tmp_path, 1200)  # the segments of records go once committed
    assert [first for first, _path in _wal.segments(tmp_path)] == [1000]


def test_an_empty_log_segment_of_records_gives_way(tmp_path: Path) -> None:
    write_log_of_records(tmp_path, _messages(10), per_segment=10)
    (tmp_path / f"seg-{10:020d}.log").write_bytes(b"")  # a writer rolled, then stopped
    log = _wal.LogWriter(tmp_path, fsync=False)
    log.append(_messages(3, 10))
    log.close()
    assert [Path(p).name for _f, p in _wal.segments(tmp_path)] == [
        f"seg-{0:020d}.log", f"seg-{10:020d}.cols"
    ]
    assert _read(tmp_path, 0, 13) == _rows(_messages(13), 0)


def test_a_query_reads_a_log_of_records_and_blocks(spark: Any, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    old = _messages(3000)
    write_log_of_records(spool, old, per_segment=1000)
    log = _wal.LogWriter(spool, fsync=False)
    new = _messages(2000, 3000)
    log.append(new[:1500])
    log.append(new[1500:])
    log.close()
    df = (
        spark.read.format("zmq").option("spool", str(spool))
        .option("partitions", "3").option("minPartitionRows", "1").load()
    )
    got = sorted(df.collect(), key=lambda r: r.offset)
    expected = _rows(old + new, 0)
    assert [r.offset for r in got] == list(range(5000))
    assert [
        (r.topic, r.payload, r.frames, int(r.received_at.timestamp() * 1_000_000)) for r in got
    ] == [(e["topic"], e["payload"], e["frames"], e["received_at_us"]) for e in expected]


def test_remote_partitions_start_at_segment_objects(s3: S3) -> None:
    uri = s3.uri("planned")
    log = _wal.LogWriter(uri, lease_seconds=10)
    for at in range(0, 1000, 130):  # one object per append: 0, 130, 260, ...
        log.append(_messages(min(130, 1000 - at), at))
    log.close()
    firsts = [first for first, _path in _wal.segments(uri)]
    parts = _ranges({uri: (0, 1000)}, {"partitions": "3", "minpartitionrows": "1"})
    assert [p.start for p in parts][1:] == [390, 650]  # the nearest to 334 and 668
    assert all(p.start in firsts for p in parts[1:]) and parts[-1].end == 1000
    assert [(p.start, p.end) for p in parts] == list(
        zip([0, 390, 650], [390, 650, 1000], strict=True)
    )
    # a span beginning inside an object starts there; its cuts are still object starts
    parts = _ranges({uri: (100, 1000)}, {"partitions": "2", "minpartitionrows": "1"})
    assert [(p.start, p.end) for p in parts] == [(100, 520), (520, 1000)]
    # ranges read through threads, several objects ahead, in order
    assert _read(uri, 0, 1000, rows=64) == _rows(_messages(1000), 0)
    assert _read(uri, 200, 301) == _rows(_messages(1000), 0)[200:301]


def test_local_partitions_split_evenly(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path, fsync=False)
    log.append(_messages(1000))
    log.close()
    parts = _ranges({os.fspath(tmp_path): (0, 1000)}, {"partitions": "4", "minpartitionrows": "1"})
    assert [(p.start, p.end) for p in parts] == [(0, 250), (250, 500), (500, 750), (750, 1000)]


def test_payload_index_counts_blocks_and_records(tmp_path: Path) -> None:
    """maxBytesPerTrigger's index reads the payload sizes of both segment formats."""
    old = _messages(50)
    write_log_of_records(tmp_path, old, per_segment=20)
    log = _wal.LogWriter(tmp_path, fsync=False)
    new = _messages(70, 50)
    log.append(new[:30])
    index = _wal.PayloadIndex(tmp_path)
    index.extend(10, 80)
    sizes = [len(frames[-1]) if frames else 0 for _at, _topic, frames in old + new]
    assert index.size(10, 80) == sum(sizes[10:80])
    log.append(new[30:])  # the segment being appended to is read on from where it stopped
    index.extend(10, 120)
    assert index.size(10, 120) == sum(sizes[10:120])
    assert index.size(77, 101) == sum(sizes[77:101])
    log.close()


def test_small_blocks_of_one_frame_each(tmp_path: Path) -> None:
    messages: list[Message] = [(i, None, [b"m%d" % i]) for i in range(100)]
    log = _wal.LogWriter(tmp_path, fsync=False)
    for at in range(0, 100, 10):  # blocks below SMALL_BLOCK records: decoded record by record
        log.append(messages[at : at + 10])
    log.close()
    assert _read(tmp_path, 0, 100) == _rows(messages, 0)
    assert _read(tmp_path, 3, 47, rows=8) == _rows(messages, 0)[3:47]
