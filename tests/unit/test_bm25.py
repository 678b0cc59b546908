"""cellar.retrieval.bm25 scores what bm25s scores (method "lucene", same k1 and b, same term lists), on the
shared corpus with the gold queries and on the repository's own small notebooks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import bm25s
import nbformat
import numpy as np
import pytest

from cellar.retrieval.analysis import Analyzer
from cellar.retrieval.bm25 import BM25, READING_WEIGHT, reading

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bm25"


def output_text(output: dict) -> str:
    if output["output_type"] == "stream":
        return output["text"]
    if output["output_type"] == "error":
        return f"{output['ename']}: {output['evalue']}"
    return output.get("data", {}).get("text/plain", "")


def cell_texts(folder: Path) -> list[str]:
    """Source + output text of every cell of every notebook below ``folder`` (edge/ left out)."""
    texts = []
    for path in sorted(folder.rglob("*.ipynb")):
        if "edge" in path.relative_to(folder).parts:
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            texts.append("\n".join([cell.source, *map(output_text, cell.get("outputs", []))]))
    return texts


@pytest.fixture(scope="module", params=["fixtures", "shared corpus"])
def case(request) -> tuple[list[list[str]], list[list[str]]]:
    """(documents as term lists, queries as term lists) for one corpus."""
    analyzer = Analyzer()
    if request.param == "fixtures":
        texts = cell_texts(FIXTURES)
        queries = (FIXTURES / "queries.txt").read_text(encoding="utf-8").splitlines()
    else:
        corpus = request.getfixturevalue("shared_corpus")
        gold = corpus.parent / "gold" / "dev.jsonl"
        texts = cell_texts(corpus)
        queries = [json.loads(line)["query"] for line in gold.read_text(encoding="utf-8").splitlines()]
    return [analyzer.terms(t) for t in texts], [analyzer.query_terms(q) for q in queries]


@pytest.fixture(scope="module")
def ours(case) -> BM25:
    return BM25.build(case[0])


@pytest.fixture(scope="module")
def theirs(case) -> bm25s.BM25:
    reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    reference.index(case[0], show_progress=False)
    return reference


def test_every_column_equals_bm25s(ours, theirs):
    assert ours.n_docs == theirs.scores["num_docs"]
    assert sorted(theirs.vocab_dict) == ["", *ours.terms]  # bm25s adds an empty placeholder term
    indptr, indices, data = (theirs.scores[k] for k in ("indptr", "indices", "data"))
    for j, term in enumerate(ours.terms):
        k = theirs.vocab_dict[term]
        mine = slice(ours.indptr[j], ours.indptr[j + 1])
        other = slice(indptr[k], indptr[k + 1])
        np.testing.assert_array_equal(ours.indices[mine], indices[other], err_msg=term)
        np.testing.assert_allclose(ours.data[mine], data[other], rtol=1e-6, err_msg=term)


def test_query_scores_equal_bm25s(case, ours, theirs):
    queries = [q for q in case[1] if q]
    assert queries
    for query in queries:
        np.testing.assert_allclose(ours.score(query), theirs.get_scores(query), atol=1e-5, err_msg=str(query))


def test_repeated_query_terms_count_as_in_bm25s(case, ours, theirs):
    query = next(q for q in case[1] if len(ours.columns(q)) >= 2)
    doubled = query + query[:2]
    np.testing.assert_allclose(ours.score(doubled), theirs.get_scores(doubled), atol=1e-5)
    assert ours.score(doubled).sum() > ours.score(query).sum()


def test_top_k_is_the_best_k_of_the_full_ranking(case, ours):
    for query in case[1]:
        scores = ours.score(query)
        full = [i for i in np.lexsort((np.arange(len(scores)), -scores)) if scores[i] > 0]
        for k in (1, 3, 10):
            docs, top = ours.top_k(query, k)
            assert docs.tolist() == full[:k]
            np.testing.assert_array_equal(top, scores[docs])


def test_top_k_breaks_ties_by_document_number():
    bm = BM25.build([["valve"], ["pump"], ["pump"], ["pump"], ["pump"], ["pump", "pump"]])
    assert bm.top_k(["pump"], 3)[0].tolist() == [5, 1, 2]
    assert bm.top_k(["pump"], 10)[0].tolist() == [5, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="k >= 1"):
        bm.top_k(["pump"], 0)


def test_arrays_survive_npy_files(tmp_path, case, ours):
    for name, array in ours.to_arrays().items():
        np.save(tmp_path / f"{name}.npy", array)
    loaded = BM25.from_arrays({p.stem: np.load(p) for p in tmp_path.glob("*.npy")})
    assert loaded.terms == ours.terms and (loaded.n_docs, loaded.k1, loaded.b) == (ours.n_docs, 1.2, 0.75)
    assert (loaded.data.dtype, loaded.indices.dtype, loaded.indptr.dtype) == (np.float32, np.int32, np.int64)
    for query in case[1]:
        np.testing.assert_array_equal(loaded.score(query), ours.score(query))


def test_the_lucene_formula_by_hand():
    bm = BM25.build([["pump", "valve"], ["pump"], ["tank", "tank", "tank"]], k1=1.2, b=0.75)
    avgdl = 2.0
    idf_pump = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_tank = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected_pump = [idf_pump * 1 / (1 + 1.2 * (0.25 + 0.75 * dl / avgdl)) for dl in (2, 1)] + [0.0]
    np.testing.assert_allclose(bm.score(["pump"]), expected_pump, rtol=1e-6)
    np.testing.assert_allclose(bm.score(["tank"])[2], idf_tank * 3 / (3 + 1.2 * (0.25 + 0.75 * 3 / avgdl)), rtol=1e-6)
    # A shorter document with the same term frequency scores higher (length normalisation b).
    assert bm.score(["pump"])[1] > bm.score(["pump"])[0]


def test_a_reading_counts_half_an_occurrence_in_frequency_and_length():
    """A Dutch chunk's English reading (``reading``) is a weighted field, as in BM25F: its term
    counts READING_WEIGHT of an occurrence, a word of the text and its reading add up, and the
    document's length counts it at that weight; the vocabulary holds the term once."""
    bm = BM25.build([["pomp", reading("pump")], ["pump"], ["pump", reading("pump")], ["valve", "valve"]])
    assert bm.terms == ["pomp", "pump", "valve"]
    avgdl = (1.5 + 1 + 1.5 + 2) / 4
    idf = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))
    expected = [
        idf * tf / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl)) for tf, dl in ((READING_WEIGHT, 1.5), (1, 1), (1.5, 1.5))
    ]
    np.testing.assert_allclose(bm.score(["pump"])[:3], expected, rtol=1e-6)
    assert 0 < bm.score(["pump"])[0] < bm.score(["pump"])[1] < bm.score(["pump"])[2]


def test_unknown_and_empty_queries_score_zero():
    bm = BM25.build([["pump"], ["valve"]])
    assert bm.score(["nothing", "here"]).tolist() == [0.0, 0.0]
    assert bm.score([]).tolist() == [0.0, 0.0]
    docs, scores = bm.top_k(["nothing"], 5)
    assert docs.tolist() == [] and scores.tolist() == []


def test_empty_documents_are_allowed_but_an_empty_corpus_is_not():
    bm = BM25.build([[], ["pump"]])
    assert bm.score(["pump"])[0] == 0 and bm.score(["pump"])[1] > 0
    assert BM25.build([[], []]).score(["pump"]).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="at least one document"):
        BM25.build([])


def test_mismatched_arrays_are_refused():
    arrays = BM25.build([["pump", "valve"], ["pump"]]).to_arrays()
    with pytest.raises(ValueError, match="missing"):
        BM25.from_arrays({k: v for k, v in arrays.items() if k != "indptr"})
    with pytest.raises(ValueError, match="disagree"):
        BM25.from_arrays({**arrays, "data": arrays["data"][:-1]})
    with pytest.raises(ValueError, match="disagree"):
        BM25.from_arrays({**arrays, "terms_offsets": arrays["terms_offsets"][:-1]})
