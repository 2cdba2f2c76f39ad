"""Atlassian Document Format (the JSON tree Jira Cloud's v3 API gives rich text
in) to plain text with Markdown's light marks: headings, list items, quotes and
code blocks keep their shape; a mention, an emoji, a card or a status reads as
its text; media are left out. A node type this does not know is read through
its children, so a new type loses at most its own decoration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 100  # a tree nested deeper is refused (a crafted body must not exhaust the stack)


class AdfError(ValueError):
    """The value is not an ADF tree this can read."""


def adf_text(value: Any) -> str:
    """The text of an ADF document (or of a plain string, as v2 and some fields give it)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, Mapping):
        raise AdfError("a rich-text field that is neither a string nor an ADF object")
    blocks: list[str] = []
    _blocks(value, blocks, prefix="", depth=0)
    return "\n\n".join(b for b in blocks if b.strip()).strip()


def _blocks(node: Mapping[str, Any], out: list[str], *, prefix: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise AdfError(f"an ADF tree nested deeper than {MAX_DEPTH} levels")
    kind = node.get("type")
    children = [c for c in node.get("content") or [] if isinstance(c, Mapping)]
    attrs = _attrs(node)
    if kind in ("paragraph", "heading"):
        text = _inline(children, depth + 1)
        if kind == "heading":
            level = attrs.get("level")
            text = "#" * max(1, min(level if isinstance(level, int) else 1, 6)) + " " + text
        out.append(prefix + text)
    elif kind == "codeBlock":
        out.append(prefix + "```\n" + _inline(children, depth + 1) + "\n```")
    elif kind in ("bulletList", "orderedList", "taskList", "blockquote", "tableRow"):
        out.extend(prefix + line for line in _nested(str(kind), children, depth))
    elif kind == "rule":
        out.append("---")
    elif kind in ("mediaSingle", "mediaGroup", "media"):
        return
    elif kind == "text" or (not children and _leaf(node)):
        out.append(prefix + _leaf(node))
    elif children and all(c.get("type") in _INLINE for c in children):
        out.append(prefix + _inline(children, depth + 1))
    else:  # doc, listItem, panel, table, tableCell, expand, an unknown block: its children
        for child in children:
            _blocks(child, out, prefix=prefix, depth=depth + 1)


def _nested(kind: str, children: list[Mapping[str, Any]], depth: int) -> list[str]:
    """A list's items, a quote's lines or a table row's cells, each child's blocks read first."""
    inner = []
    for child in children:
        found: list[str] = []
        _blocks(child, found, prefix="", depth=depth + 1)
        inner.append(found)
    if kind == "blockquote":
        return ["> " + block.replace("\n", "\n> ") for found in inner for block in found]
    if kind == "tableRow":
        return ["| " + " | ".join(" ".join(found).replace("\n", " ") for found in inner) + " |"]
    return [
        (f"{number}. " if kind == "orderedList" else "- ") + "\n  ".join(" ".join(found).splitlines())
        for number, found in enumerate(inner, start=1)
    ]


_INLINE = frozenset({"text", "hardBreak", "mention", "emoji", "inlineCard", "date", "status", "placeholder"})


def _inline(nodes: list[Mapping[str, Any]], depth: int) -> str:
    if depth > MAX_DEPTH:
        raise AdfError(f"an ADF tree nested deeper than {MAX_DEPTH} levels")
    parts = []
    for node in nodes:
        if node.get("type") == "hardBreak":
            parts.append("\n")
        elif node.get("content"):
            parts.append(_inline([c for c in node["content"] if isinstance(c, Mapping)], depth + 1))
        else:
            parts.append(_leaf(node))
    return "".join(parts)


# what an inline node without text reads as: the first of its attributes that it has
_LEAF_ATTRS = {
    "mention": ("text",), "emoji": ("text", "shortName"), "inlineCard": ("url",), "blockCard": ("url",),
    "embedCard": ("url",), "status": ("text",), "date": ("timestamp",),
}  # fmt: skip


def _leaf(node: Mapping[str, Any]) -> str:
    attrs = _attrs(node)
    for name in _LEAF_ATTRS.get(str(node.get("type")), ()):
        if attrs.get(name):
            return str(attrs[name])
    text = node.get("text")
    return text if isinstance(text, str) else ""


def _attrs(node: Mapping[str, Any]) -> Mapping[str, Any]:
    attrs = node.get("attrs")
    return attrs if isinstance(attrs, Mapping) else {}
