"""What the Jira, Confluence and Slack connectors make of their items, without a
server: Atlassian Document Format to text, Confluence's storage format to
Markdown, an issue's fields and changelog to claims."""

from __future__ import annotations

from typing import Any

import pytest

from vera_client.config import ResilienceSettings
from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.confluence.storage import storage_markdown
from vera_worker.connectors.contract import ItemSkipped
from vera_worker.connectors.http import rate_limited
from vera_worker.connectors.jira.adf import MAX_DEPTH, AdfError, adf_text
from vera_worker.connectors.jira.mapping import issue_record
from vera_worker.connectors.slack.connector import _plain


def _text(text: str, **more: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **more}


def test_adf_keeps_the_shape_of_headings_lists_quotes_code_and_tables() -> None:
    doc = {"type": "doc", "version": 1, "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [_text("Impact")]},
        {"type": "paragraph", "content": [
            _text("Paged "), {"type": "mention", "attrs": {"text": "@Mai"}}, {"type": "hardBreak"},
            _text("at night", marks=[{"type": "strong"}])]},
        {"type": "bulletList", "content": [
            {"type": "listItem", "content": [{"type": "paragraph", "content": [_text("ledger-db")]}]},
            {"type": "listItem", "content": [{"type": "paragraph", "content": [_text("billing-api")]}]}]},
        {"type": "blockquote", "content": [{"type": "paragraph", "content": [_text("quoted")]}]},
        {"type": "codeBlock", "attrs": {"language": "bash"}, "content": [_text("systemctl restart x")]},
        {"type": "table", "content": [{"type": "tableRow", "content": [
            {"type": "tableCell", "content": [{"type": "paragraph", "content": [_text("a")]}]},
            {"type": "tableCell", "content": [{"type": "paragraph", "content": [_text("b")]}]}]}]},
        {"type": "mediaSingle", "content": [{"type": "media", "attrs": {"id": "x"}}]},
        {"type": "someFutureBlock", "content": [{"type": "paragraph", "content": [_text("still read")]}]},
    ]}  # fmt: skip
    assert adf_text(doc) == (
        "## Impact\n\nPaged @Mai\nat night\n\n- ledger-db\n\n- billing-api\n\n> quoted\n\n"
        "```\nsystemctl restart x\n```\n\n| a | b |\n\nstill read"
    )
    assert adf_text("plain v2 text ") == "plain v2 text" and adf_text(None) == ""


def test_adf_refuses_what_is_not_a_document_and_trees_too_deep() -> None:
    with pytest.raises(AdfError, match="neither a string nor an ADF object"):
        adf_text(42)
    deep: dict[str, Any] = _text("x")
    for _ in range(MAX_DEPTH + 5):
        deep = {"type": "panel", "content": [deep]}
    with pytest.raises(AdfError, match="nested deeper"):
        adf_text(deep)


def test_an_issues_changelog_gives_its_status_history() -> None:
    issue = {"key": "OPS-1", "fields": {
        "summary": "Rotate keys", "status": {"name": "Done"}, "assignee": None,
        "created": "2026-01-01T09:00:00.000+0700", "updated": "2026-01-03T09:00:00.000+0700",
        "issuelinks": [{"type": {"inward": "is blocked by", "outward": "blocks"},
                        "inwardIssue": {"key": "OPS-0"}}],
        "customfield_1": "left out"},
        "changelog": {"histories": [
            {"created": "2026-01-02T09:00:00.000+0700",
             "items": [{"field": "status", "fromString": "To Do", "toString": "In Progress"}]},
            {"created": "2026-01-03T09:00:00.000+0700",
             "items": [{"field": "status", "fromString": "In Progress", "toString": "Done"}]}]}}  # fmt: skip
    record = issue_record(issue, "OPS-1")
    status = [(c.object, c.valid_from, c.valid_to) for c in record.claims if c.predicate == "STATUS"]
    assert status == [
        ("To Do", "2026-01-01T02:00:00+00:00", "2026-01-02T02:00:00+00:00"),
        ("In Progress", "2026-01-02T02:00:00+00:00", "2026-01-03T02:00:00+00:00"),
        ("Done", "2026-01-03T02:00:00+00:00", None),
    ]
    assert all(c.functional for c in record.claims if c.predicate == "STATUS")
    assert [c.fact_text for c in record.claims if c.predicate == "IS_BLOCKED_BY"] == [
        "OPS-1 is blocked by OPS-0"
    ]
    assert not any("left out" in c.fact_text for c in record.claims)
    assert record.title == "OPS-1: Rotate keys" and record.observed_at == "2026-01-03T02:00:00+00:00"
    with pytest.raises(ItemSkipped, match="no 'fields' object"):
        issue_record({"key": "OPS-2"}, "OPS-2")


def test_storage_format_becomes_markdown_without_scripts_or_macro_parameters() -> None:
    xhtml = (
        '<h2>Recovery</h2><p>See <ac:link><ri:page ri:content-title="Exporter FAQ" /></ac:link>.</p>'
        '<ul><li>one</li><li>two</li></ul><ac:structured-macro ac:name="code">'
        '<ac:parameter ac:name="language">bash</ac:parameter>'
        "<ac:plain-text-body><![CDATA[make run]]></ac:plain-text-body></ac:structured-macro>"
        "<script>alert(1)</script><style>p{}</style>"
    )
    markdown = storage_markdown(xhtml)
    assert markdown.startswith("## Recovery\n\nSee Exporter FAQ.")
    assert "- one\n- two" in markdown and "make run" in markdown
    assert "alert" not in markdown and "bash" not in markdown and "p{}" not in markdown


def test_slack_links_and_mentions_read_as_text() -> None:
    assert _plain(
        "ask <@U0LINH> in <#C01|ops> about <https://x.example/a|the runbook> &amp; <https://y.example>"
    ) == ("ask @U0LINH in ops about the runbook & https://y.example")


def test_slack_mentions_read_as_names_when_a_resolver_is_given() -> None:
    names = {"U0LINH": "Linh Tran"}
    assert _plain("ask <@U0LINH> and <@U0GONE>", lambda user: names.get(user, user)) == (
        "ask @Linh Tran and @U0GONE"
    )


@pytest.mark.parametrize("rate", [0, 0.05, 1001, -2, True, "10", None])
def test_a_request_rate_out_of_range_is_refused_in_one_line(rate: object) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        rate_limited("wiki", {"requests_per_second": rate}, ResilienceSettings())
    assert str(refused.value).startswith(
        "source 'wiki': config \"requests_per_second\" must be a number from 0.1 to 1,000, not "
    )


def test_a_request_rate_sets_the_token_buckets_and_none_keeps_the_workers() -> None:
    worker = ResilienceSettings(rate_per_second=7, burst=3)
    assert rate_limited("wiki", {"requests_per_second": 2}, worker).rate_per_second == 2.0
    assert rate_limited("wiki", {"requests_per_second": 2}, worker).burst == 3
    assert rate_limited("wiki", {}, worker) is worker
