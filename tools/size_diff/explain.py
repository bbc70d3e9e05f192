"""`report --explain NAME`: why one symbol, string, section or manifest entry is in this runtime.

    print(explain(build_report(...), "pare::Loader::decode_value"))

NAME is looked up in a report's rows, in this order: a section (`.rela.dyn`,
`__TEXT,__cstring` or just `__cstring`); a manifest entry (an op, a
`tag/dtype`, a class); a row by its full name, by a function's name without
its parameters, or a string by its text. The answer gives the bytes per
platform, the bucket they are attributed to, and why: the manifest entry
that selects them, "core: every runtime carries it", "shared kernel code:
selected kernels call it", or for the bytes
between symbols the rule's reason (the message and its file, the table whose
pointers a relocation fixes, ...). A name that matches nothing is an error
naming the closest names.
"""

from __future__ import annotations

import difflib
from collections import defaultdict

from tools.size_diff.errors import SizeDiffError
from tools.verify.expected import CLASS, KERNEL_DTYPE, OP

MAX_ROWS = 12


def bucket_reason(bucket: str, key: str | None) -> str:
    if bucket == OP:
        return f"op {key}: the manifest selects it (expected_symbols.json); without it this goes"
    if bucket == KERNEL_DTYPE:
        tag, _, dtype = (key or "").partition("/")
        return f"kernel tag {tag}, dtype {dtype}: the manifest selects this dtype case of the tag"
    if bucket == CLASS:
        return f"class {key}: the manifest selects it"
    if bucket == "shared_kernels":
        return (
            "shared kernel code: runtime/kernels/ code of no single op (the GEMM, im2col, shared loops), here "
            "because selected kernels call it; a runtime whose kernels do not has none of it"
        )
    if bucket == "core":
        return "core: every runtime carries it (Pare code of no single op, dtype case or class)"
    if bucket == "other":
        return "other: outside Pare (crt files, compiler runtime), linked into every runtime"
    return "unattributed: no symbol covers these bytes and no rule explains them"


def _base(name: str) -> str:
    """A function's name without its parameters (and return type): `pare::Loader::decode_value`."""
    head = name.split("(", 1)[0]
    depth, cut = 0, 0
    for i, c in enumerate(head):  # the last space outside template brackets starts the name
        depth += c == "<"
        depth -= c == ">"
        if c == " " and depth == 0:
            cut = i + 1
    return head[cut:]


def _n(x: int) -> str:
    return f"{x:,}"


def explain(report: dict, name: str) -> str:
    platforms: dict = report["platforms"]
    target = report.get("target") or "this report"
    query = name.strip()

    # A section.
    sections = {
        s["name"]
        for p in platforms.values()
        for s in p["sections"]
        if s["name"] == query or s["name"].endswith("," + query)
    }
    if sections:
        return _explain_sections(platforms, sorted(sections))

    # A manifest entry.
    for bucket in (OP, KERNEL_DTYPE, CLASS):
        if any(query in p["attribution"][bucket] for p in platforms.values()):
            return _explain_entry(platforms, bucket, query)

    # Rows: exact name, function name, string text.
    quoted = '"' + query + '"'
    rows = defaultdict(dict)  # row name -> platform -> row
    for plat, p in platforms.items():
        for r in p["symbols"]:
            if r["name"] in (query, quoted) or _base(r["name"]) == query:
                rows[r["name"]][plat] = r
    if rows:
        return _explain_rows(platforms, rows)

    candidates = set()
    for p in platforms.values():
        candidates.update(s["name"] for s in p["sections"])
        for bucket in (OP, KERNEL_DTYPE, CLASS):
            candidates.update(p["attribution"][bucket])
        candidates.update(_base(r["name"]) if r.get("kind") is None else r["name"] for r in p["symbols"])
    close = difflib.get_close_matches(query, sorted(candidates), n=3, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else "; give a symbol, a section, an op, a tag/dtype or a class"
    raise SizeDiffError(f"nothing named {query!r} in {target}{hint}")


def _per_platform(platforms: dict, bytes_of) -> list[str]:
    return [f"  {plat}: {_n(bytes_of(p))} B" for plat, p in platforms.items()]


def _explain_sections(platforms: dict, names: list[str]) -> str:
    out = []
    for name in names:
        out.append(f"section {name}")
        owners: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        reasons: dict[tuple, str | None] = {}
        for plat, p in platforms.items():
            sec = next((s for s in p["sections"] if s["name"] == name), None)
            if sec is None:
                out.append(f"  {plat}: not in this platform's library")
                continue
            out.append(
                f"  {plat}: {_n(sec['bytes'])} B: {_n(sec['bytes'] - sec['unattributed'])} B attributed, "
                f"{_n(sec['unattributed'])} B unattributed"
            )
            for r in p["symbols"]:
                if r["section"] == name:
                    kind = r.get("kind", "symbol")
                    group = (r["bucket"], r.get("key"), kind, r["name"] if kind not in ("symbol", "string") else None)
                    owners[group][plat] += r["bytes"]
                    reasons.setdefault(group, r.get("reason"))
        ranked = sorted(owners.items(), key=lambda kv: (-max(kv[1].values()), kv[0][0], kv[0][1] or "", kv[0][2]))
        if ranked:
            out.append("  attributed to:")
        for group, per in ranked[:MAX_ROWS]:
            bucket, key, kind, row = group
            who = bucket + (f" {key}" if key else "")
            sizes = ", ".join(f"{plat} {_n(v)} B" for plat, v in sorted(per.items()))
            what = {"symbol": "symbols", "string": "strings"}.get(kind, row)
            out.append(f"    {who} ({what}): {sizes}")
            reason = reasons[group] if kind not in ("symbol", "string") else bucket_reason(bucket, key)
            out.append(f"      why: {reason}")
        if len(ranked) > MAX_ROWS:
            out.append(f"    ({len(ranked) - MAX_ROWS} more owners)")
    return "\n".join(out) + "\n"


def _explain_entry(platforms: dict, bucket: str, key: str) -> str:
    title = {OP: "op", KERNEL_DTYPE: "kernel tag/dtype", CLASS: "class"}[bucket]
    out = [f"{title} {key}"]
    for plat, p in platforms.items():
        n = p["attribution"][bucket].get(key, 0)
        inc = p.get("op_inclusive", {}).get(key) if bucket == OP else None
        extra = f" ({_n(inc)} B with its dtype cases)" if inc is not None and inc != n else ""
        out.append(f"  {plat}: {_n(n)} B{extra}")
    if not any(p["attribution"][bucket].get(key) for p in platforms.values()):
        out.append("  why: not linked: the manifest does not select it (expected_symbols.json lists it as absent)")
        return "\n".join(out) + "\n"
    out.append(f"  why: {bucket_reason(bucket, key)}")
    rows: dict[str, dict[str, int]] = defaultdict(dict)
    for plat, p in platforms.items():
        for r in p["symbols"]:
            if r["bucket"] == bucket and r.get("key") == key:
                rows[r["name"]][plat] = r["bytes"]
    out.append("  its bytes:")
    ranked = sorted(rows.items(), key=lambda kv: (-max(kv[1].values()), kv[0]))
    for row, per in ranked[:MAX_ROWS]:
        out.append(f"    {row}: " + ", ".join(f"{plat} {_n(v)} B" for plat, v in sorted(per.items())))
    if len(ranked) > MAX_ROWS:
        out.append(f"    ({len(ranked) - MAX_ROWS} more)")
    return "\n".join(out) + "\n"


def _explain_rows(platforms: dict, rows: dict[str, dict[str, dict]]) -> str:
    out = []
    ranked = sorted(rows.items(), key=lambda kv: (-max(r["bytes"] for r in kv[1].values()), kv[0]))
    for row, per in ranked[:MAX_ROWS]:
        first = next(iter(per.values()))
        out.append(row if first.get("kind") is None else f"{row} ({first['kind']})")
        for plat in platforms:
            r = per.get(plat)
            out.append(f"  {plat}: " + (f"{_n(r['bytes'])} B in {r['section']}" if r else "not in this library"))
        owners = {(r["bucket"], r.get("key"), r.get("reason")) for r in per.values()}
        for bucket, key, reason in sorted(owners, key=lambda o: (o[0], o[1] or "", o[2] or "")):
            out.append(f"  attributed to: {bucket}" + (f" {key}" if key else ""))
            out.append(f"  why: {reason or bucket_reason(bucket, key)}")
    if len(ranked) > MAX_ROWS:
        out.append(f"({len(ranked) - MAX_ROWS} more matches)")
    return "\n".join(out) + "\n"
