"""Re-render: a notebook, its path map and blobs in; fresh outputs, a verdict and a report out.

vfs            logical paths of old notebooks (UNC, drive letters, POSIX) -> content-addressed blobs
archive        `cellar blobs add / check`: store input files and map their paths
environment    an archive's requirements.txt -> Pyodide packages and pure-Python wheels
sandbox        code cells -> outputs, run inside Pyodide with the vfs, no network, fixed clock
file_view      the sandbox's file system view: mapped blobs readable, everything else refused
start_cache    a worker's start (bytecode, font list) kept for the next worker
compare        saved vs fresh outputs, nbval-style -> clean | drifted | stale
report         a sandbox run -> the fresh notebook and its report entry (shared with the tab)
reuse          what an earlier run may keep: a notebook's key (bytes, inputs, environment)
pyodide_host   Python in Pyodide under Node, for the workers and the tests
batch          an archive -> every notebook re-rendered by a pool of workers, report.json
"""
