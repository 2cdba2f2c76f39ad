"""The Markdown reader on markdown-it-py (python/vera_worker/domain/markdown.py):
what the regular expressions it replaced missed (setext headings), and passage
offsets that are exact into the text for every kind of block."""

from __future__ import annotations

from vera_worker.domain.markdown import parse_markdown

MIXED = """---
title: Handbook
...
Handbook
========

Intro text.
**Owner:** Platform Team

Setup
-----

1. install
2. **Runs on:** k8s-hanoi-2

> a quote
> over two lines

<div>raw html</div>

| not | a claim table |
|-----|---------------|

```python
def f():

    return 1
```

    indented code

Trailing paragraph, Tiếng Việt có dấu.
"""


def test_a_setext_heading_is_a_heading() -> None:
    record = parse_markdown(
        "Billing API\n===========\n\n**Owner:** Payments\n\nDeploy\n------\n\nSteps.\n", name="b.md"
    )
    assert record.title == "Billing API"
    assert [(c.subject, c.predicate, c.object) for c in record.claims] == [
        ("Billing API", "OWNER", "Payments")
    ]
    assert [(p.heading, p.text) for p in record.passages] == [
        ("Billing API", "**Owner:** Payments"),
        ("Billing API > Deploy", "Steps."),
    ]


def test_every_passage_is_an_exact_span_of_the_text() -> None:
    record = parse_markdown(MIXED, name="handbook.md", max_passage_chars=60)
    text = MIXED
    assert record.passages, record
    for passage in record.passages:
        assert text[passage.char_start : passage.char_end] == passage.text
    joined = " ".join(p.text for p in record.passages)
    for piece in ("Intro text.", "1. install", "> a quote", "<div>raw html</div>", "| not | a claim table |",
                  "return 1", "indented code", "Tiếng Việt có dấu."):  # fmt: skip
        assert piece in joined, piece
    assert "title: Handbook" not in joined and "..." not in joined  # the front matter is not text
    fence = "```python\ndef f():\n\n    return 1\n```"
    assert any(fence in p.text for p in record.passages)  # a fence is never cut, blank lines and all
    assert {(c.predicate, c.object) for c in record.claims} == {
        ("OWNER", "Platform Team"),
        ("RUNS_ON", "k8s-hanoi-2"),
    }
    runs_on = next(c for c in record.claims if c.predicate == "RUNS_ON")
    assert runs_on.chunk is not None and "**Runs on:** k8s-hanoi-2" in record.passages[runs_on.chunk].text
    assert record.passages[runs_on.chunk].heading == "Handbook > Setup"


def test_windows_line_ends_are_read_as_newlines() -> None:
    record = parse_markdown("# T\r\n\r\nOne.\r\n\r\nTwo.\r\n", name="crlf.md")
    assert [p.text for p in record.passages] == ["One.\n\nTwo."]
