"""The documents a shard publishes for the site's document viewer, read back and checked.

`cellar.retrieval.shard` writes each indexed document's view (`cellar.ingest.documents.view`:
its extracted text and blocks) as `documents/<hash>.json.gz`, lists it with its bytes and SHA-256
in the manifest's `files`, and maps the document's archive path to it in the manifest's
`documents`. Reading one needs the manifest and that file only (not the notebook table or the
centroids a search needs): the manifest is checked against its own checksum, the file against the
manifest's SHA-256, and the view against the path asked for. Anything amiss is a ShardError
naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cellar.ingest.documents.view import checked_view
from cellar.retrieval.shard import MANIFEST, ShardError, checked_file, checked_manifest


def document_file(manifest: dict[str, Any], path: str, source: str = "shard") -> str:
    """The name of the file that holds `path`'s published view; a ShardError when the shard
    publishes none for it."""
    documents = manifest.get("documents")
    if not isinstance(documents, dict):
        raise ShardError(f"{source}/{MANIFEST}: publishes no documents (index the archive again with `cellar index`)")
    name = documents.get(path)
    if not isinstance(name, str):
        raise ShardError(f"{source}/{MANIFEST}: no published document {path!r}")
    return name


def published_document(read: Callable[[str], bytes], path: str, source: str = "shard") -> dict[str, Any]:
    """`path`'s published view (text, blocks, revision), every byte of it checked; `read(name)`
    gives a shard file's bytes."""
    manifest = checked_manifest(read(MANIFEST), source)
    name = document_file(manifest, path, source)
    data = checked_file(name, read(name), manifest["files"].get(name), source)
    try:
        return {**checked_view(json.loads(data), path, f"{source}/{name}"), "file": name}
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ShardError(f"{source}/{name}: damaged, not JSON ({error})") from None
    except ValueError as error:
        raise ShardError(str(error)) from None
