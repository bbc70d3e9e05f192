"""A VerifyResult as a human report or as JSON (schema pare.verify_result, version 1)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from tools.verify.binary import Symbol
from tools.verify.expected import CLASS, KERNEL_DTYPE, OP
from tools.verify.verify import LEAK, MISSING, VerifyResult

RESULT_SCHEMA = "pare.verify_result"
RESULT_VERSION = 1

_KIND_PLURAL = {OP: "operators", KERNEL_DTYPE: "kernel dtypes", CLASS: "classes"}
_LEAK_FIX = (
    "something outside the selection still references them: find the caller "
    "(llvm-objdump -d --no-show-raw-insn <unstripped lib> | grep <mangled name>) and route it through "
    "TORCH_SELECTIVE_SCHEMA / the dtype dispatch, or select them in the manifest"
)
_MISSING_FIX = (
    "the selection keeps them but the linker dropped them (or they were never compiled): register the kernel "
    "through TORCH_SELECTIVE_SCHEMA, dispatch the dtype through pare::dispatch, or re-trace if the manifest is stale"
)


def _rel(path: Path) -> str:
    """Relative to the working directory when below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _symbol_line(s: Symbol) -> str:
    size = f"{s.size} B" if s.size else "-"
    mangled = f"  [{s.name}]" if s.name != s.demangled else ""
    return f"      {s.demangled}  ({size}){mangled}"


def render_text(result: VerifyResult, *, verbose: bool = False, max_symbols: int = 8) -> str:
    b, exp = result.binary, result.expected
    verdict = "PASS" if result.passed else "FAIL"
    inferred = " (inferred)" if result.platform_inferred else ""
    lines = [f"pare verify: {verdict}  {result.platform.name}{inferred}  {_rel(b.path)}"]
    if result.shipped is not b:
        lines.append(f"  shipped:  {_rel(result.shipped.path)} ({result.shipped.file_bytes} bytes)")
    lines.append(f"  expected: {_rel(exp.path)} (manifest sha256 {exp.manifest_sha256[:12] or '?'})")
    lines.append(f"  binary:   {b.format}, {b.arch}, {len(b.symbols)} defined symbols")
    shipped = result.shipped
    lines.append(f"  relocations: {shipped.relocations}, {shipped.relocation_bytes} bytes (docs/size.md)")
    for note in b.notes:
        lines.append(f"  note: {note}")

    leaks, missing = result.leaks, result.missing
    if leaks:
        lines += ["", f"Leaks: {len(leaks)} unselected {'entry is' if len(leaks) == 1 else 'entries are'} still linked"]
        for r in leaks:
            e = r.entry
            lines.append(
                f"  {e.label()}  (expect absent; declared at {e.declared_at or '?'}): {len(r.symbols)} symbol(s)"
            )
            lines += [_symbol_line(s) for s in r.symbols[:max_symbols]]
            if len(r.symbols) > max_symbols:
                lines.append(f"      ... and {len(r.symbols) - max_symbols} more (--json lists all)")
        lines.append(f"  fix: {_LEAK_FIX}")
    if missing:
        lines += [
            "",
            f"Missing: {len(missing)} selected {'entry is' if len(missing) == 1 else 'entries are'} not linked",
        ]
        for r in missing:
            e = r.entry
            lines.append(
                f"  {e.label()}  (expect present; declared at {e.declared_at or '?'}): no symbol matches {e.symbol}"
            )
        lines.append(f"  fix: {_MISSING_FIX}")
    if result.export_leaks:
        n = len(result.export_leaks)
        lines += ["", f"Exports beyond the C API: {n} symbol(s) in {_rel(result.shipped.path)}"]
        for x in result.export_leaks:
            mangled = f" [{x.export.name}]" if x.export.name != x.export.demangled else ""
            lines.append(f"  {x.export.demangled}{mangled}: {x.reason}")
    if result.feature_imports:
        lines += [
            "",
            f"Imports of unselected build features: {len(result.feature_imports)} in {_rel(result.shipped.path)}",
        ]
        for f in result.feature_imports:
            lines.append(
                f"  {f.name}: only build feature {f.feature}'s code imports it, and the manifest does not "
                f"select {f.feature}; fix: keep {f.feature}'s code behind feature_selected(FeatureId::"
                f"{f.feature}) so the linker drops it"
            )
    if result.failed_facts:
        lines += ["", f"Platform {result.platform.name}:"]
        for f in result.failed_facts:
            lines.append(f"  {f.check}: want {f.expected}, got {f.actual}; fix: {f.fix}")

    lines += ["", "Summary:"]
    for kind in (OP, KERNEL_DTYPE, CLASS):
        rs = [r for r in result.entries if r.entry.kind == kind]
        if not rs:
            continue
        expects = Counter(r.entry.expect for r in rs)
        spread = ", ".join(f"{expects[k]} {k}" for k in ("present", "allowed", "absent") if expects[k])
        bad = sum(1 for r in rs if r.status in (LEAK, MISSING))
        state = "all as expected" if not bad else f"{bad} wrong"
        lines.append(f"  {_KIND_PLURAL[kind]}: {len(rs)} ({spread}): {state}")
    exports = result.shipped.exports
    lines.append(
        f"  exports: {len(exports)}, {len(exports) - len(result.export_leaks)} allowed"
        f" (C API pare_*{', JNI' if result.jni else ''}), {len(result.export_leaks)} leaked"
    )
    unselected = sorted(f for f, on in result.expected.build_features.items() if not on)
    lines.append(
        f"  imports: {len(result.shipped.imports)}, {len(result.feature_imports)} of unselected build "
        f"features ({', '.join(unselected) or 'none unselected'})"
    )
    fact_names = ", ".join(f.check for f in result.facts)
    state = "ok" if not result.failed_facts else f"{len(result.failed_facts)} failed"
    lines.append(f"  platform facts ({fact_names}): {state}")
    if verbose:
        lines += ["", "Entries:"]
        for r in result.entries:
            lines.append(f"  [{r.status}] {r.entry.label()}: expect {r.entry.expect}, {len(r.symbols)} symbol(s)")
            lines += [_symbol_line(s) for s in r.symbols]
        lines += ["", "Exports:"]
        lines += [f"  {e.demangled}" for e in exports]
    return "\n".join(lines) + "\n"


def _symbol_json(s: Symbol) -> dict:
    return {"name": s.demangled, "mangled": s.name, "address": s.address, "bytes": s.size, "section": s.section}


def to_json(result: VerifyResult) -> dict:
    def entry_json(r) -> dict:
        e = r.entry
        d = {
            "kind": e.kind,
            "name": e.key,
            "expect": e.expect,
            "status": r.status,
            "declared_at": e.declared_at,
            "symbols": [_symbol_json(s) for s in r.symbols],
        }
        if e.kind == KERNEL_DTYPE:
            d.update(tag=e.tag, dtype=e.dtype)
        return d

    return {
        "schema": RESULT_SCHEMA,
        "version": RESULT_VERSION,
        "passed": result.passed,
        "platform": result.platform.name,
        "platform_inferred": result.platform_inferred,
        "binary": str(result.binary.path),
        "shipped": str(result.shipped.path),
        "expected_symbols": str(result.expected.path),
        "manifest_sha256": result.expected.manifest_sha256,
        "format": result.binary.format,
        "arch": result.binary.arch,
        "jni": result.jni,
        "relocations": {"form": result.shipped.relocations, "bytes": result.shipped.relocation_bytes},
        "summary": {
            "leaks": len(result.leaks),
            "missing": len(result.missing),
            "export_leaks": len(result.export_leaks),
            "failed_platform_facts": len(result.failed_facts),
            "feature_imports": len(result.feature_imports),
            "defined_symbols": len(result.binary.symbols),
        },
        "entries": [entry_json(r) for r in result.entries],
        "exports": [
            {"name": e.demangled, "mangled": e.name, "function": e.is_function} for e in result.shipped.exports
        ],
        "feature_imports": [{"name": f.name, "feature": f.feature} for f in result.feature_imports],
        "imports": list(result.shipped.imports),
        "export_leaks": [
            {"name": x.export.demangled, "mangled": x.export.name, "reason": x.reason} for x in result.export_leaks
        ],
        "platform_facts": [
            {
                "check": f.check,
                "ok": f.ok,
                "expected": f.expected,
                "actual": f.actual,
                **({"fix": f.fix} if not f.ok else {}),
            }
            for f in result.facts
        ],
    }


def render_json(result: VerifyResult) -> str:
    return json.dumps(to_json(result), indent=2, sort_keys=False) + "\n"
