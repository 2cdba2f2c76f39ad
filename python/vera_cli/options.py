"""Option types the commands share: an instant, and the period a search asks about."""

from __future__ import annotations

from datetime import UTC, date, datetime

import click

from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.time_scopes import TimeRange, as_period, query_time


class IsoInstant(click.ParamType):  # type: ignore[type-arg]
    """An instant in ISO 8601: a date (midnight UTC), or a date and time with or without an offset
    (2026-06-01T12:00:00+07:00, ...Z; UTC when none), as `--json` prints them."""

    name = "instant"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            instant = value
        else:
            try:
                instant = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not an ISO 8601 date or date and time", param, ctx)
        return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


ISO_INSTANT = IsoInstant()


class AskedPeriod(click.ParamType):  # type: ignore[type-arg]
    """The period a search asks about: START..END as ISO dates, end exclusive, either side empty
    for open (2020-03-01..2020-04-01, 2019-01-01..), or words the query reader understands
    ("1811-1827", "March 2020", "since 2019"; docs/time.md)."""

    name = "period"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> TimeRange:
        if isinstance(value, TimeRange):
            return value
        text = str(value).strip()
        if ".." in text:
            start, _, end = text.partition("..")
            try:
                days = tuple(date.fromisoformat(d.strip()) if d.strip() else None for d in (start, end))
            except ValueError:
                self.fail(
                    f"{text!r}: START..END takes ISO dates (YYYY-MM-DD), either may be empty", param, ctx
                )
            try:
                return as_period((days[0], days[1]))
            except InvalidArgumentError as error:
                self.fail(str(error), param, ctx)
        period = query_time(text)
        if period is None:
            self.fail(
                f"no period in {text!r}: give START..END (ISO dates) or a year, month or range", param, ctx
            )
        return period


ASKED_PERIOD = AskedPeriod()
