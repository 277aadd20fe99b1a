"""ZeroMQ streams into and out of Apache Spark, through PySpark's Python Data Source API.

Install with ``pip install 'trizmq[spark]'`` (PySpark >= 4.2 and pyarrow), then::

    import trizmq.spark
    trizmq.spark.register(spark)
    df = spark.readStream.format("zmq").option("endpoint", "tcp://*:5557").load()

Options and delivery guarantees are in docs/spark.md. This package is not imported
by ``trizmq`` itself; pyspark is imported only when :func:`register` (or the data
source module) is used, so the spool (``python -m trizmq.spark.spool``) runs
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from ._header import HEADER

__all__ = ["HEADER", "register", "unpack_header"]


def unpack_header(frame: bytes) -> tuple[int, int, int]:
    """(batch id, partition, sequence) of a header frame written with ``header=true``."""
    batch_id, partition, seq = HEADER.unpack(frame[: HEADER.size])
    return int(batch_id), int(partition), int(seq)


def register(spark: SparkSession) -> None:
    """Register the "zmq" data source with a SparkSession."""
    from ._datasource import ZmqDataSource

    spark.dataSource.register(ZmqDataSource)
