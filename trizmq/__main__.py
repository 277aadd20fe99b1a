"""``python -m trizmq``: the ``trizmq`` command line (see docs/cli.md)."""

from trizmq.cli import main

if __name__ == "__main__":
    main()
