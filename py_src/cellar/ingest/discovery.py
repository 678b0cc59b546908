"""Finding the documents of a folder.

In: a folder. Out: the paths of the notebooks and plain documents below it (`DOCUMENT_SUFFIXES`),
sorted, hidden files and folders left out.
"""

from __future__ import annotations

import os

DOCUMENT_SUFFIXES = (".ipynb", ".md", ".markdown", ".txt")


def find_documents(directory: str | os.PathLike[str]) -> list[str]:
    """The notebooks and plain documents below `directory`, sorted; hidden files and folders
    (`.ipynb_checkpoints`, `.git`) are left out."""
    found = []
    for folder, folders, files in os.walk(directory):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        found += [
            os.path.join(folder, name)
            for name in sorted(files)
            if name.lower().endswith(DOCUMENT_SUFFIXES) and not name.startswith(".")
        ]
    return found
