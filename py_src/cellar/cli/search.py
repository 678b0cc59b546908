"""`cellar search SHARD QUERY [--k N] [--json] [--year-from Y] [--year-to Y] [--project P]
[--path-prefix PREFIX] [--kind KIND ...] [--include-deprecated] [--source SOURCE ...]
[--field KEY=VALUE ...] [--route] [--model DIR]`: search a shard.

--source keeps notebooks, documents, clause collections or records (repeatable); --field keeps
the service notes whose structured field KEY is VALUE (`--field machine=T2-0457`). A question that
names a note's field value (a machine id, a fault code) asks those notes first and falls back to
the other sources (never another machine's notes) when they cannot answer; --route also asks a
normative question (shall, must, vereist) the clause collections first, falling back to every
source (cellar.retrieval.routing). The listing says what was searched.

Prints the answer contract of DESIGN.md as JSON (--json) or a readable listing. Exit status: 0
with an answer; 3 when the answer is a refusal; 2 for unusable arguments or an unusable shard
(missing, damaged: a file whose SHA-256 does not match the manifest, a partition, cluster or
notebook container read during the search included, or built with another model), with a message naming the file.
"""

from __future__ import annotations

import argparse
import json
import sys

from cellar.records import KINDS, Answer
from cellar.retrieval.embedding import default_model_dir, load_model
from cellar.retrieval.filters import SOURCES
from cellar.retrieval.routing import DEFAULT_RULES, RULES, Router
from cellar.retrieval.search import Filters, Searcher
from cellar.retrieval.shard import ShardError, open_shard
from cellar.terminal import shown


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "search", help="search a shard", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("shard", metavar="SHARD", help="shard folder (cellar index --out)")
    parser.add_argument("query", metavar="QUERY")
    parser.add_argument("--k", type=int, default=3, help="notebooks to return (default 3)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument(
        "--route",
        action="store_true",
        help="also ask a requirement (shall, must, vereist) the standards first; a machine id always asks its notes first",
    )
    add_filter_arguments(parser)
    parser.add_argument(
        "--model",
        default=str(default_model_dir()),
        metavar="DIR",
        help="embedding model folder (default: the packaged model)",
    )
    parser.set_defaults(func=run)


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--year-from", type=int, metavar="YEAR")
    parser.add_argument("--year-to", type=int, metavar="YEAR")
    parser.add_argument("--project", metavar="PROJECT")
    parser.add_argument("--path-prefix", metavar="PREFIX")
    parser.add_argument("--kind", action="append", choices=KINDS, default=[], help="chunk kinds (repeatable)")
    parser.add_argument("--include-deprecated", action="store_true", help="also search deprecated notebooks")
    parser.add_argument("--source", action="append", choices=SOURCES, default=[], help="sources (repeatable)")
    parser.add_argument(
        "--field", action="append", default=[], metavar="KEY=VALUE", help="a record's field, e.g. machine=T2-0457"
    )


def filters_of(args: argparse.Namespace) -> Filters:
    """The Filters the filter arguments ask for; a ValueError for a --field without `=`, or a
    year range that ends before it starts (which no notebook could pass: a refusal that blamed
    the archive)."""
    if args.year_from is not None and args.year_to is not None and args.year_from > args.year_to:
        raise ValueError(f"--year-from {args.year_from} is after --year-to {args.year_to}")
    fields = []
    for raw in args.field:
        key, equals, value = raw.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"--field {raw!r}: give KEY=VALUE, e.g. machine=T2-0457")
        fields.append((key.strip().lower(), value.strip()))
    return Filters(
        args.year_from, args.year_to, args.project, args.path_prefix, tuple(args.kind), args.include_deprecated,
        tuple(args.source), tuple(fields),
    )  # fmt: skip


def open_searcher(shard: str, model_dir: str, nprobe: int | None = None) -> Searcher:
    model = load_model(model_dir)
    return Searcher(open_shard(shard, model), model, nprobe=nprobe)


def run(args: argparse.Namespace) -> int:
    try:
        if args.k < 1:
            raise ValueError("--k must be at least 1")
        searcher = open_searcher(args.shard, args.model)
        filters = filters_of(args)
    except (OSError, ValueError) as error:
        print(f"cellar search: {error}", file=sys.stderr)
        return 2
    try:
        answer = Router(searcher, RULES if args.route else DEFAULT_RULES).search(args.query, k=args.k, filters=filters)
    except (ShardError, OSError) as error:  # a file read on demand that is missing or damaged
        print(f"cellar search: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=1))
    else:
        print(listing(answer))
    return 3 if answer["refused"] else 0


def listing(answer: Answer) -> str:
    """The answer for a terminal: notebooks, their hits and neighbourhoods, or the refusal; a
    control character of a file's name or text written as its escape (``shown``)."""
    cut = answer.get("cut")
    said = (
        [f"only the first {cut['read_chars']:,} of the question's {cut['asked_chars']:,} characters were read"]
        if cut
        else []
    )
    if answer["refused"]:
        return "\n".join(shown(line) for line in [*said, f"refused: {answer['refusal_reason']}"])
    lines = said
    for number, nb in enumerate(answer["notebooks"], 1):
        status = nb["status"] + (", deprecated" if nb["meta"].get("deprecated") else "")
        lines.append(f"{number}. {nb['path']}  [{status}]  score {nb['score']:.4f}")
        lines.append(f"   {nb['title']}  (revision {nb['revision'][:12]})")
        if nb.get("warning"):
            lines.append(f"   warning: {nb['warning']}")
        for hit in nb["hits"]:
            where = f"cell {hit['cell']}" + (f" output {hit['output']}" if hit["output"] is not None else "")
            where += f" {hit['kind']}"
            if "citation" in hit:  # a document's block: its source and its citation, as read aloud
                where = f"{hit.get('source', 'document')} {hit['citation']}"
            quote = " ".join(hit["quote"].split())[:100]
            lines.append(f"   - {where}: {quote}")
    route = answer.get("route")
    if route and route["rule"] != "none":
        lines.append(
            f"searched {', then '.join(route['sources'])} ({route['rule']} rule{', fell back' if route['fell_back'] else ''})"
        )
    if route and route["deprecated"]:
        lines.append("nothing current answers this: the answer comes from a deprecated notebook, kept for the record")
    lines.append(f"({answer['timings_ms']['total']:.1f} ms)")
    return "\n".join(map(shown, lines))
