"""Cellar: search and re-run an archive of Jupyter notebooks in the browser, without a server.

The package is pure Python and runs the same on CPython 3.11+ (building the index) and in
Pyodide (searching it in a browser tab). One module per stage of the data flow:

    provenance -> notebook -> chunking -> analysis / embedding -> index -> shard -> search
"""

__version__ = "0.1.0"
