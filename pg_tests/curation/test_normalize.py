"""Normalisation (sql/functions/090_normalize.sql)."""

from __future__ import annotations

import pytest

from pg_tests.support.databases import Database


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("Payments-API", "payments api"),
        ("  payments   api ", "payments api"),
        ("payments_api!!", "payments api"),
        ("ＰＡＹＭＥＮＴＳ－ＡＰＩ", "payments api"),  # full-width folds to ASCII
        ("Nguyễn Văn An", "nguyễn văn an"),  # diacritics stay
        ("NGUYỄN VĂN AN", "nguyễn văn an"),
        ("Đà Nẵng", "đà nẵng"),
        ("Nguyen Van An", "nguyen van an"),  # and do not collapse into the ASCII spelling
        ("Ｃａｆé\u0301", "café\u0301"),
        ("---", ""),
    ],
)
def test_normalize_name(db: Database, name: str, normalized: str) -> None:
    with db.connect() as conn:
        assert conn.execute("select vera.normalize_name(%s)", (name,)).fetchone() == (normalized,)


def test_vietnamese_names_stay_distinct_from_their_ascii_spelling(db: Database) -> None:
    with db.connect() as conn:
        row = conn.execute("select vera.normalize_name('Nguyễn') = vera.normalize_name('Nguyen')").fetchone()
    assert row == (False,)


def test_composed_and_decomposed_forms_meet(db: Database) -> None:
    with db.connect() as conn:
        row = conn.execute(
            "select vera.normalize_name(%s) = vera.normalize_name(%s)", ("Nguye\u0302\u0303n", "Nguyễn")
        )
        assert row.fetchone() == (True,)


@pytest.mark.parametrize(
    ("predicate", "normalized"),
    [
        ("runs on", "RUNS_ON"),
        ("runsOn", "RUNS_ON"),
        ("RUNS-ON", "RUNS_ON"),
        ("  owned   by ", "OWNED_BY"),
        ("has_2fa", "HAS_2FA"),
        ("2fa", None),
        ("!!!", None),
        ("x" * 101, None),
    ],
)
def test_normalize_predicate(db: Database, predicate: str, normalized: str | None) -> None:
    with db.connect() as conn:
        assert conn.execute("select vera.normalize_predicate(%s)", (predicate,)).fetchone() == (normalized,)
