"""The times a text states, as ranges of days: the time scope of a passage (what period it speaks
of) and the time constraint of a question (what period it asks about).

No model runs: a small grammar of English and Vietnamese date expressions, read left to right.

- Points: a year ("1995", "năm 1995"), a decade ("the 1990s", "thập niên 1990"), a month ("March
  2020", "tháng 3 năm 2020", "tháng 3/2020"), a day ("5 March 2020", "March 5, 2020", "2020-03-05",
  "ngày 5 tháng 3 năm 2020", "ngày 5/3/2020"). A point covers its whole period: 1995 is
  [1995-01-01, 1996-01-01).
- Ranges between two points: "from 1811 to 1827", "between 1811 and 1827", "1811-1827",
  "1811 to 1827", "từ năm 1811 đến năm 1827", "giữa năm 1811 và năm 1827". A range covers both ends:
  [1811-01-01, 1828-01-01).
- Open ranges: "since 2019" / "from 2019" / "kể từ năm 2019" start at the point's start; "after
  2019" / "sau năm 2019" at its end; "until 2003" / "through 2003" / "đến năm 2003" end at the
  point's end; "before 2003" / "prior to 2003" / "trước năm 2003" at its start. "As of June 2020"
  is the point itself.

What it does not read (docs/time.md): centuries, relative times ("last year", "two years later",
which need a reference date), seasons and quarters, two-digit years ("'90s", "1811-27"), and
numeric day/month orders other than ISO and Vietnamese day/month/year. A bare four-digit number
is read as a year only between 1000 and 2199 and not beside a currency sign, a percent sign, a
digit group or a unit ("2000 km").

The standard library's datetime suffices for the arithmetic; the date-parsing libraries on PyPI
(dateparser's search_dates, dateutil's fuzzy parse) read one date per string or guess day orders,
and neither reads ranges or the Vietnamese forms above.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from vera_client.domain.errors import InvalidArgumentError

# Raised whenever what the grammar reads changes: a stored scope says which version read it,
# and `vera reprocess --time-scopes` reads again the passages an older version read.
EXTRACTION_VERSION = 1

# a year of four digits is read from 1000 on; one of three digits (100-999) only right after a
# word that makes it a time ("in 830", "from 880 to 887", "năm 830"), since a bare one is more
# often a count
FIRST_YEAR, LAST_YEAR = 100, 2199
_BEFORE_YEAR, _AFTER_YEAR = 32, 16  # how far a point may reach before and after the digits of its year
_YEAR_DIGITS = re.compile(r"(?<!\d)\d{3,4}(?!\d)")

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"[12]\d{3}"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
# units and words after a number that make it a quantity, not a year
_UNITS = (
    "km|m|cm|mm|kg|g|t|mi|ft|feet|foot|meters?|metres?|miles?|kilometers?|kilometres?|tons?|tonnes?|"
    "people|persons?|employees|members|students|units|copies|votes|seats|hectares?|acres?|"
    "dollars|euros|usd|eur|vnd|đồng|người|ha"
)

# words after which three digits are a year
_TIME_WORDS = "in|from|to|until|till|since|before|after|between|and|during|by|circa|AD|năm|từ|đến"
# One point expression; the group names say which kind it is. Longer forms come first so that
# "March 5, 2020" is one day, not a month and a year.
_POINT = re.compile(
    rf"""
    (?P<iso>(?P<iso_y>\d{{4}})-(?P<iso_m>\d{{2}})-(?P<iso_d>\d{{2}}))(?![\d-])
  | (?P<en_mdy>(?P<mdy_m>{_MONTH})\s+(?P<mdy_d>{_DAY}),?\s+(?P<mdy_y>{_YEAR}))
  | (?P<en_dmy>(?P<dmy_d>{_DAY})\s+(?:of\s+)?(?P<dmy_m>{_MONTH}),?\s+(?P<dmy_y>{_YEAR}))
  | (?P<vi_dmy>ngày\s+(?P<vd_d>\d{{1,2}})(?:\s+tháng\s+|/)(?P<vd_m>\d{{1,2}})(?:\s+năm\s+|/)(?P<vd_y>{_YEAR}))
  | (?P<en_my>(?P<my_m>{_MONTH}),?\s+(?:of\s+)?(?P<my_y>{_YEAR}))
  | (?P<vi_my>tháng\s+(?P<vm_m>\d{{1,2}})(?:\s+năm\s+|/)(?P<vm_y>{_YEAR}))
  | (?P<en_decade>(?P<dec_y>\d{{3}}0)'?s)
  | (?P<vi_decade>(?:thập\s+(?:niên|kỷ)|những\s+năm)\s+(?P<vdec_y>\d{{3}}0))
  | (?P<vi_year>năm\s+(?P<vy_y>{_YEAR}))
  | (?P<year>(?P<y>{_YEAR}))
  | (?:\b(?:{_TIME_WORDS})\s+)(?P<early>[1-9]\d{{2}})(?!\d)
    """,
    re.IGNORECASE | re.VERBOSE,
)
# what may not come just before a bare year: a digit group, a decimal point, a currency or number
# sign, a short number and a hyphen (a phone number; "1999-2001" is a range of two years)
_NOT_BEFORE_YEAR = re.compile(r"(?:[\d$€£¥#]|\d[.,]|(?<!\d)\d{1,3}-|No\.\s?)$", re.IGNORECASE)
_NOT_AFTER_YEAR = re.compile(rf"^(?:[.,]\d|\d|\s?%|\s?(?:{_UNITS})\b)", re.IGNORECASE)

# between two points, a range ("1811 to 1827"); "and" only after "between"
_RANGE_JOIN = re.compile("^\\s*(?:-|\u2013|\u2014|to|until|till|through|thru|đến|tới)\\s*$", re.IGNORECASE)
_AND_JOIN = re.compile(r"^\s*(?:and|và)\s*$", re.IGNORECASE)
_BETWEEN = re.compile(r"(?:between|giữa)\s+$", re.IGNORECASE)
_FROM = re.compile(r"(?:from|từ)\s+$", re.IGNORECASE)
# before a lone point: which way its range opens
_OPEN_BEFORE = [
    (
        "since",
        re.compile(r"(?:since|starting(?:\s+in)?|beginning(?:\s+in)?|from|kể\s+từ|từ)\s+$", re.IGNORECASE),
    ),
    ("after", re.compile(r"(?:after|later\s+than|sau(?:\s+khi)?)\s+$", re.IGNORECASE)),
    (
        "until",
        re.compile(r"(?:until|till|up\s+to|through|by|cho\s+đến|cho\s+tới|đến|tới)\s+$", re.IGNORECASE),
    ),
    ("before", re.compile(r"(?:before|prior\s+to|earlier\s+than|trước(?:\s+khi)?)\s+$", re.IGNORECASE)),
]
_LOOKBACK = 24  # characters before a point in which its opening words are looked for


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Days from start (inclusive) to end (exclusive); None is open. text is what stated it, at
    char_start in the text that was read."""

    start: date | None = field(metadata={"description": "first day; null: open"})
    end: date | None = field(metadata={"description": "the day after the last; null: open"})
    text: str = field(
        metadata={"description": "the words it was read from (a period passed reads 'start .. end')"}
    )
    char_start: int

    def as_json(self) -> list[str | None]:
        """[start, end] as ISO dates, null where open: the form vera.store_chunks and
        vera.search take."""
        return [_iso(self.start), _iso(self.end)]

    def overlaps(self, other: TimeRange) -> bool:
        return (self.start is None or other.end is None or self.start < other.end) and (
            other.start is None or self.end is None or other.start < self.end
        )


def as_period(during: TimeRange | tuple[date | None, date | None]) -> TimeRange:
    """The period a caller asks about: a TimeRange (query_time's), or (start, end) days, end
    exclusive, None where open (a datetime counts as its day)."""
    if isinstance(during, TimeRange):
        return during
    start, end = (d.date() if isinstance(d, datetime) else d for d in during)
    if start is not None and end is not None and start >= end:
        raise InvalidArgumentError(f"during must end after it starts: {start} .. {end}")
    shown = f"{_iso(start) or '...'} .. {_iso(end) or '...'}"
    return TimeRange(start, end, shown, 0)


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day is not None else None


@dataclass(frozen=True, slots=True)
class _Point:
    start: date
    end: date
    at: int
    stop: int


def _next_month(year: int, month: int) -> date:
    return date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)


def _month(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")]


def _day(value: str) -> int:
    return int(re.sub(r"\D", "", value))


def _first_day(match: re.Match[str]) -> date:
    """The day a day-sized point names (ValueError when there is no such day)."""
    g = match.group
    if g("iso"):
        return date(int(g("iso_y")), int(g("iso_m")), int(g("iso_d")))
    if g("en_mdy"):
        return date(int(g("mdy_y")), _month(g("mdy_m")), _day(g("mdy_d")))
    if g("en_dmy"):
        return date(int(g("dmy_y")), _month(g("dmy_m")), _day(g("dmy_d")))
    return date(int(g("vd_y")), int(g("vd_m")), int(g("vd_d")))


def _span(match: re.Match[str]) -> tuple[date, date] | None:
    """The days a point covers, or None when it names no real date (or a year out of range)."""
    g = match.group
    try:
        if g("en_my") or g("vi_my"):
            year, month = (
                (int(g("my_y")), _month(g("my_m"))) if g("en_my") else (int(g("vm_y")), int(g("vm_m")))
            )
            first, after = date(year, month, 1), _next_month(year, month)
        elif g("en_decade") or g("vi_decade"):
            year = int(g("dec_y") or g("vdec_y"))
            first, after = date(year, 1, 1), date(year + 10, 1, 1)
        elif g("vi_year") or g("year") or g("early"):
            year = int(g("vy_y") or g("y") or g("early"))
            first, after = date(year, 1, 1), date(year + 1, 1, 1)
        else:
            first = _first_day(match)
            after = first + timedelta(days=1)
    except ValueError:  # February 30th, month 13
        return None
    return (first, after) if FIRST_YEAR <= first.year <= LAST_YEAR else None


def _points(text: str) -> list[_Point]:
    """The points of text, in order. Every point holds a year, so the grammar is tried only
    around runs of three or four digits: reading a long text costs what its years cost."""
    points: list[_Point] = []
    done = 0  # where the last point ended: nothing before it is read again
    for digits in _YEAR_DIGITS.finditer(text):
        if digits.start() < done:
            continue
        window = (max(done, digits.start() - _BEFORE_YEAR), min(len(text), digits.end() + _AFTER_YEAR))
        for match in _POINT.finditer(text, *window):
            at = match.start("early") if match.group("early") else match.start()
            if at < done or (match.start() > 0 and text[match.start() - 1].isalnum()):  # inside a word
                continue
            if match.end() < len(text) and text[match.end()].isalnum():
                continue
            if (match.group("year") or match.group("early")) and (
                _NOT_BEFORE_YEAR.search(text[max(0, at - 8) : at])
                or _NOT_AFTER_YEAR.match(text[match.end() : match.end() + 12])
            ):
                continue
            days = _span(match)
            if days is not None:
                points.append(_Point(days[0], days[1], at, match.end()))
                done = match.end()
    return points


def _opening(before: str) -> tuple[str, int] | None:
    """Which way the words just before a point open its range, and where those words start."""
    for kind, pattern in _OPEN_BEFORE:
        found = pattern.search(before)
        if found:
            return kind, found.start()
    return None


def read_times(text: str) -> list[TimeRange]:
    """Every time the text states, in order of appearance."""
    text = unicodedata.normalize("NFC", text)
    points = _points(text)
    ranges: list[TimeRange] = []
    i = 0
    while i < len(points):
        point = points[i]
        window_start = max(0, point.at - _LOOKBACK)
        before = text[window_start : point.at]
        if i + 1 < len(points):
            after = points[i + 1]
            between = text[point.stop : after.at]
            joined = _RANGE_JOIN.match(between) or (_AND_JOIN.match(between) and _BETWEEN.search(before))
            if joined and point.start < after.end:
                lead = _BETWEEN.search(before) or _FROM.search(before)
                at = window_start + lead.start() if lead else point.at
                ranges.append(TimeRange(point.start, after.end, text[at : after.stop], at))
                i += 2
                continue
        opening = _opening(before)
        if opening is None:
            ranges.append(TimeRange(point.start, point.end, text[point.at : point.stop], point.at))
        else:
            kind, offset = opening
            at = window_start + offset
            start, end = {
                "since": (point.start, None),
                "after": (point.end, None),
                "until": (None, point.end),
                "before": (None, point.start),
            }[kind]
            ranges.append(TimeRange(start, end, text[at : point.stop], at))
        i += 1
    return ranges


def time_scope(text: str, heading: str | None = None) -> list[list[str | None]]:
    """A passage's time scope in the form vera.store_chunks takes: each range its heading and
    text state, as [start, end] ISO dates (null where open); [] when they state no time."""
    words = f"{heading}\n{text}" if heading else text
    return [found.as_json() for found in read_times(words)]


def stated_scope(text: str, heading: str | None = None) -> dict[str, Any]:
    """What this version of VERA's reader reads in a passage's heading and text, as every write
    path stores it (vera.store_chunks, vera.remember, vera.set_time_scopes): `time_scope` and
    `time_scope_version`. The one place the writes read stated times."""
    return {"time_scope": time_scope(text, heading), "time_scope_version": EXTRACTION_VERSION}


def with_time_scope(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """A chunk in vera.store_chunks' shape with the time scope its words state (stated_scope),
    unless it carries a `time_scope` of its own, which is kept as given (the caller's statement:
    without a version, vera.store_chunks keeps it as 0, never read again). A chunk without a
    text is left as it is, for vera.store_chunks to refuse."""
    filled = dict(chunk)
    text, heading = filled.get("text"), filled.get("heading")
    if "time_scope" in filled or not isinstance(text, str):
        return filled
    return filled | stated_scope(text, heading if isinstance(heading, str) else None)


def query_time(text: str) -> TimeRange | None:
    """The period a question asks about: the smallest range holding every time it states, or
    None when it states none. `text` of the answer is what was read, for showing the caller."""
    found = read_times(text)
    if not found:
        return None
    starts = [r.start for r in found]
    ends = [r.end for r in found]
    start = None if any(s is None for s in starts) else min(s for s in starts if s is not None)
    end = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
    shown = "; ".join(r.text for r in found)
    return TimeRange(start, end, shown, found[0].char_start)
