"""Benchmarks: speed claims measured side by side, outside the test suite.

Tests never assert on elapsed time (it depends on the machine and its load);
each module here measures one claim and prints numbers for a person to read:
`.venv/bin/python -m tools.bench.<name>` (docs/testing.md).
"""
