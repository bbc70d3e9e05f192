"""Which kernel tags (and so which dtypes) each runtime operator dispatches on.

The `.def` files list operators and kernel tags separately
(runtime/kernels/README.md); what joins them is the kernel's source: a tag
is used as `PARE_DISPATCH(<tag>, ...)` or `tags::<tag>`. This module reads
runtime/kernels/<family>/*.cc and *.h (not common/: shared machinery such as
convert_into's copy_kernel reaches every op and says nothing about one) and
attributes to an operator, taking the first rule that finds a tag:

1. the tag named after it (`sqrt_kernel` for aten::sqrt) and the tags its
   kernel function names;
2. the tags of the operators it forwards to (`PARE_CALL_OP`,
   `PARE_FORWARD_SCALAR_OVERLOAD`: mul.Scalar runs mul.Tensor);
3. the tags named by helper functions of the same source file, nearest
   first (amax -> amax_amin_op -> minmax_kernel).

Fast-path tags (`fast_path_compiled<tags::...>`, e.g. the Float-only
channels-last transpose inside aten::clone) are left out: the operator runs
without them, so they do not limit its dtypes.

An operator no rule finds a tag for has no dtype dispatch: it moves or
views bytes whatever their dtype (view, permute, cat, ...). The result is
read from the sources, not from a trace, so it is what the kernels can
reach, not what a particular model used.
"""

from __future__ import annotations

import re
from pathlib import Path

from codegen.inventory import REPO_ROOT, Inventory

KERNELS_DIR = REPO_ROOT / "runtime" / "kernels"

_FUNCTION = re.compile(
    r"\b([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>,\s*&]+)?\{"
)
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch", "defined"})
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_FORWARD = re.compile(r"\b(?:PARE_CALL_OP|PARE_FORWARD_SCALAR_OVERLOAD)\([^;]*?\"((?:aten|pare)::[\w.]+)\"")
_FAST_PATH = re.compile(r"\b(?:fast_path_compiled|fast_path_selected|run_fast_path)<\s*(?:pare::)?tags::(\w+)")
_SHARED_DIRS = frozenset({"common"})


def _without_comments(text: str) -> str:
    """C++ source with comments blanked (string literals kept: forwarding names ops in them)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _function_bodies(text: str) -> dict[str, list[str]]:
    """name -> the bodies of the functions of that name defined in `text`."""
    bodies: dict[str, list[str]] = {}
    for m in _FUNCTION.finditer(text):
        if m.group(1) in _NOT_FUNCTIONS:
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        bodies.setdefault(m.group(1), []).append(text[m.end() : j])
    return bodies


def op_kernel_tags(inventory: Inventory, kernels_dir: Path = KERNELS_DIR) -> dict[str, tuple[str, ...]]:
    """{operator: the kernel tags it dispatches on, sorted}; () for an
    operator without dtype dispatch (the module docstring has the rules)."""
    sources = {
        p: _without_comments(p.read_text(encoding="utf-8"))
        for p in sorted(kernels_dir.rglob("*"))
        if p.suffix in (".cc", ".h")
    }
    files = [
        _function_bodies(text)
        for p, text in sources.items()
        if not _SHARED_DIRS & set(p.relative_to(kernels_dir).parts[:-1])
    ]
    kernel_functions = {op.function: name for name, op in inventory.ops.items()}
    fast_paths = {tag for text in sources.values() for tag in _FAST_PATH.findall(text)}
    tags = set(inventory.tags) - fast_paths
    own: dict[str, set[str]] = {}
    forwards: dict[str, set[str]] = {}
    helpers: dict[str, set[str]] = {}
    for bodies in files:
        for function, name in ((f, kernel_functions[f]) for f in bodies if f in kernel_functions):
            text = "".join(bodies[function])
            words = set(_IDENTIFIER.findall(text))
            own[name] = words & tags
            for tag in (f"{_bare(name)}_kernel", f"{_bare(name).lstrip('_')}_kernel"):
                if tag in tags:
                    own[name].add(tag)
            forwards[name] = {o for o in _FORWARD.findall(text) if o in inventory.ops and o != name}
            helpers[name] = _helper_tags(bodies, words, tags, set(kernel_functions))

    def resolve(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if own.get(name):
            return own[name]
        forwarded = set().union(*(resolve(o, seen | {name}) for o in forwards.get(name, ()) if o not in seen))
        return forwarded or helpers.get(name, set())

    return {name: tuple(sorted(resolve(name))) for name in sorted(inventory.ops)}


def _helper_tags(bodies: dict[str, list[str]], words: set[str], tags: set[str], kernels: set[str]) -> set[str]:
    """The tags named by the nearest helpers (same file) that name any."""
    seen: set[str] = set()
    level = {w for w in words if w in bodies and w not in kernels}
    while level:
        seen |= level
        found: set[str] = set()
        nxt: set[str] = set()
        for helper in level:
            helper_words = set(_IDENTIFIER.findall("".join(bodies[helper])))
            found |= helper_words & tags
            nxt |= {w for w in helper_words if w in bodies and w not in kernels and w not in seen}
        if found:
            return found
        level = nxt
    return set()


def _bare(name: str) -> str:
    """aten::max_pool2d_with_indices.default -> max_pool2d_with_indices."""
    return name.split("::", 1)[1].split(".", 1)[0]
