"""Callers: what a request runs as, checked before any database is reached."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from vera_client.core import Shared
from vera_client.domain.callers import ApiKey, Principal
from vera_client.domain.errors import ConfigurationError


def test_a_principal_id_as_text_is_parsed_and_garbage_is_one_clear_error() -> None:
    known = uuid4()
    assert Principal(str(known)).principal_id == known  # type: ignore[arg-type]
    assert isinstance(Principal(known).principal_id, UUID)
    with pytest.raises(ConfigurationError, match="not a principal id: 'x"):
        Principal("x" * 10_000)  # type: ignore[arg-type]


def test_an_api_key_never_shows_its_secret() -> None:
    key = "vera_1f0c2d3e4f5a_" + "s" * 43
    assert "s" * 10 not in repr(ApiKey(key)) and "vera_1f0c2d3e4f5a" in repr(ApiKey(key))
    assert key not in ApiKey(key).identity
    with pytest.raises(ConfigurationError):
        ApiKey("")


def test_the_pins_memo_stays_bounded_however_many_callers_a_server_sees() -> None:
    shared = Shared(None)
    for _ in range(Shared.PINS_MAX_ENTRIES + 50):
        shared.remember_pins(Principal(uuid4()), None, [("m", 3)])
    assert len(shared._pins) <= Shared.PINS_MAX_ENTRIES
    latest = Principal(uuid4())
    shared.remember_pins(latest, ["g"], [("m", 3)])
    assert shared.known_pins(latest, ["g"]) == [("m", 3)]


def test_groups_without_a_pin_are_remembered_for_less_time_than_pinned_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shared = Shared(None)
    caller = Principal(uuid4())
    now = [1000.0]
    monkeypatch.setattr("vera_client.core.time.monotonic", lambda: now[0])
    shared.remember_pins(caller, ["words-only"], [])
    shared.remember_pins(caller, ["pinned"], [("m", 3)])
    assert shared.known_pins(caller, ["words-only"]) == [] and shared.known_pins(caller, ["pinned"]) == [
        ("m", 3)
    ]
    now[0] += Shared.NO_PINS_TTL_SECONDS + 0.1  # the first vector may have come meanwhile: ask again
    assert shared.known_pins(caller, ["words-only"]) is None and shared.known_pins(caller, ["pinned"]) == [
        ("m", 3)
    ]
    now[0] += Shared.PINS_TTL_SECONDS
    assert shared.known_pins(caller, ["pinned"]) is None
