"""Free-text extraction and the equivalence judge, measured.

1. Quality: the example corpus (examples/lumen) is ingested and its passages go
   through the extract job; the claims kept after validation are scored against
   a small labelled set written for the five free-text files (LABELS below).
   A claim matches a label when subject and object match (case and spacing
   aside) and the predicate is the label's or one of its accepted synonyms.
   Run with the rule-based stand-in (a regex reader of "X runs on Y"-style
   sentences: a floor, not a model) and, with --base-url/--model, with a real
   OpenAI-compatible server (llama.cpp's llama-server, vLLM, Ollama, a hosted API).
2. Throughput: N synthetic passages extracted with a stand-in that answers at
   once: what VERA itself costs per passage (HTTP round trip to a local server,
   validation, vera.publish_claims with vectors, the extraction record).
3. The equivalence judge's candidates on ../shared/eval/entity_resolution: for
   each labelled pair, the left product is published, then the right one; we
   count how often a true match is linked by the ladder, sent to the judge with
   the true match among its candidates (vera.equivalence_case), or missed.
   With --base-url, the judge model decides the provisional pairs and F1 of the
   ladder alone is printed beside the ladder plus judge.

    .venv/bin/python benchmarks/extraction.py [--passages 300] [--limit 0]
        [--base-url http://127.0.0.1:8080/v1 --model smollm2] [--eval ../shared/eval]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.examples import example_dir
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import ChatModel
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.client import VeraClient
from vera_client.config import ResilienceSettings
from vera_client.domain.ports import Embedder
from vera_worker.adapters.extraction import ExtractJob, PassageExtraction
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain
from vera_worker.connectors.dispatch import SourceRuns
from vera_worker.connectors.folder.manifest import register_manifest, request_all
from vera_worker.connectors.runner import ConnectorIngestion
from vera_worker.domain.extracted_claims import upper_snake
from vera_worker.domain.prompts import EQUIVALENCE_INSTRUCTIONS, EQUIVALENCE_SCHEMA, judge_input

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from tests.standins import API_KEY, StandinServer, running_standin  # noqa: E402

from _harness import Bench, start  # noqa: E402 - the benchmarks' own folder, put on the path above
from entity_resolution import hashing_embedder, read_pairs  # noqa: E402

# file (below examples/lumen) -> (subject, predicate, object, accepted synonyms of the predicate)
LABELS: dict[str, list[tuple[str, str, str, tuple[str, ...]]]] = {
    "chat/ops-1764000000.000100.md": [
        ("billing-api", "RUNS_ON", "heroku", ("IS_ON", "HOSTED_ON", "DEPLOYED_ON")),
    ],
    "incidents/INC-2041.md": [
        ("INC-2041", "AFFECTED_SERVICE", "tracking-gateway", ("AFFECTS", "AFFECTED", "IMPACTED")),
        ("INC-2041", "SEVERITY", "SEV-2", ("HAS_SEVERITY",)),
        ("Edge Team", "RENEWED", "certificate", ("RENEWED_CERTIFICATE", "FIXED")),
        ("tracking-gateway", "WAS_DOWN_ON", "2026-10-14", ("DOWN_ON", "OUTAGE_ON", "OUTAGE_DATE")),
    ],
    "wiki/runbooks/billing-api.md": [
        ("billing-api", "RUNS_ON", "k8s-hanoi-2", ("DEPLOYED_ON", "RUNS_IN", "DEPLOYED_IN")),
        ("billing-api", "ESCALATES_TO", "Payments Team", ("ON_CALL", "ESCALATION", "OWNED_BY", "PAGE")),
    ],
    "wiki/runbooks/ledger-db.md": [
        ("billing-api", "USES_DATABASE", "ledger-db", ("USES", "DEPENDS_ON", "CONNECTS_TO")),
    ],
    "handbook-vi/route-planner.md": [
        ("route-planner", "RUNS_ON", "k8s-hanoi-1", ("DEPLOYED_ON", "RUNS_IN", "CHẠY_TRÊN")),
        ("route-planner", "OWNED_BY", "Logistics Core", ("MANAGED_BY", "MAINTAINED_BY", "PHỤ_TRÁCH")),
    ],
}

# the rule-based stand-in's sentence patterns: (regex with subject and object groups, predicate)
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"([\w-]+) (?:is on|runs on) ([\w-]+)"), "RUNS_ON"),
    (re.compile(r"route-planner chạy trên cụm ([\w-]+)"), "RUNS_ON"),
    (re.compile(r"([\w-]+) is owned by ([\w ]+?)[.,]"), "OWNED_BY"),
    (re.compile(r"(?:in|of) the \w+ namespace of ([\w-]+)"), "RUNS_ON"),
]


def rule_based(body: dict[str, Any]) -> str:
    """The stand-in: the claims its patterns find in the passage, with exact spans."""
    passage = json.loads(body["messages"][-1]["content"])["passage"]
    claims = []
    for pattern, predicate in PATTERNS:
        for match in pattern.finditer(passage):
            groups = match.groups()
            subject, obj = groups if len(groups) == 2 else (_nearest_service(passage), groups[0])
            if not subject:
                continue
            claims.append({
                "subject": subject, "predicate": predicate, "object": obj.strip(), "object_is_entity": True,
                "new_predicate": False, "valid_from": None, "confidence": 0.6, "evidence": match.group(0),
                "evidence_start": match.start(), "evidence_end": match.end(),
            })  # fmt: skip
    return json.dumps({"claims": claims})


def _nearest_service(passage: str) -> str:
    found = re.search(r"\b([a-z]+-[a-z]+)\b", passage)
    return found.group(1) if found else ""


def _norm(text: str) -> str:
    return " ".join(re.sub(r"^the ", "", text.casefold().strip()).split())


def _matches(claim: dict[str, Any], label: tuple[str, str, str, tuple[str, ...]]) -> bool:
    subject, predicate, obj, synonyms = label
    accepted = {predicate, *(upper_snake(s) or s for s in synonyms)}
    return (
        _norm(claim["subject"]) == _norm(subject)
        and _norm(obj) in _norm(claim["object"])
        and (claim["predicate"] in accepted or any(s in claim["predicate"] for s in accepted))
    )


def _chat(base_url: str, model: str, api_key: str | None, timeout: float = 120.0) -> ChatModel:
    chain = ResilienceChain("llm", ResilienceSettings(max_retries=1, timeout_seconds=timeout))
    return ChatModel(base_url=base_url, model=model, api_key=api_key, chain=chain, max_output_tokens=1500)


def _group(bench: Bench, name: str) -> str:
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        return vera.create_group(bench.organisation, "project", f"{name}-{int(time.time() * 1000)}")


def _allow_folders(bench: Bench, root: Path) -> None:
    """As an operator: the organisation's folder sources may lie below root."""
    with bench.admin() as admin:
        admin.execute("select vera.add_source_root(%s, %s)", (bench.organisation, str(root.resolve())))


def _folder_ingestion(sql: Executor, store: LocalObjectStore, embedder: Embedder, root: Path) -> SourceRuns:
    """The worker's source runs over folders below root, embedding with embedder."""
    connectors = ConnectorIngestion(
        sql, objects=store, embedder_for_model=lambda _p: embedder, environ={}, allowed_roots=(root,)
    )
    return SourceRuns(sql, connectors=connectors)


def quality(bench: Bench, model: ChatModel, label: str) -> None:
    group = _group(bench, "extract-quality")
    _allow_folders(bench, example_dir())
    with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
        request_all(vera, register_manifest(vera, group, example_dir() / "sources.toml"))
    embedder = DeterministicEmbedder(384)
    worker = bench.server.worker_url(bench.database)
    with tempfile.TemporaryDirectory() as objects, closing(Executor.connect(worker, check=True)) as sql:
        store = LocalObjectStore(Path(objects))
        ingestion = _folder_ingestion(sql, store, embedder, example_dir())
        extraction = PassageExtraction(sql, model=model, embedder_for_model=lambda _p: embedder)
        started = time.perf_counter()
        drain(build_app(worker, objects=store, ingestion=ingestion, extraction=extraction))
        elapsed = time.perf_counter() - started
    with bench.admin() as admin:
        rows = admin.execute(
            """select e.external_id, r.claims, r.outcome
                 from vera.chunk_extractions x
                 join vera.chunks c on c.group_id = x.group_id and c.chunk_id = x.chunk_id
                 join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                 join vera.extraction_runs r
                   on r.group_id = x.group_id and r.content_sha256 = x.content_sha256
                  and r.model_version = x.model_version
                where x.group_id = %s""",
            (group,),
        ).fetchall()
    extracted: dict[str, list[dict[str, Any]]] = {}
    failed = 0
    for key, claims, outcome in rows:
        extracted.setdefault(key, []).extend(claims)
        failed += outcome == "failed"
    found = kept = correct = 0
    for path, labels in LABELS.items():
        # a record's key is its path below its source's folder
        claims = [c for key, found in extracted.items() if path.endswith("/" + key) for c in found]
        kept += len(claims)
        correct += sum(any(_matches(c, label) for label in labels) for c in claims)
        found += sum(any(_matches(c, label) for c in claims) for label in labels)
    total = sum(len(v) for v in LABELS.values())
    precision = correct / kept if kept else 0.0
    recall = found / total
    print(f"{label:<44}{precision:>10.2f}{recall:>8.2f}{kept:>8}{failed:>8}{elapsed:>9.1f}s", flush=True)


def throughput(bench: Bench, standin: StandinServer, passages: int) -> None:
    group = _group(bench, "extract-speed")
    embedder = DeterministicEmbedder(384)
    worker = bench.server.worker_url(bench.database)
    with (
        tempfile.TemporaryDirectory() as folder,
        tempfile.TemporaryDirectory() as objects,
        closing(Executor.connect(worker, check=True)) as sql,
    ):
        for i in range(passages):
            Path(folder, f"svc-{i}.md").write_text(
                f"# svc-{i}\n\nsvc-{i} runs on cluster-{i % 7}. It is owned by team {i % 5} and pages.\n"
            )
        _allow_folders(bench, Path(folder))
        with VeraClient(bench.server.app_url(bench.database), bench.api_key) as vera:
            for predicate in ("RUNS_ON", "OWNED_BY"):  # known predicates: the claims are published
                vera.declare_predicate(group, predicate, "functional")
            source = vera.register_folder(group, "synthetic", Path(folder), tier=1)
            vera.request_ingest(group, source.source_id)
            principal = vera.whoami()[0].principal_id
        store = LocalObjectStore(Path(objects))
        ingestion = _folder_ingestion(sql, store, embedder, Path(folder))
        drain(build_app(worker, objects=store, ingestion=ingestion))  # passages stored, nothing extracted yet
        model = _chat(f"{standin.url}/openai/v1", "instant", API_KEY)
        extraction = PassageExtraction(sql, model=model, embedder_for_model=lambda _p: embedder)
        started = time.perf_counter()
        report = extraction.run(ExtractJob(group_id=group, principal_id=principal))
        elapsed = time.perf_counter() - started
        started = time.perf_counter()
        again = extraction.run(ExtractJob(group_id=group, principal_id=principal))
        replay = time.perf_counter() - started
    print(f"{report.passages} passages, {report.facts} facts in {elapsed:.1f}s: "
          f"{report.passages / elapsed:.1f} passages/s with an instant stand-in "
          f"({1000 * elapsed / max(report.passages, 1):.1f} ms each); the same job again found "
          f"{again.passages} passages to extract in {replay:.2f}s")  # fmt: skip


def candidate_recall(
    bench: Bench,
    pairs: list[tuple[str, str, bool]],
    judge: ChatModel | None,
    embed: Callable[[str], list[float]],
) -> None:
    linked = in_candidates = missed = sent = wrong_links = 0
    tp = fp = fn = 0  # ladder plus judge, when a judge model is given
    publish = "select subject_entity_id, resolution from vera.publish_claims(%s, null, %s, 'hashing-384')"
    # the bench's personal scope: an agent's own claims publish there (in a shared scope
    # they would be proposals); a database of its own, so no other run pinned its model
    group = bench.personal
    # as the worker: vera.equivalence_case is the worker's (the judge job's) call
    with psycopg.connect(bench.server.worker_url(bench.database)) as conn:
        for left, right, is_match in pairs:
            conn.execute("select vera.authenticate(%s)", (bench.api_key,))
            claims = [{"subject": t, "predicate": "is a", "object": "product", "subject_embedding": embed(t)}
                      for t in (left, right)]  # fmt: skip
            first = conn.execute(publish, (group, Jsonb(claims[:1]))).fetchone()
            second = conn.execute(publish, (group, Jsonb(claims[1:]))).fetchone()
            assert first is not None and second is not None
            merged = second[0] == first[0]
            shown = False
            decided_same = False
            if second[1] == "provisional":
                sent += 1
                case = conn.execute(
                    "select vera.equivalence_case(%s, %s)", (bench.personal, second[0])
                ).fetchone()
                candidates = [c["entity_id"] for c in (case[0]["candidates"] if case and case[0] else [])]
                shown = str(first[0]) in candidates
                if judge is not None and case and case[0]:
                    answer = judge.complete_json(system=EQUIVALENCE_INSTRUCTIONS, user=judge_input(case[0]),
                                                 schema=EQUIVALENCE_SCHEMA, schema_name="equivalence",
                                                 operation="equivalence")  # fmt: skip
                    decided_same = answer.data.get("same_entity") is True and answer.data.get(
                        "entity_id"
                    ) == str(first[0])
            conn.rollback()
            wrong_links += merged and not is_match
            if is_match:
                linked += merged
                in_candidates += shown
                missed += not merged and not shown
            same = merged or decided_same
            tp += same and is_match
            fp += same and not is_match
            fn += (not same) and is_match
    matches = sum(m for _, _, m in pairs)
    print(f"{len(pairs):,} pairs, {matches} true matches; {sent} names sent to the judge (provisional)")
    print(f"  true matches linked by the ladder:                 {linked:>5} ({linked / matches:.1%})")
    shown_share = in_candidates / matches
    print(f"  true matches among the judge's candidates:         {in_candidates:>5} ({shown_share:.1%})")
    print(f"  ladder + judge candidate recall (linked or shown): {linked + in_candidates:>5} "
          f"({(linked + in_candidates) / matches:.1%})")  # fmt: skip
    print(
        f"  missed (a new entity, never shown to the judge):   {missed:>5}; wrong ladder links: {wrong_links}"
    )
    if judge is not None:
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        print(
            f"  ladder + judge ({judge.model}): precision {precision:.3f}, recall {recall:.3f}, F1 {f1:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, default=300, help="synthetic passages for the throughput run")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to measure a real model")
    parser.add_argument("--model", default="local", help="the model name the server serves")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--eval", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--limit", type=int, default=0, help="only the first N entity-resolution pairs")
    parser.add_argument("--skip", nargs="*", default=[], choices=["quality", "throughput", "judge"])
    args = parser.parse_args()
    bench = start("vera_bench_extraction")
    real = _chat(args.base_url, args.model, args.api_key) if args.base_url else None
    with running_standin() as standin:
        standin.chat_responder = rule_based
        if "quality" not in args.skip:
            print(f"{'extraction on examples/lumen':<44}{'precision':>10}{'recall':>8}{'claims':>8}"
                  f"{'failed':>8}{'time':>10}")  # fmt: skip
            quality(bench, _chat(f"{standin.url}/openai/v1", "rule-based", API_KEY), "rule-based stand-in")
            if real is not None:
                quality(bench, real, f"{args.model} at {args.base_url}")
        if "throughput" not in args.skip:
            print()
            throughput(bench, standin, args.passages)
    if "judge" not in args.skip:
        data = args.eval / "entity_resolution" / "amazon_google_valid.txt"
        if not data.exists():
            sys.exit(f"{data} not found: pass --eval PATH")
        print()
        pairs = read_pairs(data)[: args.limit or None]
        candidate_recall(start("vera_bench_judge_candidates"), pairs, real, hashing_embedder())


if __name__ == "__main__":
    main()
