"""The benchmark runner for snapshotter (issue 5): ``python -m benchmarks --help``.

Nothing here runs in the test suite except one smoke test at ~200 files.
"""
