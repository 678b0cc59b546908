"""Ingest: archive files in, typed, citable chunks out.

provenance    bytes -> SHA-256 revision, document snapshots
notebook      .ipynb bytes (nbformat 3 and 4.x) -> a typed Notebook, or a clear NotebookError
discovery     a folder -> the notebooks and documents in it
metadata      metadata.cellar and per-corpus rules -> each chunk's meta
windows       text -> word windows with exact offsets, and the coverage audit
code_facts    a code cell -> what it defines and imports, plot labels (via ast)
tables        DataFrame HTML -> Table, and any Table -> Markdown with a summary
text_tables   DataFrame / Series text reprs -> Table
chunks        the chunk record (Chunk, Chunked) and the maker that gives ids and offsets
outputs       a cell's outputs -> table, scalar, stream, plot and error chunks
chunking      a notebook or document -> all its chunks (ChunkRecord, cellar.records)
synth         template notebooks -> a deterministic synthetic archive (`cellar synth`)
scheduler     where per-file work runs (an index build's, a re-render's): this process, a process
              pool, or Dask
"""
