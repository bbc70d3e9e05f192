"""Which layer of runtime/ defines a symbol: the kernels' shared code, or the core.

Attribution (attribution.py) gives an op its kernel function, a (tag, dtype)
its dispatch case and a class its methods. The rest of Pare's code was all
"core", but two kinds of code live there:

  core            runtime/core, executor, registry, c_api, pal: the loader,
                  the executor, the planner, the C API. Every runtime carries
                  it, whatever its manifest selects.
  shared kernels  runtime/kernels/ code that no single op owns (the GEMM,
                  im2col, depthwise rows, reduction loops, dtype conversion):
                  a runtime carries it because a selected kernel calls it,
                  and one that selects no such kernel has none of it.

The runtime is linked from two bitcode modules with exactly this split
(//runtime:bitcode's api_bitcode.bc and kernels_bitcode.bc, see
rules/private/select_link.sh), but a bundle does not ship them, so the layer
is read from the sources the runtime was built from: a symbol is shared
kernel code when its first namespace below pare:: is one only runtime/kernels/
declares (gemm, depthwise, classes, ...; `kernels` and `tags` too, which the
registry declares only for the kernels' inventory), or when it is a function
or member of namespace pare (or pare::detail) whose definition, at column 0,
stands only in runtime/kernels/. tests/size_diff/test_layers.py checks this
rule against the two bitcode modules, symbol by symbol.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from pare.messages import DEFAULT_RUNTIME_DIR, SOURCE_SUFFIXES, _blank_comments

KERNELS = "kernels"
# Namespaces the registry declares only to name what runtime/kernels defines:
# `pare::kernels` holds the operators' kernel functions (inventory.h), and
# `pare::tags` one struct per kernel tag.
_INVENTORY_NAMESPACES = frozenset({"kernels", "tags"})
# Namespaces every layer uses, where the definition decides.
_SHARED_NAMESPACES = frozenset({"detail", "(anonymous namespace)"})

_NAMESPACE = re.compile(r"^\s*namespace\s+([A-Za-z_]\w*)\s*\{", re.M)
# A definition at column 0: `Type name(`, `Type Class::member(`, `Class::Class(`.
_DEFINITION = re.compile(
    r"^(?![\s#}/])(?!namespace\b|using\b|static_assert\b|struct\b|class\b|enum\b|template\b)"
    r"[^;=(]*?\b([A-Za-z_][\w:]*(?:operator\s*\(\s*\)|operator\s*\S+)?)\s*\("
)
_MENTIONED = re.compile(r"\bpare::([A-Za-z_]\w*)::")
_SPECIAL = re.compile(r"^(?:vtable|typeinfo|typeinfo name|guard variable|construction vtable) for ")


def _strip_templates(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def qualified_parts(demangled: str) -> list[str] | None:
    """The components of a pare:: symbol's qualified name below pare::, without template arguments,
    parameters or return type; None for a symbol outside namespace pare."""
    name = _SPECIAL.sub("", demangled)
    name = _strip_templates(name)
    # Parameters: the first '(' that is not part of "(anonymous namespace)" or "operator()".
    name = name.replace("(anonymous namespace)", "\0")
    name = name.replace("operator()", "operator\1")
    # The qualified name is the last word before them (a template's return type comes first).
    name = name.split("(", 1)[0].strip().rsplit(" ", 1)[-1]
    name = name.replace("\0", "(anonymous namespace)").replace("operator\1", "operator()")
    if not name.startswith("pare::"):
        return None
    parts = [p for p in name[len("pare::") :].split("::") if p]
    return parts or None


class Layers:
    """Reads runtime/'s sources once; says whether a symbol is shared kernel code."""

    def __init__(self, runtime_dir: Path | str | None = None):
        root = Path(runtime_dir) if runtime_dir is not None else DEFAULT_RUNTIME_DIR
        self.available = root.is_dir()
        namespaces: dict[str, set[str]] = defaultdict(set)  # namespace -> layers declaring it
        definitions: dict[str, set[str]] = defaultdict(set)  # "fn" / "Class::member" -> layers defining it
        if self.available:
            for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
                layer = path.relative_to(root).parts[0]
                code = _blank_comments(path.read_text(encoding="utf-8"))
                for m in _NAMESPACE.finditer(code):
                    namespaces[m.group(1)].add(layer)
                for line in code.split("\n"):
                    m = _DEFINITION.match(line)
                    if m and not line.rstrip().endswith(";"):
                        definitions[_key(m.group(1).replace(" ", "").split("::"))].add(layer)
        self.kernel_namespaces = frozenset(
            ns for ns, layers in namespaces.items() if layers == {KERNELS} and ns not in _SHARED_NAMESPACES
        ) | (_INVENTORY_NAMESPACES if self.available else frozenset())
        self._kernel_definitions = frozenset(k for k, layers in definitions.items() if layers == {KERNELS})
        self._other_definitions = frozenset(k for k, layers in definitions.items() if layers - {KERNELS})

    def is_shared_kernel_code(self, demangled: str) -> bool:
        """Whether a Pare symbol is defined in runtime/kernels/ (and so is carried only for the kernels that
        call it); False for core code and for anything the sources do not place."""
        parts = qualified_parts(demangled)
        if not parts:
            return False
        # A template of any layer instantiated for a kernel (dispatch<tags::..., kernels::...>) is the
        # kernel's code: only runtime/kernels/ names kernel namespaces.
        if any(ns in self.kernel_namespaces for ns in _MENTIONED.findall(demangled)):
            return True
        scope = [p for p in parts[:-1] if p != "(anonymous namespace)"]
        if scope and scope[0] in self.kernel_namespaces:
            return True
        # A function of namespace pare (or pare::detail), or a member of one of its classes: where the
        # sources define it decides.
        return _key(parts) in self._kernel_definitions

    def defined_outside_kernels(self, demangled: str) -> bool:
        """Whether the sources define this function in a layer other than runtime/kernels/ (a core header's
        inline function, say, which the kernels' module may hold a copy of)."""
        parts = qualified_parts(demangled)
        return bool(parts) and _key(parts) in self._other_definitions


def _key(parts: list[str]) -> str:
    named = [p for p in parts if p not in _SHARED_NAMESPACES and p != "pare"]
    return "::".join(named[-2:]) if len(named) >= 2 else (named[-1] if named else "")
