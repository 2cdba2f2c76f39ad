"""The SQL and Python examples of README.md and docs/*.md, as the example tests read them.

Every fenced ```sql and ```python block carries a marker on the line above it (an HTML
comment, which no Markdown renderer shows):

    <!-- example: runs; prints "vm-cluster-1" "cluster blue" -->
        run against the demo data (psql with the demo key in :key and the local MiniLM's
        vector of "who owns ledger-db?" in :embedding, or python with VERA_API_KEY and the
        database in the environment); each quoted text must be printed
    <!-- example: syntax only, needs Citus -->
        cannot run here (the reason says why): parsed only

A SQL example may end a statement with `-- refused with CODE ...`: that statement must
fail with that SQLSTATE, and no other may fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = ("sql", "python")
FENCE = re.compile(r"^```\s*(\w*)")
MARKER = re.compile(r"^<!--\s*example:\s*(runs|syntax only)\s*(.*?)\s*-->\s*$")
QUOTED = re.compile(r'"([^"]+)"')
REFUSED = re.compile(r"--\s*refused with (\w{5})\b")


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # of the opening fence, from 1
    language: str
    code: str
    marker: str | None  # "runs", "syntax only", or None when unmarked
    note: str  # after the marker: the expected texts, or why it cannot run

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def expected(self) -> list[str]:
        """The texts a run must print."""
        return QUOTED.findall(self.note) if self.marker == "runs" else []

    @property
    def refusals(self) -> list[str]:
        """The SQLSTATEs the example's statements must fail with, in order."""
        return REFUSED.findall(self.code)


def read_examples(path: Path) -> list[Example]:
    """The sql and python blocks of one Markdown file, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].startswith("```")), len(lines))
        language = opening.group(1).lower()
        if language in LANGUAGES:
            marked = MARKER.match(lines[index - 1]) if index > 0 else None
            found.append(
                Example(
                    path=path,
                    line=index + 1,
                    language=language,
                    code="\n".join(lines[index + 1 : end]) + "\n",
                    marker=marked.group(1) if marked else None,
                    note=marked.group(2) if marked else "",
                )
            )
        index = end + 1
    return found


def documented_examples(root: Path) -> list[Example]:
    """Every sql and python block of README.md and docs/*.md."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [example for page in pages for example in read_examples(page)]


PSQL_META = re.compile(r"\\(bind|gset|g)\b.*$")


def sql_statements_only(code: str) -> str:
    """The SQL of a psql example without what only psql understands (\\bind ... \\g, \\gset,
    :'variables', which become literals) and without transaction control, for a syntax check
    inside a PL/pgSQL body."""
    kept = []
    for line in code.splitlines():
        stripped = re.sub(r":'(\w+)'", r"'\1'", PSQL_META.sub(";", line))  # :'org' is psql's quoted variable
        if re.fullmatch(r"\s*(begin|commit|rollback)\s*;.*", stripped, flags=re.IGNORECASE):
            continue
        kept.append(stripped)
    return "\n".join(kept)
