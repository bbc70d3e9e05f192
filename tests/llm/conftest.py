"""What the tests/llm suites share: the full runtime, loaded once a module."""

import pytest

from pare.runtime import Runtime


@pytest.fixture(scope="module")
def runtime(full_runtime) -> Runtime:
    return Runtime(full_runtime)
