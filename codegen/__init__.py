"""Pare codegen: manifest model, runtime inventory, selection header generators.

Library API (the CLI in `codegen.cli` is a thin layer over it):

    m = codegen.load("apps/demo/manifest.yaml")          # or loads(text)
    inv = codegen.load_inventory("runtime/inventory")
    sel = codegen.resolve(m, inv, allow_unknown_ops=False)
    files = codegen.render(sel)                           # {relative path: text}
    codegen.write_outputs(out_dir, files)

Manifest schema: docs/manifest.md. Header contract: docs/selection.md.
"""

from codegen.errors import CodegenError, InventoryError, ManifestError
from codegen.generate import (
    EXPECTED_SYMBOLS_JSON,
    OUTPUT_FILES,
    SELECTED_CLASSES_H,
    SELECTED_KERNEL_DTYPES_H,
    SELECTED_OPS_H,
    expected_symbols,
    expected_symbols_json,
    render,
    selected_classes_h,
    selected_kernel_dtypes_h,
    selected_ops_h,
    write_outputs,
)
from codegen.inventory import DEFAULT_INVENTORY_DIR, Inventory, InventoryOp, KernelTag, load_inventory
from codegen.manifest import Manifest, Operator, load, loads
from codegen.manifest_merge import ManifestDiff, MergeResult, diff, merge
from codegen.selection import Selection, resolve

__all__ = [
    "CodegenError",
    "InventoryError",
    "ManifestError",
    "Manifest",
    "Operator",
    "ManifestDiff",
    "MergeResult",
    "load",
    "loads",
    "merge",
    "diff",
    "Inventory",
    "InventoryOp",
    "KernelTag",
    "load_inventory",
    "DEFAULT_INVENTORY_DIR",
    "Selection",
    "resolve",
    "render",
    "write_outputs",
    "expected_symbols",
    "expected_symbols_json",
    "selected_ops_h",
    "selected_kernel_dtypes_h",
    "selected_classes_h",
    "SELECTED_OPS_H",
    "SELECTED_KERNEL_DTYPES_H",
    "SELECTED_CLASSES_H",
    "EXPECTED_SYMBOLS_JSON",
    "OUTPUT_FILES",
]
