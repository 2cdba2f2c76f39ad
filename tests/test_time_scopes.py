"""The times a text states (vera_client.domain.time_scopes): points, ranges and open ranges in
English and Vietnamese, and the numbers that are not years."""

from __future__ import annotations

from datetime import date

import pytest

from vera_client.domain.time_scopes import query_time, read_times, time_scope

D = date


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # points cover their whole period
        ("Which team did he play for in 1995?", [(D(1995, 1, 1), D(1996, 1, 1), "1995")]),
        ("The station opened in March 2001.", [(D(2001, 3, 1), D(2001, 4, 1), "March 2001")]),
        ("It burned on 5 March 2020.", [(D(2020, 3, 5), D(2020, 3, 6), "5 March 2020")]),
        ("It burned on March 7th, 2021.", [(D(2021, 3, 7), D(2021, 3, 8), "March 7th, 2021")]),
        ("Logged 2020-03-05 by ops.", [(D(2020, 3, 5), D(2020, 3, 6), "2020-03-05")]),
        ("In the 1990s it grew.", [(D(1990, 1, 1), D(2000, 1, 1), "1990s")]),
        ("as of June 2020 who was CEO?", [(D(2020, 6, 1), D(2020, 7, 1), "June 2020")]),
        # ranges cover both ends
        ("Who owned the house from 1811 to 1827?", [(D(1811, 1, 1), D(1828, 1, 1), "from 1811 to 1827")]),
        ("He played there between 1995 and 1999.", [(D(1995, 1, 1), D(2000, 1, 1), "between 1995 and 1999")]),
        ("The 1999-2001 season", [(D(1999, 1, 1), D(2002, 1, 1), "1999-2001")]),
        ("Mayor 1811\u20131827.", [(D(1811, 1, 1), D(1828, 1, 1), "1811\u20131827")]),
        ("from May 2019 until June 2020", [(D(2019, 5, 1), D(2020, 7, 1), "from May 2019 until June 2020")]),
        # open ranges
        ("She has led it since 2019.", [(D(2019, 1, 1), None, "since 2019")]),
        ("It was private until 2003.", [(None, D(2004, 1, 1), "until 2003")]),
        ("Nothing was built before 1990.", [(None, D(1990, 1, 1), "before 1990")]),
        ("Prices rose after 2008.", [(D(2009, 1, 1), None, "after 2008")]),
        # a year of three digits, after a word that makes it a time
        ("Emma gave birth to Carloman in 830.", [(D(830, 1, 1), D(831, 1, 1), "830")]),
        ("Arnulf was duke from 880 to 887.", [(D(880, 1, 1), D(888, 1, 1), "from 880 to 887")]),
        ("Vào năm 939, Ngô Quyền xưng vương.", [(D(939, 1, 1), D(940, 1, 1), "939")]),
        # Vietnamese
        ("Từ năm 1811 đến năm 1827, ngôi nhà thuộc về ông A.",
         [(D(1811, 1, 1), D(1828, 1, 1), "Từ năm 1811 đến năm 1827")]),
        ("Ngày 5 tháng 3 năm 2020 trời mưa.", [(D(2020, 3, 5), D(2020, 3, 6), "Ngày 5 tháng 3 năm 2020")]),
        ("ngày 5/3/2020", [(D(2020, 3, 5), D(2020, 3, 6), "ngày 5/3/2020")]),
        ("Vào tháng 3 năm 2020, công ty mở rộng.", [(D(2020, 3, 1), D(2020, 4, 1), "tháng 3 năm 2020")]),
        ("tháng 3/2020", [(D(2020, 3, 1), D(2020, 4, 1), "tháng 3/2020")]),
        ("Ông ấy sống ở Huế năm 2020.", [(D(2020, 1, 1), D(2021, 1, 1), "năm 2020")]),
        ("trước năm 2003", [(None, D(2003, 1, 1), "trước năm 2003")]),
        ("kể từ năm 2019", [(D(2019, 1, 1), None, "kể từ năm 2019")]),
        ("thập niên 1990", [(D(1990, 1, 1), D(2000, 1, 1), "thập niên 1990")]),
        ("giữa năm 1995 và năm 1999", [(D(1995, 1, 1), D(2000, 1, 1), "giữa năm 1995 và năm 1999")]),
    ],
)  # fmt: skip
def test_a_stated_time_is_read_as_its_range(
    text: str, expected: list[tuple[D | None, D | None, str]]
) -> None:
    found = [(r.start, r.end, r.text) for r in read_times(text)]
    assert found == expected
    for r in read_times(text):
        assert text[r.char_start : r.char_start + len(r.text)] == r.text


@pytest.mark.parametrize(
    "text",
    [
        "The firm had 2000 employees.",
        "The line is 1500 km long.",
        "It cost $1999.",
        "Ticket No. 1234 was lost.",
        "Growth was 2015% over the decade.",
        "Call 555-1234 or 12.2015.",
        "Order 123456 shipped.",
        "The year 0999 and 2500 are out of range.",
        "A force of 830 soldiers marched.",  # three digits with no time word before them
        "They walked in 300 km of snow.",
        "February 30, 2020 never was.",  # no such day: nothing, rather than a wrong one
    ],
)
def test_numbers_that_are_not_years_are_not_read(text: str) -> None:
    assert read_times(text) == []


def test_a_passage_states_several_times() -> None:
    text = "Born in 1950, he taught from 1975 to 1990 and has lived in Hue since 2001."
    assert time_scope(text) == [
        ["1950-01-01", "1951-01-01"],
        ["1975-01-01", "1991-01-01"],
        ["2001-01-01", None],
    ]


def test_the_query_time_is_the_hull_of_what_it_states() -> None:
    asked = query_time("Who coached them in 1995 or in 1999?")
    assert asked is not None
    assert (asked.start, asked.end) == (D(1995, 1, 1), D(2000, 1, 1))
    assert asked.text == "1995; 1999"
    assert query_time("Who coaches them now?") is None
    opened = query_time("What did it cost before 2003?")
    assert opened is not None and (opened.start, opened.end) == (None, D(2003, 1, 1))


def test_overlap_of_ranges() -> None:
    (a,) = read_times("from 1811 to 1827")
    (b,) = read_times("in 1827")
    (c,) = read_times("in 1828")
    (d,) = read_times("since 1820")
    assert a.overlaps(b) and not a.overlaps(c) and d.overlaps(a) and d.overlaps(c)
