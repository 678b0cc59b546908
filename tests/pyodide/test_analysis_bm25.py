"""cellar.retrieval.analysis and cellar.retrieval.bm25 in Pyodide compute what they compute in CPython: the browser must
analyse a query exactly as the index build analysed the chunks, and score it the same."""

from __future__ import annotations

import json

import numpy as np

from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
from cellar.retrieval.bm25 import BM25

TEXTS = [
    "df.groupby('key').median_house_value.mean()",
    "fluids.friction_factor(Re=1E5, eD=0) -> 0.0181; RandomForestRegressor HTTPServer",
    "Ballast: achterpiek 1,284.6 m³, voorpiek 412.1 m³ (tekening 17-042, E-407, 3.5e-3)",
    "Wat is het drukverlies in de leidingen voor stookolie met SG 0,815?",
    "what is the pressure drop of the pumps in the pipes",
    "Café NAÏVE Ångström straße ﬁle Cafe\u0301 Δp ρ·v² 船 emoji \U0001f6a2",
    "De KK VK van veld 3 is vervangen",
]
SETTINGS = AnalyzerSettings(glossary={"kk vk": "kortsluiting vermogensschakelaar"})


def run_json(pyodide, code: str, value) -> object:
    """Run ``code`` in Pyodide with ``value`` bound to the name ``value`` (passed as JSON)."""
    return pyodide.run(f"import json\nvalue = json.loads({json.dumps(json.dumps(value))})\n{code}")


def test_terms_and_query_terms_equal_cpython(pyodide):
    code = """
from cellar.retrieval.analysis import Analyzer, AnalyzerSettings
analyzer = Analyzer(AnalyzerSettings.from_dict(value["settings"]))
[[analyzer.terms(t), analyzer.query_terms(t)] for t in value["texts"]]
"""
    analyzer = Analyzer(SETTINGS)
    expected = [[analyzer.terms(t), analyzer.query_terms(t)] for t in TEXTS]
    assert run_json(pyodide, code, {"settings": SETTINGS.to_dict(), "texts": TEXTS}) == expected


def test_scores_and_top_k_equal_cpython(pyodide):
    analyzer = Analyzer()
    docs = [analyzer.terms(t) for t in TEXTS]
    queries = [analyzer.query_terms(t) for t in ("pressure drop leidingen", "friction factor 17-042", "Δp 船")]
    bm = BM25.build(docs)
    arrays = bm.to_arrays()
    code = """
import numpy as np
from cellar.retrieval.bm25 import BM25
built = BM25.build(value["docs"])
loaded = BM25.from_arrays({k: np.asarray(v, dtype=d) for (k, v), d in zip(value["arrays"].items(), value["dtypes"])})
[[built.score(q).tolist(), loaded.score(q).tolist(), built.top_k(q, 3)[0].tolist()] for q in value["queries"]]
"""
    result = run_json(
        pyodide,
        code,
        {
            "docs": docs,
            "queries": queries,
            "arrays": {name: array.tolist() for name, array in arrays.items()},
            "dtypes": [str(array.dtype) for array in arrays.values()],
        },
    )
    for (built, loaded, top), query in zip(result, queries):
        np.testing.assert_allclose(built, bm.score(query), rtol=1e-6)
        assert loaded == built
        assert top == bm.top_k(query, 3)[0].tolist()
