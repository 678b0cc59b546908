"""BM25 speed against bm25s, and a notebook-level retrieval check of the analyser settings.

    .venv/bin/python benchmarks/bm25.py [--corpus ../shared/corpus] [--gold ../shared/gold/dev.jsonl]

One document per cell (source + output text), notebooks ranked by their best cell. Prints:
1. queries/s of cellar.retrieval.bm25 and of bm25s on the same term lists (the same matrix) and the same
   queries, as a ratio from this run (target: ours >= bm25s);
2. notebook hit@1/@5, MRR and strict cell hit@5 on the gold set's answerable queries, per analyser
   variant and per language, beside the gold README's bm25s baseline (.808 / .981 / .880).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import bm25s
import nbformat
import numpy as np

from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bm25 import BM25

ROOT = Path(__file__).resolve().parents[1]
TEXT_TYPES = ("text/plain", "text/markdown", "text/latex")


def output_text(output: dict) -> str:
    """The searchable text of one nbformat 4 output: stream text, plain/markdown/LaTeX text, or
    HTML without its tags when nothing else is there, or an error's name and value."""
    if output["output_type"] == "stream":
        return output.get("text", "")
    if output["output_type"] == "error":
        return f"{output.get('ename', '')}: {output.get('evalue', '')}"
    data = output.get("data", {})
    texts = [data[t] for t in TEXT_TYPES if t in data]
    if not texts and "text/html" in data:
        texts = [re.sub(r"<[^>]+>", " ", data["text/html"])]
    return "\n".join(texts)


def corpus_cells(corpus: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(text, (path, cell)) for every cell of every notebook outside edge/, in path order."""
    texts, places = [], []
    for path in sorted(corpus.rglob("*.ipynb")):
        rel = path.relative_to(corpus)
        if rel.parts[0] == "edge":
            continue
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
        for i, cell in enumerate(notebook.cells):
            outputs = cell.get("outputs", [])
            texts.append("\n".join([cell.source, *map(output_text, outputs)]))
            places.append((rel.as_posix(), i))
    return texts, places


def evaluate(bm: BM25, analyse, places, queries) -> dict[str, dict[str, float]]:
    """Notebook hit@1/@5, MRR and strict cell hit@5 per language (and over all) for answerable queries."""
    paths = sorted({p for p, _ in places})
    position = {p: i for i, p in enumerate(paths)}
    notebook_of = np.array([position[p] for p, _ in places])
    rows: dict[str, list[tuple[float, float, float, float]]] = {}
    for q in queries:
        scores = bm.score(analyse(q["query"]))
        best = np.zeros(len(paths), dtype=np.float32)
        np.maximum.at(best, notebook_of, scores)
        ranking = [paths[i] for i in np.lexsort((np.arange(len(paths)), -best))]
        expected = {e["path"] for e in q["expect"]}
        rank = next((r for r, p in enumerate(ranking, 1) if p in expected), None)
        top_cells = {places[i] for i in np.lexsort((np.arange(len(scores)), -scores))[:5]}
        cell = any((e["path"], e["cell"]) in top_cells for e in q["expect"])
        row = (rank == 1, rank is not None and rank <= 5, 1 / rank if rank else 0.0, cell)
        for group in ("all", q["lang"]):
            rows.setdefault(group, []).append(row)
    return {
        group: dict(zip(("n", "nb@1", "nb@5", "mrr", "cell@5"), (len(r), *np.mean(r, axis=0))))
        for group, r in rows.items()
    }


def queries_per_second(run, queries, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        for q in queries:
            run(q)
    return rounds * len(queries) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--gold", type=Path, default=ROOT.parent / "shared" / "gold" / "dev.jsonl")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()

    texts, places = corpus_cells(args.corpus)
    gold = [json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    answerable = [q for q in gold if q["expect"]]
    megabytes = sum(map(len, texts)) / 1e6

    analyzer = Analyzer()
    start = time.perf_counter()
    docs = [analyzer.terms(t) for t in texts]
    analyse_s = time.perf_counter() - start
    start = time.perf_counter()
    ours = BM25.build(docs)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    theirs.index(docs, show_progress=False)
    theirs_build_s = time.perf_counter() - start
    print(
        f"corpus: {len(texts)} cells, {megabytes:.1f} M characters, {sum(map(len, docs))} terms, "
        f"{len(ours.terms)} distinct"
    )
    print(
        f"analyse {analyse_s:.2f} s ({megabytes / analyse_s:.1f} M chars/s); "
        f"build: ours {build_s:.2f} s, bm25s {theirs_build_s:.2f} s\n"
    )

    query_terms = [analyzer.query_terms(q["query"]) for q in gold]
    query_terms = [q for q in query_terms if ours.columns(q)]  # bm25s cannot score an all-unknown query
    speed = {
        "scores": (lambda q: ours.score(q), lambda q: theirs.get_scores(q)),
        "top-10": (
            lambda q: ours.top_k(q, 10),
            lambda q: theirs.retrieve([q], k=10, show_progress=False, n_threads=0),
        ),
    }
    print(f"| BM25 queries/s ({len(query_terms)} queries x {args.rounds}) | cellar | bm25s | ratio |")
    print("|---|---|---|---|")
    for name, (mine, other) in speed.items():
        a = queries_per_second(mine, query_terms, args.rounds)
        b = queries_per_second(other, query_terms, args.rounds)
        print(f"| {name} | {a:,.0f} | {b:,.0f} | {a / b:.2f} |")

    def plain(**settings):
        terms = Analyzer(AnalyzerSettings(**settings)).terms
        return terms, terms

    variants = {  # name: (chunk analysis, query analysis)
        "bm25s.tokenize, English stop words (the README baseline's kind)": plain_bm25s(),
        "no stemming, no stop words": plain(languages=(), stopwords=False),
        "English stop words, no stemming": plain(languages=("english",), stem=False),
        "English": plain(languages=("english",)),
        "Dutch": plain(languages=("dutch",)),
        "English + Dutch, queries with both stems": (analyzer.terms, analyzer.terms),
        "English + Dutch, query language detected (default)": (analyzer.terms, analyzer.query_terms),
    }
    print(
        f"\nnotebook-level retrieval, {len(answerable)} answerable queries "
        "(gold README bm25s baseline: nb@1 .808, nb@5 .981, MRR .880, cell@5 .500)"
    )
    print("| analyser | lang | n | nb@1 | nb@5 | MRR | cell@5 |")
    print("|---|---|---|---|---|---|---|")
    for name, (chunk_terms, query_terms) in variants.items():
        bm = ours if chunk_terms is analyzer.terms else BM25.build([chunk_terms(t) for t in texts])
        for group, m in evaluate(bm, query_terms, places, answerable).items():
            print(
                f"| {name} | {group} | {m['n']:.0f} | {m['nb@1']:.3f} | {m['nb@5']:.3f} | "
                f"{m['mrr']:.3f} | {m['cell@5']:.3f} |"
            )


def plain_bm25s():
    """bm25s's own tokeniser (lower case, English stop words, no stemming), for chunks and queries."""

    def terms(text: str) -> list[str]:
        return bm25s.tokenize(text, stopwords="en", show_progress=False, return_ids=False)[0]

    return terms, terms


if __name__ == "__main__":
    main()
