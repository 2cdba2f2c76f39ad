"""The web console's pictures as plain data a template draws as inline SVG: a hit's signals as
bars, a fact's versions on a time line, an entity's neighbourhood as rings around it. Pure
functions of the API's answers (no drawing library, nothing fetched at run time)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

SIGNALS = ("relevance", "authority", "verification", "recency", "feedback", "confidence", "period")


@dataclass(frozen=True, slots=True)
class Bar:
    name: str
    value: float | None  # None: the signal does not apply (period without a `during`)
    width: float  # in the chart's units, 0..BAR_WIDTH


BAR_WIDTH = 120.0


def signal_bars(signals: dict[str, float | None]) -> list[Bar]:
    """The seven signals, each clamped to 0..1 and scaled to BAR_WIDTH."""
    bars = []
    for name in SIGNALS:
        value = signals.get(name)
        clamped = 0.0 if value is None else min(max(float(value), 0.0), 1.0)
        bars.append(Bar(name, None if value is None else float(value), round(clamped * BAR_WIDTH, 1)))
    return bars


@dataclass(frozen=True, slots=True)
class Mark:
    """One version of a fact on a time line: where it starts and ends (x in 0..width)."""

    label: str
    x0: float
    x1: float
    current: bool


def time_line(
    versions: Sequence[tuple[str, datetime, datetime | None]], now: datetime, width: float = 300.0
) -> list[Mark]:
    """Versions (label, valid_from, valid_to or None: still valid) placed on one axis from the
    earliest start to now."""
    if not versions:
        return []
    start = min(v[1] for v in versions)
    end = max([now, *(v[2] for v in versions if v[2] is not None)])
    span = max((end - start).total_seconds(), 1.0)

    def x(moment: datetime) -> float:
        return round((moment - start).total_seconds() / span * width, 1)

    return [
        Mark(label, x(valid_from), max(x(valid_to or end), x(valid_from) + 2.0), valid_to is None)
        for label, valid_from, valid_to in versions
    ]


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    hop: int
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Edge:
    source: Node
    target: Node
    label: str


@dataclass(frozen=True, slots=True)
class Picture:
    nodes: list[Node]
    edges: list[Edge]
    size: float


def neighbourhood(centre: str, facts: Sequence[tuple[str, str, str, int]], size: float = 560.0) -> Picture:
    """An entity and the facts around it (subject, predicate, object, hop) as nodes on rings: the
    entity in the middle, what is one hop away on the inner ring, two hops on the outer."""
    names: dict[str, str] = {centre.casefold(): centre}
    around: dict[str, set[str]] = {}
    for subject, _predicate, obj, _hop in facts:
        names.setdefault(subject.casefold(), subject)
        names.setdefault(obj.casefold(), obj)
        around.setdefault(subject.casefold(), set()).add(obj.casefold())
        around.setdefault(obj.casefold(), set()).add(subject.casefold())
    hops: dict[str, int] = {centre.casefold(): 0}
    frontier = [centre.casefold()]
    while frontier:  # breadth first: each name at its fewest hops from the entity
        key = frontier.pop(0)
        for other in sorted(around.get(key, ())):
            if other not in hops:
                hops[other] = hops[key] + 1
                frontier.append(other)
    for key in names:  # reached under another of the entity's names: drawn on the outer ring
        hops.setdefault(key, 2)
    middle = size / 2
    rings: dict[int, list[str]] = {}
    for key, hop in sorted(hops.items(), key=lambda item: (item[1], item[0])):
        rings.setdefault(min(hop, 2), []).append(key)
    placed: dict[str, Node] = {}
    for hop, keys in rings.items():
        radius = 0.0 if hop == 0 else size * (0.2 if hop == 1 else 0.4)
        for index, key in enumerate(keys):
            angle = 2 * math.pi * index / max(len(keys), 1) + (0.3 if hop == 2 else 0.0)
            placed[key] = Node(
                names[key],
                hop,
                round(middle + radius * math.cos(angle), 1),
                round(middle + radius * math.sin(angle), 1),
            )
    edges = []
    seen: set[tuple[str, str, str]] = set()
    for subject, predicate, obj, _hop in facts:
        edge = (subject.casefold(), predicate, obj.casefold())
        if edge in seen:
            continue
        seen.add(edge)
        edges.append(Edge(placed[edge[0]], placed[edge[2]], predicate))
    return Picture(list(placed.values()), edges, size)
