"""The write-ahead log on its own (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trizmq.spark import _wal


def test_append_read_commit_truncates(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path, fsync=False, segment_bytes=90)
    for i in range(10):
        log.append([(i, b"t" if i % 2 else None, [b"h", b"p%d" % i])])
    assert _wal.read_head(tmp_path) == 10
    recs = list(_wal.read_range(tmp_path, 3, 7))
    assert [r.offset for r in recs] == [3, 4, 5, 6]
    assert recs[0].frames == [b"h", b"p3"] and recs[0].topic == b"t" and recs[1].topic is None
    before = len(_wal.segments(tmp_path))
    assert before > 2
    _wal.commit(tmp_path, 8)
    assert _wal.read_committed(tmp_path) == 8
    assert len(_wal.segments(tmp_path)) < before
    assert [r.offset for r in _wal.read_range(tmp_path, 8, 10)] == [8, 9]
    with pytest.raises(LookupError):
        list(_wal.read_range(tmp_path, 0, 10))
    log.close()


def test_torn_tail_is_cut_and_offsets_go_on(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path, fsync=False)
    log.append([(0, None, [b"a"]), (0, None, [b"b"])])
    log.close()
    (_first, seg), = _wal.segments(tmp_path)
    with open(seg, "ab") as f:
        f.write(_wal.encode(2, 0, None, [b"torn"])[:-3])
    log = _wal.LogWriter(tmp_path, fsync=False)
    assert log.next_offset == 2
    log.append([(0, None, [b"c"])])
    assert [r.frames for r in _wal.read_range(tmp_path, 0, 3)] == [[b"a"], [b"b"], [b"c"]]
    log.close()


def test_one_writer_per_log(tmp_path: Path) -> None:
    log = _wal.LogWriter(tmp_path)
    with pytest.raises(RuntimeError, match="owned by another writer"):
        _wal.LogWriter(tmp_path)
    log.close()
