"""Dense recall@50 of a format-2 shard's clustered search against exact search, on gold questions.

    PYTHONPATH=py_src .venv/bin/python benchmarks/ivf_recall.py SHARD GOLD.jsonl [GOLD.jsonl ...]
        [--nprobe 12 14 20 29 40 58]

For each answerable question: its vector as the search makes it (a Dutch question's English
reading), the exact top 50 chunks over every cluster (cosines on the int8 codes, as the search
scores them), and the share of those in the clusters probing ``nprobe`` would read. Prints the
mean per gold set, at the shard's own nprobe (chosen at build on pseudo-questions,
``cellar.retrieval.ivf.choose_nprobe``) and at the others asked. Reads every cluster once, so
a 41,000-notebook shard needs about 1 GB of memory; a few seconds per question set.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from cellar.retrieval.embedding import default_model
from cellar.retrieval.ivf import DEPTH
from cellar.retrieval.search import Searcher
from cellar.retrieval.shard import open_shard
from cellar.retrieval.sources import cosines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shard")
    parser.add_argument("gold", nargs="+")
    parser.add_argument("--nprobe", type=int, nargs="*", default=[])
    args = parser.parse_args()
    model = default_model()
    shard = open_shard(args.shard, model)
    shard.decoded_limit = 1 << 40  # keep every cluster decoded: each question reads them all
    searcher = Searcher(shard, model)
    clusters = [shard.cluster(c) for c in range(len(shard.cluster_files))]
    owner = np.concatenate([np.full(len(rows), c) for c, (rows, *_) in enumerate(clusters)])
    probes = sorted({shard.nprobe, *args.nprobe})
    print(f"{args.shard}: {len(clusters)} clusters, the shard probes {shard.nprobe}")
    print("gold set".ljust(40) + "".join(f"{n:>8}" for n in probes))
    for gold in args.gold:
        rows = [json.loads(line) for line in Path(gold).read_text(encoding="utf-8").splitlines() if line.strip()]
        questions = [row["query"] for row in rows if row["expect"]]
        found = dict.fromkeys(probes, 0.0)
        for question in questions:
            reading = searcher._read_in_english(question)
            vector = model.encode([reading.text or question])[0]
            cosine = np.concatenate([cosines(codes, scales, vector) for _, _, codes, scales in clusters])
            exact = owner[np.argsort(-cosine, kind="stable")[:DEPTH]]
            for nprobe in probes:
                found[nprobe] += float(np.isin(exact, shard.probe(vector, nprobe)).mean())
        label = f"{Path(gold).name} ({len(questions)})"
        print(label.ljust(40) + "".join(f"{found[n] / len(questions):>8.3f}" for n in probes))


if __name__ == "__main__":
    main()
