"""The optional de-duplication header frame, in one place below the package and the data source.

Both :mod:`trizmq.spark` (which re-exports it and unpacks it) and the data source
(which writes it) use it; it lives here so that neither imports the other for it.
"""

from __future__ import annotations

import struct

__all__ = ["HEADER"]

#: the optional de-duplication header frame: batch id (-1 for a batch write), partition, sequence
HEADER = struct.Struct(">qiq")
