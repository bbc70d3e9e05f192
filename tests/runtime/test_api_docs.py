"""The public API is documented, and the docs name what the code has.

- Every function runtime/c_api/pare.h declares has a comment (its own, or
  the one heading its group of declarations), docs/c_api.md's "Every
  function" list names exactly the header's functions, and the Python SDK
  binds exactly them (pare/runtime.py's ctypes signatures).
- Every public function, method and property of the Python SDK (pare/) has
  a docstring.
"""

from __future__ import annotations

import inspect
import re

import pare.dtypes
import pare.packing
import pare.program
import pare.runtime
from tests.conftest import REPO_ROOT

HEADER = REPO_ROOT / "runtime" / "c_api" / "pare.h"
DECLARATION = re.compile(r"^PARE_API\b[^(;]*?\b(pare_\w+)\s*\(")


def _header_functions() -> dict[str, int]:
    return {m.group(1): n for n, line in enumerate(HEADER.read_text().splitlines()) if (m := DECLARATION.match(line))}


def test_every_c_function_has_a_comment():
    lines = HEADER.read_text().splitlines()
    undocumented = []
    for name, n in _header_functions().items():
        # Walk up over the declarations of the same group (and their
        # continuation lines) to the line above them: a comment's end.
        i = n - 1
        while i >= 0 and (
            lines[i].startswith("PARE_API")
            or lines[i].startswith(" ")
            and lines[i].strip()
            and not lines[i].lstrip().startswith(("*", "/*"))
        ):
            i -= 1
        if i < 0 or not lines[i].rstrip().endswith("*/"):
            undocumented.append(name)
    assert not undocumented, f"pare.h declares these without a comment saying what they do: {undocumented}"


def test_c_api_doc_lists_exactly_the_header_functions():
    doc = (REPO_ROOT / "docs" / "c_api.md").read_text()
    section = doc.split("## Every function", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\|[^|]*\| `(pare_\w+)` \|", section, flags=re.M)
    assert len(listed) == len(set(listed)), "a function is listed twice"
    header = set(_header_functions())
    assert set(listed) == header, (
        f"docs/c_api.md lacks {sorted(header - set(listed))}; lists functions pare.h lacks {sorted(set(listed) - header)}"
    )


def test_python_bindings_cover_exactly_the_header_functions():
    bound = set(pare.runtime._SIGNATURES)
    header = set(_header_functions())
    assert bound == header, f"unbound: {sorted(header - bound)}; bound but not declared: {sorted(bound - header)}"


def _public_callables():
    for module in (pare.runtime, pare.program, pare.dtypes, pare.packing):
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if inspect.isfunction(member):
                        yield f"{module.__name__}.{name}.{attr}", member
                    elif isinstance(member, property):
                        yield f"{module.__name__}.{name}.{attr}", member.fget


def test_every_public_sdk_function_has_a_docstring():
    missing = [name for name, fn in _public_callables() if not (fn.__doc__ or "").strip()]
    assert not missing, f"public SDK functions without a docstring: {missing}"
