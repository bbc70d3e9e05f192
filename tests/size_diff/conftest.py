"""The size_diff tests use the verify tests' fixture runtimes (tests/verify/fixture)."""

from tests.verify.conftest import expected_clean, expected_grown, fixture_build  # noqa: F401
