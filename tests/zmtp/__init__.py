"""Unit tests of the sans-I/O protocol core :mod:`trizmq.zmtp` (byte strings only)."""
