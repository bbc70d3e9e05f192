"""The commands the user docs show, read from their fenced blocks.

README.md and docs/*.md mark every fenced block with what it holds:

- `sh`: commands a user runs as written. Each one is run by a test or by CI
  (COVERED in test_documented_commands.py says which), so a documented
  command cannot silently stop working.
- `text`: illustrations: a command's synopsis (`[--option]`), what a tool
  prints, a long run CI leaves out (`make zoo`), a layout.
- a language (`python`, `c`, `starlark`, `json`, ...): code, not commands.

A command is one logical line of an `sh` block: comments dropped, `\\`
continuations joined, blank lines skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).absolute().parents[2]
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string: "sh", "text", "python", ""
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    def commands(self) -> list[str]:
        """The block's commands, one per logical line."""
        out: list[str] = []
        pending = ""
        for raw in self.body.splitlines():
            line = raw.strip()
            if not pending and (not line or line.startswith("#")):
                continue
            line = _strip_comment(line)
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            command = (pending + line).strip()
            pending = ""
            if command:
                out.append(command)
        if pending.strip():
            out.append(pending.strip())
        return out


def _strip_comment(line: str) -> str:
    """`cmd   # comment` -> `cmd`; a # inside quotes stays."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def user_docs() -> list[Path]:
    """README.md and docs/*.md: the docs a user reads for commands."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    return [
        Block(path, text.count("\n", 0, m.start()) + 1, m.group("info").strip(), m.group("body"))
        for m in FENCE.finditer(text)
    ]


def sh_block(path: Path, after_heading: str) -> Block:
    """The first `sh` block under the heading `after_heading` of `path`."""
    text = path.read_text()
    heading = re.search(rf"^#+ {re.escape(after_heading)}\s*$", text, re.M)
    if heading is None:
        raise AssertionError(f"{path.relative_to(REPO)} has no heading {after_heading!r}")
    line = text.count("\n", 0, heading.start()) + 1
    for block in blocks(path):
        if block.line > line and block.info == "sh":
            return block
    raise AssertionError(f"{path.relative_to(REPO)}: no sh block under {after_heading!r}")
