"""trizmq's benchmark suite: ``python -m benchmarks --help``.

A command line calls it as ``from benchmarks.run import run; status = run(argv)``.
``soak.py`` is the separate soak test.
"""
