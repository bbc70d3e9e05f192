"""Two size reports of one target (base, head) -> what changed, per platform, and who changed it.

Contributors are ranked by absolute byte change: ops (their kernels),
(tag, dtype) cases, classes, shared kernels/core/other/unattributed, and single symbols.
"""

from __future__ import annotations

from tools.size_diff.attribution import BUCKETS, CORE, KEYED_BUCKETS, OTHER, SHARED_KERNELS, UNATTRIBUTED
from tools.size_diff.report import bucket_total, n, signed
from tools.verify.expected import CLASS, KERNEL_DTYPE, OP

_KIND = {OP: "op", KERNEL_DTYPE: "kernel dtype", CLASS: "class"}

DIFF_SCHEMA = "pare.size_diff"


def pct(delta: int, base: int) -> float | None:
    return None if base == 0 else 100.0 * delta / base


def _fmt_pct(p: float | None) -> str:
    return "new" if p is None else f"{p:+.2f}%"


def diff_platform(a: dict | None, b: dict | None, *, top: int = 10) -> dict:
    """Change of one platform from report entry `a` (base) to `b` (head); either may be None."""
    empty = {
        "file_bytes": 0,
        "section_bytes": 0,
        "outside_sections_bytes": 0,
        "attribution": {**{k: {} for k in KEYED_BUCKETS}, SHARED_KERNELS: 0, CORE: 0, OTHER: 0, UNATTRIBUTED: 0},
        "symbols": [],
        "op_inclusive": {},
    }
    a0, b0 = a or empty, b or empty
    out = {
        "status": "added" if a is None else "removed" if b is None else "changed",
        "file_bytes": {
            "base": a0["file_bytes"],
            "head": b0["file_bytes"],
            "delta": b0["file_bytes"] - a0["file_bytes"],
            "percent": pct(b0["file_bytes"] - a0["file_bytes"], a0["file_bytes"]),
        },
        "section_bytes": {
            "base": a0["section_bytes"],
            "head": b0["section_bytes"],
            "delta": b0["section_bytes"] - a0["section_bytes"],
        },
        "outside_sections_bytes": {"delta": b0["outside_sections_bytes"] - a0["outside_sections_bytes"]},
        "buckets": {bk: bucket_total(b0, bk) - bucket_total(a0, bk) for bk in BUCKETS},
    }
    contributors = []
    for bucket in KEYED_BUCKETS:
        va, vb = a0["attribution"][bucket], b0["attribution"][bucket]
        for key in sorted(set(va) | set(vb)):
            d = vb.get(key, 0) - va.get(key, 0)
            if d:
                item = {"kind": _KIND[bucket], "key": key, "base": va.get(key, 0), "head": vb.get(key, 0), "delta": d}
                if bucket == OP:
                    ia, ib = a0.get("op_inclusive", {}).get(key, 0), b0.get("op_inclusive", {}).get(key, 0)
                    item["delta_with_dtype_cases"] = ib - ia
                contributors.append(item)
    for bucket in (SHARED_KERNELS, CORE, OTHER, UNATTRIBUTED):
        d = out["buckets"][bucket]
        if d:
            contributors.append(
                {
                    "kind": bucket,
                    "key": None,
                    "base": bucket_total(a0, bucket),
                    "head": bucket_total(b0, bucket),
                    "delta": d,
                }
            )
    contributors.sort(key=lambda c: (-abs(c["delta"]), c["kind"], c["key"] or ""))
    out["contributors"] = contributors

    sa: dict[str, int] = {}
    for s in a0["symbols"]:
        sa[s["name"]] = sa.get(s["name"], 0) + s["bytes"]
    sb: dict[str, int] = {}
    owner: dict[str, str] = {}
    for s in b0["symbols"] + a0["symbols"]:
        owner.setdefault(s["name"], s["bucket"] + (f" {s['key']}" if s.get("key") else ""))
    for s in b0["symbols"]:
        sb[s["name"]] = sb.get(s["name"], 0) + s["bytes"]
    symbols = [
        {"name": k, "owner": owner[k], "base": sa.get(k, 0), "head": sb.get(k, 0), "delta": sb.get(k, 0) - sa.get(k, 0)}
        for k in set(sa) | set(sb)
        if sb.get(k, 0) != sa.get(k, 0)
    ]
    symbols.sort(key=lambda s: (-abs(s["delta"]), s["name"]))
    out["symbols"] = symbols[:top]
    out["symbols_changed"] = len(symbols)
    return out


def diff_reports(base: dict, head: dict, *, top: int = 10) -> dict:
    names = sorted(set(base["platforms"]) | set(head["platforms"]))
    return {
        "schema": DIFF_SCHEMA,
        "version": 1,
        "base_target": base.get("target"),
        "head_target": head.get("target"),
        "platforms": {p: diff_platform(base["platforms"].get(p), head["platforms"].get(p), top=top) for p in names},
    }


def contributor_label(c: dict) -> str:
    if c["key"] is None:
        return c["kind"].replace("_", " ")
    return f"{c['kind']} {c['key']}"


def describe_contributor(c: dict) -> str:
    tag = " (new)" if c["base"] == 0 else " (gone)" if c["head"] == 0 else ""
    text = f"{contributor_label(c)} {signed(c['delta'])} B{tag}"
    incl = c.get("delta_with_dtype_cases")
    if incl is not None and incl != c["delta"]:
        text += f" ({signed(incl)} B with its dtype cases)"
    return text


def render_markdown(d: dict, *, top: int = 10) -> str:
    title = d.get("head_target") or "(no target label)"
    if d.get("base_target") and d.get("base_target") != d.get("head_target"):
        title = f"{d['base_target']} -> {title}"
    out = [
        f"## Size diff: {title}",
        "",
        "| platform | base | head | change | % | sections | outside sections |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, p in d["platforms"].items():
        f = p["file_bytes"]
        out.append(
            f"| {name} | {n(f['base'])} | {n(f['head'])} | {signed(f['delta'])} | {_fmt_pct(f['percent'])} | "
            f"{signed(p['section_bytes']['delta'])} | {signed(p['outside_sections_bytes']['delta'])} |"
        )
    for name, p in d["platforms"].items():
        if p["status"] != "changed":
            out += ["", f"### {name}: {p['status']}"]
            continue
        if not p["contributors"] and not p["symbols"]:
            out += ["", f"### {name}: no attributed change"]
            continue
        out += ["", f"### {name}", "", "| contributor | base | head | change |", "|---|---:|---:|---:|"]
        for c in p["contributors"][:top]:
            extra = ""
            incl = c.get("delta_with_dtype_cases")
            if incl is not None and incl != c["delta"]:
                extra = f" ({signed(incl)} with dtype cases)"
            out.append(f"| {contributor_label(c)} | {n(c['base'])} | {n(c['head'])} | {signed(c['delta'])}{extra} |")
        if len(p["contributors"]) > top:
            out.append(f"| ({len(p['contributors']) - top} more) | | | |")
        if p["symbols"]:
            out += ["", "| symbol | owner | change |", "|---|---|---:|"]
            for s in p["symbols"][:top]:
                name_md = s["name"].replace("|", "\\|").replace("`", "'")
                if len(name_md) > 110:
                    name_md = name_md[:107] + "..."
                out.append(f"| `{name_md}` | {s['owner']} | {signed(s['delta'])} |")
            if p["symbols_changed"] > len(p["symbols"]):
                out.append(f"| ({p['symbols_changed'] - len(p['symbols'])} more) | | |")
    return "\n".join(out) + "\n"


__all__ = ["describe_contributor", "diff_platform", "diff_reports", "pct", "render_markdown"]
