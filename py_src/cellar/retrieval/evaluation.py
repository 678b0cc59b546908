"""Evaluation: gold questions in, a scorecard and refusal calibration out.

A gold set (shared/gold/README.md) is JSON lines of questions with the notebooks and cells that
answer them (none for an out-of-scope question); a document's expected block is given by its
path, a verbatim ``evidence`` from its quote and its ``citation`` (``cell`` null), and is scored
``block_first`` and ``citation_exact`` (``judge_citation``). ``evaluate`` runs every question through a
``Searcher`` and scores the answers (``judge``, ``scorecard``); ``calibrate`` fits the three
refusal thresholds that ``cellar index --calibrate`` stores in the shard.

Thresholds fitted on a gold set and scored on it flatter refusal. So ``scorecards`` (what
``cellar eval`` prints) judges refusal out of sample by default: ``cross_validate`` deals the
questions into k folds (``assign_folds``: deterministic, stratified by kind) and judges each fold
with the thresholds fitted on the others. The shard's stored calibration is scored only when
asked for (``calibration="stored"``), and the scorecard says which was used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from cellar.ingest.discovery import lone_surrogate
from cellar.ingest.provenance import revision
from cellar.retrieval.refusal import WAIVERS, refuses
from cellar.retrieval.routing import DEFAULT_RULES, Router
from cellar.retrieval.search import Searcher

FOLDS = 5  # k of the out-of-sample calibration (cross_validate)
CALIBRATIONS = ("out-of-sample", "stored")


def read_gold(lines: Iterable[str], where: str = "gold") -> list[dict[str, Any]]:
    """Gold questions from JSON lines (see shared/gold/README.md); blank lines are skipped. A line
    that is no gold question, two with one id, or a set without a question is a ValueError
    naming the file (and the line): a malformed question scored as any other skews the figures,
    and thresholds calibrated on it ship."""
    rows = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            problem = gold_problem(row)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
            problem = str(error)
        if problem:
            raise ValueError(f"{where}:{number}: not a gold question ({problem})")
        if "id" in row:
            if row["id"] in seen:
                raise ValueError(f"{where}:{number}: the id {row['id']!r} is also that of line {seen[row['id']]}")
            seen[row["id"]] = number
        rows.append(row)
    if not rows:
        raise ValueError(f"{where}: holds no gold question")
    return rows


def gold_problem(row: Any) -> str | None:
    """What is wrong with one decoded gold line, or None: a JSON object with a non-empty `query`,
    an `expect` list of objects each with a `path` and a `cell` (a cell number, or null for a
    document's block), optional `id`, `lang` and `kind` strings; `out_of_scope` questions expect
    nothing."""
    if not isinstance(row, dict):
        return f"a JSON object is needed, not {type(row).__name__}"
    if not isinstance(row.get("query"), str) or not row["query"].strip():
        return "query must be a string that is not empty"
    if not isinstance(row.get("expect"), list):
        return "expect must be a list"
    for key in ("id", "lang", "kind"):
        if key in row and not isinstance(row[key], str):
            return f"{key} must be a string"
    for entry in row["expect"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            return "each expect entry must be an object with a path"
        cell = entry.get("cell")
        if cell is not None and (type(cell) is not int or cell < 0):
            return f"a cell is a cell number (0 or more) or null, not {json.dumps(cell)}"
    if row.get("kind") == "out_of_scope" and row["expect"]:
        return "an out_of_scope question expects nothing"
    return lone_surrogate(row)  # no UTF-8 form: it could be neither printed nor stored


def judge(row: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """How one answer scores against one gold question: notebook rank, the three cell figures
    (``cell_hit``: an expected cell among the hits or neighbourhood of the top 5 notebooks, what
    the product shows; ``cell_strict``: among their hits alone; ``cell_first``: the top notebook's
    first hit), refusal."""
    notebooks = answer["notebooks"][:5]
    paths = [nb["path"] for nb in answer["notebooks"]]
    expected = {e["path"] for e in row["expect"]}
    rank = next((i for i, path in enumerate(paths, 1) if path in expected), None)
    cells = {(e["path"], e["cell"]) for e in row["expect"]}
    hits = {(nb["path"], hit["cell"]) for nb in notebooks for hit in nb["hits"]}
    shown = hits | {(nb["path"], item["cell"]) for nb in notebooks for item in nb["neighbourhood"]}
    first = (notebooks[0]["path"], notebooks[0]["hits"][0]["cell"]) if notebooks and notebooks[0]["hits"] else None
    judged = {
        "answerable": bool(row["expect"]),
        "rank": rank,
        "cell_hit": bool(cells & shown),
        "cell_strict": bool(cells & hits),
        "cell_first": first in cells,
        "refused": answer["refused"],
    }
    cited = [e for e in row["expect"] if e.get("citation")]
    if cited:
        judged.update(
            judge_citation(cited, notebooks[0]["hits"][0] if first else None, notebooks[0]["path"] if first else "")
        )
    return judged


def judge_citation(expect: Sequence[Mapping[str, Any]], hit: Mapping[str, Any] | None, path: str) -> dict[str, Any]:
    """A document question's figures (its gold names the block by ``path``, ``evidence``, a
    verbatim piece of its quote, and ``citation``): ``block_first``, whether the top answer's
    first hit is that block; ``citation_exact``, whether that hit's citation is the gold's, to
    the character (scored over answered questions: the citation a reader is given is right)."""
    if hit is None:
        return {"cited": True, "block_first": False, "citation_exact": False}
    block = any(e["path"] == path and e.get("evidence", "") in hit["quote"] for e in expect)
    exact = any(e["path"] == path and e["citation"] == hit.get("citation") for e in expect)
    return {"cited": True, "block_first": block, "citation_exact": exact}


def scorecard(judged: Sequence[Mapping[str, Any]], latencies: Sequence[float]) -> dict[str, Any]:
    """The figures of gold/README.md over judged answers (``judge``) and latencies in ms, with the
    strict cell figures ``cell_strict@5`` and ``cell_first`` beside the product's ``cell_hit@5``."""
    answerable = [j for j in judged if j["answerable"]]
    unanswerable = [j for j in judged if not j["answerable"]]

    def share(items: Sequence[Any], test: Callable[[Any], bool]) -> float | None:
        return round(sum(map(test, items)) / len(items), 4) if items else None

    def ranked_within(at: int) -> Callable[[Any], bool]:
        return lambda j: j["rank"] is not None and j["rank"] <= at

    figures: dict[str, Any] = {"n": len(judged)}
    for at in (1, 3, 5):
        figures[f"notebook_hit@{at}"] = share(answerable, ranked_within(at))
    figures["cell_hit@5"] = share(answerable, lambda j: j["cell_hit"])
    figures["cell_strict@5"] = share(answerable, lambda j: j.get("cell_strict", False))
    figures["cell_first"] = share(answerable, lambda j: j.get("cell_first", False))
    figures["mrr"] = (
        round(sum(1 / j["rank"] for j in answerable if j["rank"]) / len(answerable), 4) if answerable else None
    )
    figures["refusal_recall"] = share(unanswerable, lambda j: j["refused"])
    figures["false_refusal_rate"] = share(answerable, lambda j: j["refused"])
    cited = [j for j in answerable if j.get("cited")]
    if cited:  # document questions: the block and its citation (judge_citation)
        figures["block_first"] = share(cited, lambda j: j["block_first"] and not j["refused"])
        figures["citation_exact"] = share([j for j in cited if not j["refused"]], lambda j: j["citation_exact"])
    if latencies:
        ordered = sorted(latencies)
        figures["latency_ms"] = {
            "p50": round(float(np.percentile(ordered, 50)), 3),
            "p95": round(float(np.percentile(ordered, 95)), 3),
        }
    return figures


def evaluate(
    searcher: Searcher,
    gold: Sequence[Mapping[str, Any]],
    mode: str = "hybrid",
    thresholds: Sequence[Mapping[str, float]] | None = None,
    rules: Sequence[str] = DEFAULT_RULES,
) -> dict[str, Any]:
    """The scorecard of ``searcher`` on ``gold``: overall, ``by_kind`` and ``by_lang``, with
    latency p50/p95 of a whole search and per stage, and each question's verdict (``questions``:
    ``question_verdict``); each question routed by the ``rules`` (the field rule by default, as
    every search; ``cellar.retrieval.routing``).

    ``thresholds``: the refusal thresholds to judge each question with (one mapping per gold
    question, as ``cross_validate`` gives them); without them, the searcher's own (the shard's
    stored calibration), which is in sample when that calibration was fitted on ``gold``."""
    if thresholds is not None and len(thresholds) != len(gold):
        raise ValueError(f"{len(thresholds)} sets of thresholds for {len(gold)} questions")
    judged: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    router = Router(searcher, rules)
    for i, row in enumerate(gold):
        verdict: Callable[[Any], bool] = lambda ranking: ranking.refused  # noqa: E731
        if thresholds is not None:
            verdict = partial(_refused_by, thresholds[i])
        # the routed source first, all of them when its thresholds refuse
        ranking = router.rank(row["query"], k=5, mode=mode, refused=verdict)[0]
        if thresholds is not None:
            ranking = replace(ranking, refused=verdict(ranking))
        answer = searcher.answer(ranking)
        judged.append({**judge(row, answer), "kind": row.get("kind"), "lang": row.get("lang")})
        questions.append(question_verdict(row, answer, judged[-1]))
        latencies.append(answer["timings_ms"]["total"])
        for stage, ms in answer["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    card = scorecard(judged, latencies)
    card["latency_ms"] = {**card.get("latency_ms", {}), "stages": {
        stage: {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)}
        for stage, v in stages.items() if stage != "total"
    }}  # fmt: skip
    for group in ("kind", "lang"):
        values = sorted({j[group] for j in judged if j[group] is not None})
        card[f"by_{group}"] = {
            value: {key: figure for key, figure in scorecard([j for j in judged if j[group] == value], []).items()}
            for value in values
        }
    card["questions"] = questions
    return card


def question_verdict(row: Mapping[str, Any], answer: Mapping[str, Any], judged: Mapping[str, Any]) -> dict[str, Any]:
    """One gold question's line of the scorecard: what ``judge`` found, and what the search put
    first (``top``: the first notebook or document and its first hit's cell or citation; for a
    refusal, the closest one and the reason given), so that whoever writes a gold set for an
    archive sees which questions fail and how."""
    shown = answer["notebooks"] or answer.get("closest") or []
    top = None
    if shown:
        hit = shown[0]["hits"][0] if shown[0]["hits"] else {}
        top = {"path": shown[0]["path"], "cell": hit.get("cell"), "citation": hit.get("citation")}
    verdict = {
        "id": row.get("id"),
        "query": row["query"],
        "kind": row.get("kind"),
        "lang": row.get("lang"),
        **{key: judged[key] for key in ("answerable", "rank", "cell_strict", "cell_first", "refused")},
        "top": top,
    }
    if "block_first" in judged:
        verdict.update(block_first=judged["block_first"], citation_exact=judged["citation_exact"])
    if answer["refused"]:
        verdict["reason"] = answer.get("refusal_reason") or ""
    return verdict


def _refused_by(thresholds: Mapping[str, float], ranking: Any) -> bool:
    return not ranking.notebooks or refuses(ranking.evidence, thresholds)


def assign_folds(gold: Sequence[Mapping[str, Any]], folds: int = FOLDS) -> list[int]:
    """The fold of each gold question, deterministic and stratified: the questions are taken kind
    by kind (``out_of_scope`` is a kind, so every fold gets out-of-scope questions as long as there
    are as many as folds), in the order of the SHA-256 of their id (the query when there is none),
    and dealt to the folds in turn, the deal going on from one kind to the next."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {folds}")

    def key(i: int) -> tuple[str, str]:
        row = gold[i]
        name = str(row["id"] if "id" in row else row["query"])
        return (str(row.get("kind") or ("answerable" if row["expect"] else "out_of_scope")), revision(name))

    result = [0] * len(gold)
    for turn, i in enumerate(sorted(range(len(gold)), key=key)):
        result[i] = turn % folds
    return result


def cross_validate(
    searcher: Searcher, gold: Sequence[Mapping[str, Any]], folds: int = FOLDS, max_false: float = 0.10
) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """Out-of-sample refusal thresholds: k-fold over ``gold`` (``assign_folds``); each fold's
    questions get the thresholds ``calibrate`` fits on the other folds, so no threshold is ever
    scored on a question that set it. Returns the thresholds per question and what was done (the
    folds, their sizes and thresholds), for the scorecard."""
    if len(gold) < 2:
        raise ValueError(
            f"a gold set of {len(gold)} question(s) cannot be judged out of sample: add questions, or judge it "
            "with the shard's stored thresholds (--calibration stored)"
        )
    folds = min(folds, len(gold))
    assigned = assign_folds(gold, folds)
    features = _features(searcher, gold)
    per_question: list[dict[str, float]] = [{} for _ in gold]
    report = []
    for fold in range(folds):
        train = [f for f, a in zip(features, assigned) if a != fold]
        if not any(ok for ok, _ in train):
            raise ValueError(f"fold {fold + 1} of {folds}: the other folds hold no answerable question to calibrate on")
        fitted = calibrate_features(train, max_false)
        test = [i for i, a in enumerate(assigned) if a == fold]
        for i in test:
            source = features[i][1].get("source", "notebook")
            per_question[i] = fitted.get("by_source", {}).get(source, fitted["thresholds"])
        report.append(
            {
                "questions": len(test),
                "out_of_scope": sum(not gold[i]["expect"] for i in test),
                "thresholds": fitted["thresholds"],
                **({"by_source": fitted["by_source"]} if "by_source" in fitted else {}),
            }
        )
    return per_question, {"method": f"{folds}-fold out of sample", "max_false": max_false, "folds": report}


def scorecards(
    searcher: Searcher,
    gold: Sequence[Mapping[str, Any]],
    modes: Sequence[str] = ("hybrid",),
    calibration: str = "out-of-sample",
    folds: int = FOLDS,
    rules: Sequence[str] = DEFAULT_RULES,
) -> dict[str, dict[str, Any]]:
    """One scorecard per mode (``evaluate``), each with a ``calibration`` entry saying how refusal
    was judged: ``out-of-sample`` (the default: ``cross_validate``) or ``stored`` (the shard's own
    thresholds, in sample when they were calibrated on ``gold``)."""
    if calibration == "stored":
        thresholds = None
        how: dict[str, Any] = {"method": "stored", "thresholds": dict(searcher.calibration)}
    elif calibration == "out-of-sample":
        thresholds, how = cross_validate(searcher, gold, folds)
    else:
        raise ValueError(f"unknown calibration {calibration!r}; choose from {list(CALIBRATIONS)}")
    return {
        mode: {**evaluate(searcher, gold, mode, thresholds, rules), "calibration": how, "routed": list(rules)}
        for mode in modes
    }


def calibrate(searcher: Searcher, gold: Sequence[Mapping[str, Any]], max_false: float = 0.10) -> dict[str, Any]:
    """Refusal thresholds from a gold set, for the evidence of a hybrid search.

    Every combination of thresholds (coverage, numbers, similarity) taken from the answerable
    questions' own values (or 0) is tried with ``refuses``'s rule; the one that refuses the most
    out-of-scope questions while refusing at most ``max_false`` of the answerable ones wins (ties:
    fewer answerable refused, then the lower thresholds). Each threshold is then lowered to the middle of the gap
    below it, which refuses the same gold questions but leaves a margin for questions not seen.
    Returns the calibration to store in ``index.calibration``."""
    return calibrate_features(_features(searcher, gold), max_false)


def _features(searcher: Searcher, gold: Sequence[Mapping[str, Any]]) -> list[tuple[bool, dict[str, Any]]]:
    """(answerable, evidence of a hybrid search) per gold question: what calibration fits."""
    return [(bool(row["expect"]), searcher.rank(row["query"], k=1).evidence) for row in gold]


def calibrate_features(features: Sequence[tuple[bool, Mapping[str, Any]]], max_false: float = 0.10) -> dict[str, Any]:
    """``calibrate`` on precomputed (answerable, evidence) pairs: the archive's thresholds over
    all of them and, when the best entries come from several sources, each source's own
    (``by_source``) over the questions whose best entry is of that source and which hold an
    answerable one (the others keep the archive's). A source whose questions are all answerable
    gets the archive's thresholds lowered so as to refuse none of them (``_passing``)."""
    fitted = _calibrated(features, max_false)
    groups: dict[str, list[tuple[bool, Mapping[str, Any]]]] = {}
    for ok, evidence in features:
        groups.setdefault(evidence.get("source", "notebook"), []).append((ok, evidence))
    if len(groups) > 1:
        fitted["by_source"] = {
            name: _passing(fitted["thresholds"], group)
            if all(ok for ok, _ in group)
            else _calibrated(group, max_false)["thresholds"]
            for name, group in sorted(groups.items())
            if any(ok for ok, _ in group)
        }
    return fitted


def _passing(thresholds: Mapping[str, float], group: Sequence[tuple[bool, Mapping[str, Any]]]) -> dict[str, float]:
    """``thresholds`` (the archive's), each lowered to the least value of ``group``'s evidence
    that its test weighs (not where ``refuses`` waives the test), so that none of its questions
    is refused. Thresholds fitted on answerable questions alone came out 0, and the source's
    entries were never refused: the demo's notebook gold set, whose few questions that come
    closest to a report are answerable, let every out-of-scope question closest to a report
    through."""
    lowered = {}
    for name, value in thresholds.items():
        key = name.removeprefix("min_")
        needs = [e[key] for _, e in group if e.get(key) is not None and not (key in WAIVERS and WAIVERS[key](e))]
        lowered[name] = min([value, *needs])
    return lowered


# The evidence each threshold of ``refuses`` tests (``min_<key>``), in the order the fits take them.
THRESHOLD_KEYS = ("coverage", "numbers", "similarity", "known", "quantity")


def evidence_table(evidence: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """(questions, THRESHOLD_KEYS): each question's evidence, inf where it has none (no test)."""
    return np.array([[e.get(key) if e.get(key) is not None else np.inf for key in THRESHOLD_KEYS] for e in evidence])


def refused_at(mesh: np.ndarray, values: np.ndarray, evidence: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """(combinations, questions): whether ``refuses`` refuses each question (``values``, its
    ``evidence_table``, and ``evidence``, which the waivers read) at each row of thresholds of
    ``mesh``: the rule of ``refuses``, for every combination at once."""
    under = values[None, :, :] < mesh[:, None, :]  # (combinations, questions, thresholds)
    for i, key in enumerate(THRESHOLD_KEYS):
        if key in WAIVERS:
            under[:, :, i] &= ~np.array([WAIVERS[key](e) for e in evidence])
    return under.any(axis=2)


def _calibrated(features: Sequence[tuple[bool, Mapping[str, Any]]], max_false: float) -> dict[str, Any]:
    if not any(ok for ok, _ in features):
        raise ValueError("calibration needs answerable questions in the gold set")
    evidence = [e for _, e in features]
    values = evidence_table(evidence)
    answerable = np.array([ok for ok, _ in features])
    grids = [np.unique(np.concatenate([[0.0], column[answerable & np.isfinite(column)]])) for column in values.T]
    mesh = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(THRESHOLD_KEYS))
    refused = refused_at(mesh, values, evidence)
    false = refused[:, answerable].sum(axis=1)
    caught = refused[:, ~answerable].sum(axis=1)
    allowed = np.flatnonzero(false <= max_false * answerable.sum())
    order = np.lexsort(
        (*(mesh[allowed, i] for i in reversed(range(len(THRESHOLD_KEYS)))), false[allowed], -caught[allowed])
    )
    chosen = allowed[order[0]]
    thresholds = {}
    for i, key in enumerate(THRESHOLD_KEYS):
        below = values[:, i][values[:, i] < mesh[chosen, i]]
        thresholds[f"min_{key}"] = round(float((mesh[chosen, i] + below.max()) / 2) if len(below) else 0.0, 4)
    check = [refuses(e, thresholds) for _, e in features]
    return {
        "thresholds": thresholds,
        "gold": {"questions": len(features), "answerable": int(answerable.sum()), "max_false": max_false},
        "refused": {
            "out_of_scope": sum(r for r, ok in zip(check, answerable) if not ok),
            "answerable": sum(r for r, ok in zip(check, answerable) if ok),
        },
    }
