"""The filesystem connector's readers: Markdown, CSV and text to passages and claims."""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from vera_client.config import ResilienceSettings
from vera_worker.connectors.contract import Pending, SourceContext, in_scope
from vera_worker.connectors.folder.connector import FolderConnector
from vera_worker.domain.extracted_claims import validate_extraction
from vera_worker.domain.formats import mime_type, parse_record
from vera_worker.domain.markdown import parse_markdown
from vera_worker.domain.records import RecordFormatError, predicate_name
from vera_worker.domain.statements import looks_like_entity


def test_front_matter_keys_state_claims_of_the_subject() -> None:
    record = parse_markdown(
        "---\ntitle: Runbook\nsubject: billing-api\nowner: Payments Team\nruns_on: k8s-hanoi-2\n"
        "ports: [8080, 8443]\nvalid_from: 2026-09-01\nfunctional: [runs on]\n---\n# Runbook\n\nText.\n",
        name="runbooks/billing.md",
    )
    claims = {(c.predicate, c.object): c for c in record.claims}
    assert set(claims) == {("OWNER", "Payments Team"), ("RUNS_ON", "k8s-hanoi-2"),
                           ("PORTS", "8080"), ("PORTS", "8443")}  # fmt: skip
    runs_on = claims["RUNS_ON", "k8s-hanoi-2"]
    assert runs_on.subject == "billing-api" and runs_on.functional and runs_on.object_is_entity
    assert runs_on.valid_from == "2026-09-01"
    assert runs_on.fact_text == "billing-api runs on k8s-hanoi-2"
    assert not claims["PORTS", "8080"].object_is_entity
    assert record.title == "Runbook"
    assert [p.text for p in record.passages] == ["Text."]


def test_key_value_lines_are_claims_with_their_passage_as_evidence() -> None:
    text = "# INC-7\n\nIntro paragraph.\n\n## Facts\n\n- **Severity:** SEV-2\n- **Owner**: Edge Team\n"
    record = parse_markdown(text, name="inc.md")
    assert [(c.subject, c.predicate, c.object) for c in record.claims] == [
        ("INC-7", "SEVERITY", "SEV-2"),
        ("INC-7", "OWNER", "Edge Team"),
    ]
    evidence = record.passages[record.claims[0].chunk or 0]
    assert "**Severity:** SEV-2" in evidence.text and evidence.heading == "INC-7 > Facts"


def test_passages_follow_headings_and_keep_unicode_offsets() -> None:
    text = (
        "---\ntitle: Sổ tay\n---\n# Sổ tay\n\n## Vị trí\n\n"
        "Dịch vụ chạy trên cụm k8s-hanoi-1.\n\nĐoạn hai.\n\n## Khác\n\nCuối.\n"
    )
    record = parse_markdown(text, name="vi.md")
    assert [(p.heading, p.text) for p in record.passages] == [
        ("Sổ tay > Vị trí", "Dịch vụ chạy trên cụm k8s-hanoi-1.\n\nĐoạn hai."),
        ("Sổ tay > Khác", "Cuối."),
    ]
    normalised = text
    for passage in record.passages:
        assert normalised[passage.char_start : passage.char_end] == passage.text


def test_a_long_paragraph_is_cut_at_sentence_ends_and_code_stays_whole() -> None:
    sentence = "This sentence is about forty characters. "
    code = "```\n" + "x = 1\n\n" * 200 + "```"
    record = parse_markdown(f"# T\n\n{sentence * 100}\n\n{code}\n", name="long.md", max_passage_chars=500)
    prose = [p for p in record.passages if not p.text.startswith("```")]
    assert len(prose) > 5 and all(len(p.text) <= 500 for p in prose)
    assert all(p.text.endswith(".") for p in prose)
    assert [p.text for p in record.passages if p.text.startswith("```")] == [code]


def test_tables_state_claims_with_their_validity_and_are_not_repeated_as_text() -> None:
    text = (
        "# Services\n\n| service | runs on | owner | since |\n|---|---|---|---|\n"
        "| billing-api | vm-cluster-1 | Payments | 2025-03-01 |\n"
        "| billing-api | k8s-hanoi-2 | | 2026-09-01 |\n"
    )
    record = parse_markdown(text, name="cmdb.md", functional=["RUNS_ON"])
    assert [(c.subject, c.predicate, c.object, c.valid_from, c.functional) for c in record.claims] == [
        ("billing-api", "RUNS_ON", "vm-cluster-1", "2025-03-01", True),
        ("billing-api", "OWNER", "Payments", "2025-03-01", False),
        ("billing-api", "RUNS_ON", "k8s-hanoi-2", "2026-09-01", True),
    ]
    assert record.passages == ()


def test_csv_rows_state_claims_and_bad_dates_warn() -> None:
    data = "service,runs on,valid from\nledger-db,db-cluster-a,2025-01-10\nx-api,vm-1,someday\n,orphan,\n"
    record = parse_record("cmdb/services.csv", data.encode())
    assert [(c.subject, c.object, c.valid_from) for c in record.claims] == [
        ("ledger-db", "db-cluster-a", "2025-01-10"),
        ("x-api", "vm-1", None),
    ]
    assert record.warnings == ("cmdb/services.csv row 2: 'valid from' is not a date: 'someday'",)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("a.md", b"---\ntitle: [unclosed\n---\nbody", "malformed YAML front matter"),
        ("a.md", b"---\n- a list\n---\nbody", "front matter must be a YAML mapping"),
        ("a.md", b"\xef\xbb\xbfcaf\xe9", "starts with a UTF-8 byte-order mark but is not UTF-8"),
        ("a.txt", b"a\x00b", "NUL"),
        ("a.pdf", b"%PDF", "a.pdf: cannot be read as PDF"),
        ("a.odt", b"PK", "not a Markdown, CSV, text or document file"),
    ],
)
def test_unreadable_records_raise_one_clear_error(name: str, data: bytes, message: str) -> None:
    with pytest.raises(RecordFormatError, match=message):
        parse_record(name, data)


def test_names_and_values() -> None:
    assert predicate_name("runs on") == "RUNS_ON"
    assert predicate_name("ownedBy") == "OWNED_BY"
    assert predicate_name("snake_case key") == "SNAKE_CASE_KEY"
    assert predicate_name("chạy trên") is None  # as vera.normalize_predicate: A-Z only
    assert looks_like_entity("k8s-hanoi-2") and looks_like_entity("Payments Team")
    for literal in ["42", "2026-09-01", "https://x.example", "A whole sentence, with a comma.", "true"]:
        assert not looks_like_entity(literal), literal
    assert mime_type("a/B.MD") == "text/markdown" and mime_type("Makefile") is None


def test_plain_text_is_paragraphs() -> None:
    record = parse_record("notes.txt", b"First para\nstill first.\n\n\nSecond.")
    assert [p.text for p in record.passages] == ["First para\nstill first.\n\n\nSecond."]
    record = parse_record("notes.txt", ("A. " * 600).encode())
    assert len(record.passages) > 1


def _folder_context(
    root: Path, known: Mapping[str, str], asked: list[list[str]], scope: str | None = None
) -> SourceContext:
    def signatures(keys: Sequence[str]) -> Mapping[str, str]:
        asked.append(list(keys))
        return {key: known[key] for key in keys if key in known}

    return SourceContext(
        name="docs", config={"root": str(root)}, uri=None, token=None, token_env=None,
        resilience=ResilienceSettings(), allowed_roots=(root,), organisation_roots=(str(root),), scope=scope,
        signatures=signatures,
    )  # fmt: skip


def test_the_folder_yields_only_files_whose_signature_changed_and_lists_every_path(tmp_path: Path) -> None:
    for name in ("a.md", "b.md", "new.md", "sub/old.md", "skip.bin"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("# T\n\nText.\n", encoding="utf-8")
    os.utime(tmp_path / "b.md", ns=(10**18, 10**18))
    stat_a, stat_b = (tmp_path / "a.md").stat(), (tmp_path / "b.md").stat()
    known = {"a.md": f"{stat_a.st_mtime_ns}:{stat_a.st_size}", "b.md": f"1:{stat_b.st_size}"}
    asked: list[list[str]] = []
    connector = FolderConnector(_folder_context(tmp_path.resolve(), known, asked))
    pages = connector.poll(None)
    page = next(pages)  # the files are read while their page is in hand (the root stays open)
    assert (page.untouched, page.planned) == (1, 3)
    assert asked == [["a.md", "b.md", "new.md", "sub/old.md"]]  # one lookup, no body read for it
    assert all(isinstance(item, Pending) for item in page.items)
    assert [item.key for item in page.items] == ["b.md", "new.md", "sub/old.md"]
    pending = page.items[0]
    assert isinstance(pending, Pending) and pending.signature == f"{10**18}:{stat_b.st_size}"
    assert pending.read() == b"# T\n\nText.\n"
    assert pending.convert(b"# T\n\nText.\n").uri == (tmp_path.resolve() / "b.md").as_uri()
    assert list(pages) == []
    assert sorted(connector.slim()) == ["a.md", "b.md", "new.md", "sub/old.md"]
    scoped = FolderConnector(_folder_context(tmp_path.resolve(), known, [], scope="sub"))
    assert [item.key for page in scoped.poll(None) for item in page.items] == ["sub/old.md"]
    assert list(scoped.slim()) == ["sub/old.md"]
    assert in_scope("sub/old.md", "sub") and not in_scope("subway.md", "sub") and in_scope("x", None)


def test_what_the_sql_api_would_refuse_is_left_out_with_a_warning_not_a_lost_file() -> None:
    long_value = "x" * 2500
    bomb = (
        "---\nsubject: svc\na: &a {b: {c: {d: {e: 1}}}}\nlong: " + long_value + "\nowner: Team\n---\nText.\n"
    )
    record = parse_record("odd.md", bomb.encode())
    assert ("OWNER", "Team") in [(c.predicate, c.object) for c in record.claims]
    assert len(record.claims) < 200  # bounded by the nesting limit, not 2**24
    assert any("nests deeper than 3 levels" in w for w in record.warnings)
    assert any("'long' is longer than 2000 characters" in w for w in record.warnings)
    code = "```\n" + "line of code\n" * 3000 + "```"
    pieces = parse_record("code.md", f"# T\n\n{code}\n".encode()).passages
    assert len(pieces) > 1 and all(len(p.text) <= 20_000 for p in pieces)
    assert "".join(p.text + "\n" for p in pieces).count("line of code") == 3000


def test_a_table_of_more_claims_than_one_call_takes_is_cut_with_a_warning() -> None:
    rows = "".join(f"svc-{i},node-{i}\n" for i in range(10_050))
    record = parse_record("big.csv", ("service,runs on\n" + rows).encode())
    assert len(record.claims) == 10_000
    assert record.warnings[-1] == "big.csv: 10,050 claims, only the first 10,000 are published"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "semicolons.csv",
            'service;runs on;valid from\nledger-db;db-cluster-a;2025-01-10\nx-api;"vm-1; rack 2";\n',
        ),
        (
            "tabs.csv",
            "service\truns on\tvalid from\nledger-db\tdb-cluster-a\t2025-01-10\nx-api\tvm-1; rack 2\t\n",
        ),
        ("pipes.csv", "service|runs on|valid from\nledger-db|db-cluster-a|2025-01-10\nx-api|vm-1; rack 2|\n"),
        (
            "quoted.csv",
            'service,runs on,valid from\n"ledger-db","db-cluster-a","2025-01-10"\nx-api,"vm-1; rack 2",\n',
        ),
    ],
)
def test_csv_dialects_are_sniffed(name: str, text: str) -> None:
    """A semicolon export (a spreadsheet's in much of Europe), tabs, pipes and quoted fields all read
    as the same table; before, anything but commas was one column: no claims, no warning."""
    record = parse_record(name, text.encode())
    assert [(c.subject, c.predicate, c.object, c.valid_from) for c in record.claims] == [
        ("ledger-db", "RUNS_ON", "db-cluster-a", "2025-01-10"),
        ("x-api", "RUNS_ON", "vm-1; rack 2", None),
    ]
    assert record.warnings == ()


def test_an_unterminated_quote_is_a_warning_naming_its_line() -> None:
    text = 'service,runs on\nledger-db,db-cluster-a\nx-api,"vm-1\ny-api,vm-2\n'
    record = parse_record("cmdb.csv", text.encode())
    assert [(c.subject, c.object) for c in record.claims] == [("ledger-db", "db-cluster-a")]
    assert record.warnings == (
        "cmdb.csv line 3: a quoted field opened here is never closed (unterminated quote); "
        "the rows from here on are left out",
    )


@pytest.mark.parametrize(
    ("encoded", "warning"),
    [
        ("service,owner\nledger-db,Zoë Café\n".encode(), None),
        (codecs.BOM_UTF8 + "service,owner\nledger-db,Zoë Café\n".encode(), None),
        ("service,owner\nledger-db,Zoë Café\n".encode("utf-16"), None),  # with its byte-order mark
        ("service,owner\nledger-db,Zoë Café\n".encode("cp1252"), "not UTF-8 (byte 26); read as cp1252"),
        ("service,owner\nledger-db,Zoë Café\n".encode("latin-1"), "not UTF-8 (byte 26); read as cp1252"),
        ("service,owner\nledger-db,Zoë Café\n".encode("utf-16-le"), "read as utf-16-le"),
    ],
)
def test_encodings_are_detected_and_a_guess_is_said(encoded: bytes, warning: str | None) -> None:
    record = parse_record("owners.csv", encoded)
    assert [(c.subject, c.object) for c in record.claims] == [("ledger-db", "Zoë Café")]
    if warning is None:
        assert record.warnings == ()
    else:
        assert len(record.warnings) == 1 and record.warnings[0].startswith("owners.csv: ")
        assert warning in record.warnings[0]


def test_a_few_latin_bytes_are_not_read_as_utf16() -> None:
    record = parse_record("note.md", b"caf\xe9 au lait")
    assert [p.text for p in record.passages] == ["café au lait"]
    assert record.warnings == ("note.md: not UTF-8 (byte 3); read as cp1252",)


def test_front_matter_keys_without_latin_letters_warn() -> None:
    record = parse_record("team.md", "---\n所有者: Payments Team\n---\n".encode())
    assert record.claims == () and record.passages == ()
    assert record.warnings == (
        "team.md front matter: key '所有者' cannot be a predicate (it needs letters A-Z)",
    )


def test_old_dates_are_kept_not_clamped() -> None:
    """History is knowledge too (issue 28): a museum's record valid since 1797 keeps 1797, for
    its claims and for the time its episode is dated by; an extracted claim of 1700 keeps it."""
    record = parse_markdown(
        "---\nsubject: Royal Cabinet of Curiosities\nhoused_in: the old palace\nvalid_from: 1797-05-01\n---\n"
        "# Museum\n\nOpen since 1797.\n",
        name="museum.md",
    )
    assert [c.valid_from for c in record.claims] == ["1797-05-01"]
    assert record.dated_at == "1797-05-01"
    passage = "The Cascadia earthquake struck on 26 January 1700."
    answer = {"claims": [{"subject": "Cascadia", "predicate": "struck on", "object": "26 January 1700",
                          "confidence": 0.9, "valid_from": "1700-01-26", "evidence_start": 4,
                          "evidence_end": len(passage), "evidence": passage[4:]}]}  # fmt: skip
    extracted = validate_extraction(answer, passage, known_predicates={"STRUCK_ON"}, max_claims=10)
    assert [c["valid_from"] for c in extracted.claims] == ["1700-01-26T00:00:00+00:00"]
