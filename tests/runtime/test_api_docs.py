"""The public API is documented, the docs name what the code has, and the
Python bindings match the C header.

- Every function runtime/c_api/pare.h declares has a comment (its own, or
  the one heading its group of declarations), docs/c_api.md's "Every
  function" list names exactly the header's functions, and the Python SDK
  binds exactly them, with the header's signatures: pare/runtime.py's
  ctypes return and argument types, and its structures' fields, are checked
  against the declarations parsed from pare.h.
- Every public function, method and property of the Python SDK (pare/) has
  a docstring.
"""

from __future__ import annotations

import ctypes
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


# C types of pare.h -> the ctypes type a binding must use.
_P = ctypes.c_void_p
_SCALARS = {
    "void": None,
    "pare_status": ctypes.c_int,
    "int": ctypes.c_int,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "double": ctypes.c_double,
}
_STRUCTS = {"pare_tensor_info": pare.runtime._TensorInfo, "pare_memory_stats": pare.runtime._MemoryStats}


def _ctype(c_type: str):
    """The ctypes type for a C type spelled in pare.h ("const char*", "pare_method**")."""
    t = c_type.replace("const ", "").replace(" ", "")
    stars = len(t) - len(t.rstrip("*"))
    base = t.rstrip("*")
    if base == "char" and stars >= 1:
        inner, stars = ctypes.c_char_p, stars - 1
    elif base in ("pare_program", "pare_method", "void") and stars >= 1:
        inner, stars = _P, stars - 1
    elif base in _STRUCTS and stars >= 1:
        return ctypes.POINTER(_STRUCTS[base])
    else:
        inner = _SCALARS[base]
    for _ in range(stars):
        inner = ctypes.POINTER(inner)
    return inner


def _declarations() -> dict[str, tuple[str, list[str]]]:
    """name -> (return C type, [parameter C types]) of every PARE_API function."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    out = {}
    for m in re.finditer(r"PARE_API\s+([^;(]*?)\b(pare_\w+)\s*\(([^)]*)\)\s*;", text):
        ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
        types = []
        if params != "void":
            for param in params.split(","):
                param = " ".join(param.split())
                types.append(re.sub(r"\s*\b\w+$", "", param))  # drop the parameter's name
        out[name] = (ret, types)
    return out


def test_python_bindings_have_the_header_signatures():
    declarations = _declarations()
    assert len(declarations) == len(_header_functions())
    wrong = []
    for name, (ret, params) in sorted(declarations.items()):
        bound_ret, bound_args = pare.runtime._SIGNATURES[name]
        want_ret, want_args = _ctype(ret), [_ctype(p) for p in params]
        if bound_ret is not want_ret or list(bound_args) != want_args:
            wrong.append(
                f"{name}: pare.h {ret}({', '.join(params)}) wants ({want_ret}, {want_args}), "
                f"pare/runtime.py binds ({bound_ret}, {list(bound_args)})"
            )
    assert not wrong, "ctypes signatures that differ from pare.h:\n" + "\n".join(wrong)


def test_python_structures_have_the_header_fields():
    text = HEADER.read_text()
    max_dim = int(re.search(r"#define PARE_MAX_DIM (\d+)", text).group(1))
    assert pare.runtime.MAX_DIM == max_dim
    for c_name, structure in _STRUCTS.items():
        body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (c_name, c_name), text, flags=re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = []
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            m = re.fullmatch(r"(.+?)\s*\b(\w+)(?:\[(\w+)\])?", " ".join(decl.split()))
            c_type, field, count = m.groups()
            t = _ctype(c_type)
            fields.append((field, t * max_dim if count else t))
        assert [(n, t) for n, t in structure._fields_] == fields, c_name
        assert ctypes.sizeof(structure) == sum(ctypes.sizeof(t) for _, t in fields), c_name
