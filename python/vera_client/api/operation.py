"""An operation of the client, written once for both of its faces.

Most operations are one call of the SQL API: the area module's function that
describes the call is the operation (`operation(get_evidence)`). An operation
that does more (embeds the query, reranks, runs several calls) is a *plan*: a
generator that yields the steps it needs (a `Call`, or `Work` that blocks,
such as a model call) and receives their results (`plan(search)`).
VeraClient runs them with blocking I/O and AsyncVeraClient with asyncio (Work
in a thread), so the two faces share every decision and only the driving
differs.

An `Operation` is a descriptor: read from a blocking face it is a method
returning the result, from an asynchronous face a coroutine method.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from vera_client.api.call import Call
from vera_client.domain.callers import Caller
from vera_client.domain.errors import InvalidArgumentError
from vera_client.domain.ports import Embedder, ObjectStore, Reranker

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Work(Generic[T]):
    """A blocking step that is not SQL (a model call): run inline, or in a thread under asyncio."""

    run: Callable[[], T]


Step = Call[Any] | Work[Any]
Plan = Generator[Step, Any, T]


def ask(step: Call[T] | Work[T]) -> Plan[T]:
    """One step of a plan, typed: `members = yield from ask(whoami())`."""
    value = yield step
    return cast(T, value)


class Services(Protocol):
    """What plans use of the client they run in (core.Shared): the embedders, the reranker
    and the token counter, and a short memo of the groups' embedding pins."""

    @property
    def rerank_top_n(self) -> int: ...

    def known_pins(self, caller: Caller, groups: Sequence[str] | None) -> list[tuple[str, int]] | None: ...

    def remember_pins(
        self, caller: Caller, groups: Sequence[str] | None, pins: list[tuple[str, int]]
    ) -> None: ...

    def embedder_for(self, pins: Sequence[tuple[str, int]], text: str) -> tuple[Embedder, str] | None: ...

    def words_only(self, pins: Sequence[tuple[str, int]]) -> str | None: ...

    def embedder_for_model(self, model: str | None) -> Embedder | None: ...

    @property
    def rerank_weight(self) -> float: ...

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker (stage 3 of search), if any."""
        ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def objects(self) -> ObjectStore | None:
        """The configured object store (raw bytes), None for a client built without providers."""
        ...


@dataclass(frozen=True, slots=True)
class Session:
    """One caller's view of a client: what a plan runs as, and with."""

    services: Services
    caller: Caller


def check_k(k: int) -> None:
    if not 1 <= k <= 1000:
        raise InvalidArgumentError(f"k must be between 1 and 1000, not {k}")


class Runs(Protocol):
    """What runs a call as a caller (the executor)."""

    def run(self, caller: Caller, call: Call[T], /) -> T: ...


class RunsAsync(Protocol):
    """What runs a call as a caller under asyncio (the async executor)."""

    async def run(self, caller: Caller, call: Call[T], /) -> T: ...


class Blocking:
    """A face that returns results (VeraClient): it drives an operation with blocking I/O."""

    def _start(self) -> tuple[Session, Runs]:
        """The session an operation runs as, and what runs its calls."""
        raise NotImplementedError

    def _perform(self, operation: Operation[Any, T], args: Any, kwargs: Any) -> T:
        session, runner = self._start()
        if operation.call is not None:
            return runner.run(session.caller, operation.call(*args, **kwargs))
        assert operation.plan is not None
        steps = operation.plan(session, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                value = runner.run(session.caller, step) if isinstance(step, Call) else step.run()
                step = steps.send(value)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]


class Asynchronous:
    """A face whose methods are coroutines (AsyncVeraClient): model work runs in a thread."""

    def _start(self) -> tuple[Session, RunsAsync]:
        raise NotImplementedError

    async def _perform(self, operation: Operation[Any, T], args: Any, kwargs: Any) -> T:
        session, runner = self._start()
        if operation.call is not None:
            return await runner.run(session.caller, operation.call(*args, **kwargs))
        assert operation.plan is not None
        steps = operation.plan(session, *args, **kwargs)
        try:
            step = next(steps)
            while True:
                if isinstance(step, Call):
                    value = await runner.run(session.caller, step)
                else:
                    value = await asyncio.to_thread(step.run)
                step = steps.send(value)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]


class Operation(Generic[P, T]):
    """One operation: a call (`call`) or a plan run as the face's caller (`plan`)."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        call: Callable[P, Call[T]] | None = None,
        plan: Callable[Concatenate[Session, P], Plan[T]] | None = None,
    ) -> None:
        self.function = function
        self.call = call
        self.plan = plan
        # help(VeraClient.search) reads the operation itself
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__
        # what a caller passes: a plan's session is the face's own
        parameters = list(inspect.signature(function).parameters.values())
        self.signature = inspect.Signature(parameters[1:] if plan is not None else parameters)

    @overload
    def __get__(self, face: None, owner: type[Any]) -> Operation[P, T]: ...

    @overload
    def __get__(self, face: Blocking, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, face: Asynchronous, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, face: Blocking | Asynchronous | None, owner: type[Any]) -> Any:
        if face is None:
            return self
        method: Callable[..., Any]
        if isinstance(face, Asynchronous):
            asynchronous = face

            async def method(*args: Any, **kwargs: Any) -> Any:
                return await asynchronous._perform(self, args, kwargs)

        else:
            blocking = face

            def method(*args: Any, **kwargs: Any) -> Any:
                return blocking._perform(self, args, kwargs)

        functools.update_wrapper(method, self.function)
        method.__signature__ = self.signature  # type: ignore[union-attr]
        del method.__wrapped__  # type: ignore[union-attr]  # the signature above is the one to show
        return method


def operation(call: Callable[P, Call[T]]) -> Operation[P, T]:
    """A call of the SQL API as an operation of the client (its docstring is the method's)."""
    return Operation(call, call=call)


def plan(function: Callable[Concatenate[Session, P], Plan[T]]) -> Operation[P, T]:
    """A plan (its first parameter the Session) as an operation of the client."""
    return Operation(function, plan=function)
