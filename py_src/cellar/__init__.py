"""Cellar: search and re-run an archive of Jupyter notebooks in the browser, without a server.

The package is pure Python and runs the same on CPython 3.11+ (building the index) and in
Pyodide (searching it in a browser tab). One subpackage per flow, one module per stage:

    records      the contracts every flow shares (chunk, answer, shard entry, report entry)
    terminal     text from an archive or a notebook as a terminal may print it
    ingest       archive files -> notebooks -> typed chunks
    rerender     path map -> sandbox -> fresh outputs -> compare -> report
    retrieval    chunks -> index -> shard -> search -> answers (and their evaluation)
    lessons      lesson folders -> learner runs and checks
    site         the pages' bridge and the local server
    cli          the `cellar` console script

Dependencies point down that list and never up (tests/unit/test_layout.py checks it).
"""

__version__ = "0.1.0"
