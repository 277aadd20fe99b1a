"""A Spark driver for the crash test: zmq source (with its log) -> one JSON file per batch.

    python -m tests.spark.driver_app ENDPOINT WAL CHECKPOINT OUT [CRASH_PREFIX]

``DRIVER_MASTER`` (default ``local[2,2]``) picks the master, ``DRIVER_LEASE_SECONDS``
the log's lease (a WAL on S3).

Each non-empty batch's rows go to OUT/batch-<id>.json (rewritten if replayed). With
CRASH_PREFIX, the first batch holding a payload that starts with it writes
OUT/crashing-<id>.json (its rows, as seen) and then hangs, so that the test can
SIGKILL the driver in the middle of that batch.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.spark.conftest import build_session


def main() -> None:
    # trizmq's own log, timed, for the test's message when a wait times out
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    print(f"{time.strftime('%H:%M:%S')} driver starting", flush=True)
    endpoint, wal, checkpoint, out = sys.argv[1:5]
    crash_prefix = sys.argv[5] if len(sys.argv) > 5 else None
    spark = build_session("trizmq-crash-driver", os.environ.get("DRIVER_MASTER", "local[2,2]"))
    out_dir = Path(out)

    def each(df: Any, batch_id: int) -> None:
        rows = sorted([r.offset, r.payload.decode()] for r in df.collect())
        # a timeline for the test's message when a wait times out
        print(f"{time.strftime('%H:%M:%S')} batch {batch_id}: {len(rows)} rows", flush=True)
        if not rows:
            return
        if crash_prefix and any(r[1].startswith(crash_prefix) for r in rows):
            (out_dir / f"crashing-{batch_id}.json").write_text(json.dumps(rows))
            time.sleep(600)  # killed here
        tmp = out_dir / f".batch-{batch_id}.tmp"
        tmp.write_text(json.dumps(rows))
        tmp.replace(out_dir / f"batch-{batch_id}.json")

    query = (
        spark.readStream.format("zmq")
        .option("endpoint", endpoint)
        .option("socket", "pull")
        .option("mode", "bind")
        .option("wal", wal)
        .option("leaseSeconds", os.environ.get("DRIVER_LEASE_SECONDS", "30"))
        .load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    print(f"{time.strftime('%H:%M:%S')} started", flush=True)
    query.awaitTermination(240)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
