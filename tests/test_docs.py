"""The docs agree with the code (issue 29): every `VERA_*` setting the code defines is in the
docs, every MCP tool is in the README's list, and every relative link resolves inside the
repository (no path points outside it, such as a ../shared folder a clone does not have).

A setting is documented by its full name (`VERA_LLM__JUDGE_MODEL`), or in the short form the
docs' tables and lists use: a table row, or a paragraph, that names its prefix
(`VERA_POOL__MIN_SIZE`, `VERA_MCP_OIDC__…`) and its last part as `__MAX_SIZE` or `` `ISSUER` ``
(a table's header row counts for each of its rows)."""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import AliasChoices, BaseModel
from pydantic_settings import BaseSettings

from vera_client.config import VeraSettings
from vera_mcp.config import McpSettings

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# kept equal to the tools the server registers by tests/test_mcp_output_schemas.py
TOOLS = ROOT / "tests" / "data" / "mcp_output_schemas.json"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PARENT_PATH = re.compile(r"(?<![\w/.])(?:\.\./)+[\w./-]*")


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The settings model a field nests (`OidcSettings | None` too); None for a leaf (a value,
    a list or a mapping of models is one setting, given as JSON)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    for candidate in typing.get_args(annotation) if union else (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def settings_names(model: type[BaseModel], prefix: str) -> Iterator[str]:
    """The environment variables of a settings model, nested with `__`."""
    for name, field in model.model_fields.items():
        if isinstance(field.validation_alias, AliasChoices):  # read from the named variables
            yield str(field.validation_alias.choices[0]).upper()
            continue
        nested = _model_of(field.annotation)
        if nested is not None:
            yield from settings_names(nested, f"{prefix}{name.upper()}__")
        else:
            yield f"{prefix}{name.upper()}"


def _prefix(settings: type[BaseSettings]) -> str:
    return str(settings.model_config.get("env_prefix", ""))


SETTINGS = sorted({
    *settings_names(VeraSettings, _prefix(VeraSettings)), *settings_names(McpSettings, _prefix(McpSettings))
})  # fmt: skip


def units(text: str) -> Iterator[str]:
    """The docs' text in units: each table row with its header row, and each paragraph."""
    header: str | None = None
    paragraph: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            if header is None:
                header = line
            yield f"{header}\n{line}"
            continue
        header = None
        if line.strip():
            paragraph.append(line)
        elif paragraph:
            yield "\n".join(paragraph)
            paragraph = []


def documented(name: str, text: str, parts: list[str]) -> bool:
    if re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", text):
        return True
    if "__" not in name:
        return False
    prefix, leaf = name.rsplit("__", 1)
    prefix += "__"
    short = re.compile(rf"__{re.escape(leaf)}(?![A-Za-z0-9_])|`{re.escape(leaf)}`", re.IGNORECASE)
    return any(prefix in part and short.search(part) for part in parts)


def test_the_walk_finds_nested_and_aliased_settings() -> None:
    assert {"VERA_DB__DSN", "VERA_EMBEDDER__RESILIENCE__BURST", "VERA_LLM__PRICES"} <= set(SETTINGS)
    assert {"VERA_MCP_OIDC__ISSUER", "VERA_MCP_QUOTAS__READ", "OTEL_EXPORTER_OTLP_ENDPOINT"} <= set(SETTINGS)
    assert "VERA_LLM__PRICES__INPUT_PER_MILLION" not in SETTINGS  # a mapping: one JSON setting
    assert documented("VERA_POOL__MAX_SIZE", "", ["`VERA_POOL__MIN_SIZE`, `__MAX_SIZE`"])
    assert not documented("VERA_POOL__MAX_SIZE", "", ["`VERA_DB__PORT`, `__MAX_SIZE`"])


def test_every_setting_the_code_defines_is_in_the_docs() -> None:
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)
    parts = [part for doc in DOCS for part in units(doc.read_text(encoding="utf-8"))]
    missing = [name for name in SETTINGS if not documented(name, text, parts)]
    assert missing == [], f"settings the docs (README.md, docs/*.md) do not name: {missing}"


def test_the_readme_names_every_mcp_tool() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tools = sorted(json.loads(TOOLS.read_text(encoding="utf-8")))
    assert [tool for tool in tools if f"`{tool}`" not in readme] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_relative_links_and_paths_resolve_inside_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    wrong = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor of the same page
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            wrong.append(f"link {target}")
    for mentioned in PARENT_PATH.findall(text):  # ../something named in the text, linked or not
        path = (doc.parent / mentioned).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            wrong.append(f"path {mentioned}")
    assert wrong == [], f"{doc.relative_to(ROOT)} points outside the repository or at nothing: {wrong}"
