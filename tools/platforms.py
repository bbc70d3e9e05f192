"""Pare's target platforms for Python tools, read from platforms/table.bzl.

platforms/table.bzl is the one table of platforms: Bazel's platform()s and
toolchains are generated from its rows, and Python reads the same rows here
instead of keeping a copy. The table is Starlark, and its rows are literal
`struct(name = ..., ...)` calls, which Python's ast reads as they are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tools import REPO_ROOT

TABLE = REPO_ROOT / "platforms" / "table.bzl"


@dataclass(frozen=True)
class Platform:
    name: str
    constraints: tuple[str, ...]
    flavor: str  # "android", "ios" or "linux"
    triple: str
    shared_ext: str
    ship: bool  # a product target, built by selective runtimes by default
    lacks_backends: tuple[str, ...] = ()  # delegate backends without a driver there (docs/delegates.md)


def read_table(path: Path = TABLE) -> tuple[Platform, ...]:
    """The rows of PLATFORMS in `path`, in order; ValueError names what is unreadable."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PLATFORMS"]:
            rows = []
            for item in getattr(node.value, "elts", ()):
                if not (isinstance(item, ast.Call) and getattr(item.func, "id", None) == "struct"):
                    raise ValueError(f"{path}:{item.lineno}: a PLATFORMS row must be a literal struct(...)")
                try:
                    fields = {kw.arg: ast.literal_eval(kw.value) for kw in item.keywords}
                    fields["constraints"] = tuple(fields["constraints"])
                    fields["lacks_backends"] = tuple(fields.get("lacks_backends", ()))
                    rows.append(Platform(**fields))
                except (ValueError, TypeError, KeyError) as e:
                    raise ValueError(f"{path}:{item.lineno}: unreadable platform row ({e})") from None
            if rows:
                return tuple(rows)
    raise ValueError(f"{path}: no `PLATFORMS = [struct(...), ...]` found")


PLATFORMS = read_table()
SHIPPED_PLATFORMS = tuple(p.name for p in PLATFORMS if p.ship)  # ("android_arm64", "ios_arm64", "linux_x86_64")
