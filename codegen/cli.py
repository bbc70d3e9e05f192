"""`python -m codegen {generate,check,inventory}`: a thin layer over the library.

User errors print one line to stderr (no traceback) and exit 2; warnings go to
stderr as `warning: ...` lines and do not change the exit status.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence

from codegen.errors import CodegenError
from codegen.generate import render, write_outputs
from codegen.inventory import Inventory, load_inventory
from codegen.manifest import Manifest, load
from codegen.selection import ALLOW_UNKNOWN_OPS_FLAG, Selection, resolve

EXIT_USER_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m codegen",
        description="Generate Pare's selection headers from a manifest (docs/manifest.md, docs/selection.md).",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="{generate,check,inventory}")

    def inventory_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--inventory",
            metavar="DIR",
            default=None,
            help="the runtime's .def files (default: runtime/inventory in this repository)",
        )

    def allow_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            ALLOW_UNKNOWN_OPS_FLAG,
            dest="allow_unknown_ops",
            action="store_true",
            help="drop operators and custom classes the runtime does not provide, with a warning, instead of failing",
        )

    g = sub.add_parser("generate", help="write <out>/pare_selection/*.h and <out>/expected_symbols.json")
    g.add_argument("--manifest", required=True, metavar="M", help="manifest YAML (PyTorch selected-operators schema)")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory")
    g.add_argument(
        "--manifest-name",
        metavar="NAME",
        default=None,
        help="how the runtime's 'not selected' errors name the manifest (default: its path)",
    )
    g.add_argument(
        "--build-feature",
        action="append",
        default=[],
        metavar="NAME",
        help="also select this build feature (repeatable), e.g. output_buffers; the selective_runtime "
        "rule's build_features attribute passes these",
    )
    g.add_argument(
        "--platform-lacks",
        action="append",
        default=[],
        metavar="PLATFORM:BACKEND",
        help="the runtime is built for PLATFORM, which has no driver for delegate backend BACKEND: a manifest "
        "that selects the backend fails (repeatable; the selective_runtime rule passes these from "
        "platforms/table.bzl)",
    )
    g.add_argument(
        "--runtime",
        metavar="LABEL",
        default=None,
        help="the selective_runtime the selection is for, and its platforms, as --platform-lacks's message names them",
    )
    inventory_arg(g)
    allow_arg(g)

    c = sub.add_parser("check", help="validate a manifest against the runtime and summarise what it selects")
    c.add_argument("manifest", metavar="M")
    inventory_arg(c)
    allow_arg(c)

    i = sub.add_parser("inventory", help="print what the runtime contains")
    inventory_arg(i)
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def with_build_features(manifest: Manifest, names: Sequence[str], inventory: Inventory) -> Manifest:
    """`manifest` also selecting build features `names`, which must be the
    runtime's (unlike a manifest's own list, where an unknown feature is a
    warning, a feature asked for by name is an error)."""
    unknown = sorted(set(names) - set(inventory.build_features))
    if unknown:
        raise CodegenError(
            f"--build-feature {', '.join(unknown)}: not a build feature of the runtime ({inventory.root}); "
            f"its features: {', '.join(inventory.build_features) or 'none'}"
        )
    return dataclasses.replace(manifest, build_features=manifest.build_features | frozenset(names))


def check_backends(selection: Selection, lacks: Sequence[str], runtime: str | None) -> None:
    """Fails when the manifest names a delegate backend (its
    pare::delegate_init.<backend> operator) that a platform of the runtime
    has no driver for; a manifest selecting every operator (the full
    runtime) is not asking for any backend by name."""
    if selection.include_all_operators:
        return
    for entry in lacks:
        platform, _, backend = entry.partition(":")
        if f"pare::delegate_init.{backend}" in selection.operators:
            raise CodegenError(
                f"{runtime or 'the runtime'}: the manifest selects backend '{backend}', which {platform} has no "
                f'driver for: declare backends = ["{backend}"] on the runtime (its default platforms then leave '
                f"{platform} out) or leave {platform} out of its platforms attribute"
            )


def _warn(selection: Selection) -> None:
    for w in selection.warnings:
        print(f"warning: {w}", file=sys.stderr)


def _summary(sel: Selection) -> str:
    inv = sel.inventory
    n_dtypes = sum(len(d) for d in sel.kernel_dtypes.values())
    total_dtypes = sum(len(t.dtypes) for t in inv.tags.values())
    ops = f"all {len(inv.ops)}" if sel.include_all_operators else f"{len(sel.operators)} of {len(inv.ops)}"
    dtypes = (
        f"all {total_dtypes}"
        if sel.include_all_kernel_dtypes
        else f"{n_dtypes} of {total_dtypes} in {len(sel.kernel_dtypes)} of {len(inv.tags)} tags"
    )
    classes = (
        f"all {len(inv.classes)}"
        if sel.include_all_custom_classes
        else f"{len(sel.custom_classes)} of {len(inv.classes)}"
    )
    features = (
        f"all {len(inv.build_features)}"
        if sel.include_all_build_features
        else f"{len(sel.build_features)} of {len(inv.build_features)}"
    )
    return f"operators: {ops}; kernel dtypes: {dtypes}; custom classes: {classes}; build features: {features}"


def _inventory_text(inv: Inventory) -> str:
    lines = [
        f"{inv.root}: {len(inv.ops)} operators, {len(inv.tags)} kernel tags, "
        f"{len(inv.classes)} custom classes, {len(inv.build_features)} build features"
    ]
    lines.append("operators:")
    width = max((len(n) for n in inv.ops), default=0)
    lines += [f"  {op.name:<{width}}  pare::kernels::{op.function}  ({op.location})" for op in inv.ops.values()]
    lines.append("kernel tags:")
    lines += [f"  {t.name}: {' '.join(t.dtypes)}  ({t.location})" for t in inv.tags.values()]
    lines.append("custom classes:")
    lines += [f"  {name}  ({loc})" for name, loc in inv.classes.items()]
    lines.append("build features:")
    lines += [f"  {name}  ({loc})" for name, loc in inv.build_features.items()]
    return "\n".join(lines) + "\n"


def _inventory_json(inv: Inventory) -> str:
    data = {
        "operators": [{"name": o.name, "function": o.function, "declared_at": o.location} for o in inv.ops.values()],
        "kernel_tags": [
            {"name": t.name, "dtypes": list(t.dtypes), "declared_at": t.location} for t in inv.tags.values()
        ],
        "custom_classes": [{"name": n, "declared_at": at} for n, at in inv.classes.items()],
        "build_features": [{"name": n, "declared_at": at} for n, at in inv.build_features.items()],
    }
    return json.dumps(data, indent=2) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "inventory":
            inv = load_inventory(args.inventory)
            sys.stdout.write(_inventory_json(inv) if args.json else _inventory_text(inv))
            return 0
        manifest = load(args.manifest)
        inventory = load_inventory(args.inventory)
        extra = getattr(args, "build_feature", [])
        if extra:
            manifest = with_build_features(manifest, extra, inventory)
        selection = resolve(manifest, inventory, allow_unknown_ops=args.allow_unknown_ops)
        if args.command == "generate":
            check_backends(selection, args.platform_lacks, args.runtime)
        _warn(selection)
        if args.command == "check":
            print(f"{args.manifest}: ok; {_summary(selection)}")
        else:
            write_outputs(args.out, render(selection, args.manifest_name))
        return 0
    except CodegenError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
