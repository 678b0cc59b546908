"""cellar.rerender.sandbox inside Pyodide under Node: the archive's files and nothing else, IPython's output
semantics, isolation between notebooks in one warm worker, determinism, and time limits.

One worker for the module (Pyodide with numpy, pandas, matplotlib and IPython; `prepare()` once).
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from cellar.rerender.pyodide_host import PyodideHost

TANKS = b"tank,volume_m3\nforepeak,412.1\naft peak,288.0\n"
WELLS = b"1.0 2.0\n3.0 4.0\n"
BLOB = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in (("tanks", TANKS), ("wells", WELLS))}
PATHMAP = {
    "format": 1,
    "files": {
        r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv": BLOB["tanks"],
        r"C:\PGE383\data\wells.txt": BLOB["wells"],
        "/2017/17-042 Ballast/inputs/tanks.csv": BLOB["tanks"],
    },
}
BLOBS = {BLOB["tanks"]: base64.b64encode(TANKS).decode(), BLOB["wells"]: base64.b64encode(WELLS).decode()}
CWD = "/2017/17-042 Ballast"
SECRET = "/home/pyodide/secret.txt"


@pytest.fixture(scope="module")
def worker(site) -> PyodideHost:
    manifest = json.loads((site / "build.json").read_text())
    wheels = [site / wheel for wheel in manifest["wheels"]]
    with PyodideHost(site / "pyodide", wheels=wheels, packages=["numpy", "pandas", "matplotlib", "ipython"]) as host:
        host.run(
            f"import cellar.rerender.sandbox as sandbox; sandbox.prepare(); open({SECRET!r}, 'w').write('s3cr3t'); 0"
        )
        yield host


def run(worker: PyodideHost, cells: list[str], cwd: str = CWD, **limits: float) -> dict:
    request = json.dumps({"cells": cells, "pathmap": PATHMAP, "blobs": BLOBS, "cwd": cwd, "limits": limits})
    return json.loads(worker.run(f"import cellar.rerender.sandbox as sandbox; sandbox.run_request({request!r})"))


def outputs(result: dict) -> list[list[dict]]:
    return [cell["outputs"] for cell in result["cells"]]


def text(output: dict) -> str:
    return (
        output.get("text")
        or output.get("data", {}).get("text/plain")
        or f"{output.get('ename')}: {output.get('evalue')}"
    )


def test_mapped_files_read_through_open_pandas_numpy_pathlib_and_os(worker):
    result = run(
        worker,
        [
            "import pandas as pd, numpy as np, os, pathlib\n"
            "float(pd.read_csv(r'\\\\SRV-CALC-01\\Projects\\2017\\17-042\\inputs\\tanks_17042c.csv').volume_m3.sum())",
            "print(open('inputs/tanks.csv').readline().strip(), os.listdir('inputs'), os.path.isdir('inputs'))\n"
            "pathlib.Path('inputs/tanks.csv').read_bytes() == open(r'//srv-calc-01/projects/2017/17-042/inputs/tanks_17042c.csv', 'rb').read()",
            "os.chdir('C:\\\\PGE383')\nprint(os.getcwd(), os.path.exists('data/wells.txt'), os.stat('data/wells.txt').st_size)\n"
            "float(np.loadtxt(r'data\\wells.txt').sum())",
        ],
    )
    first, second, third = outputs(result)
    assert text(first[0]) == "700.1"
    assert text(second[0]) == "tank,volume_m3 ['tanks.csv'] True\n" and text(second[1]) == "True"
    assert text(third[0]) == f"C:\\PGE383 True {len(WELLS)}\n" and text(third[1]) == "10.0"


HOSTILE = [
    "/etc/passwd",
    SECRET,
    "../../../../home/pyodide/secret.txt",
    r"inputs\..\..\..\..\home\pyodide\secret.txt",
    r"\\srv-calc-02\projects\2017\17-042\inputs\tanks_17042c.csv",
    r"\\?\C:\..\PGE383\data\wells.txt",
    "inputs/tanks.csv\x00.png",
    "C:\\PGE383\\data\\wells.txt:stream",
    "CON",
    "~/secret.txt",
    "C:\\" + "a\\" * 3000 + "x.csv",
]


@pytest.mark.parametrize(
    "reader",
    [
        "open({path!r}).read()",
        "__import__('pathlib').Path({path!r}).read_text()",
        "__import__('pandas').read_csv({path!r})",
        "__import__('numpy').loadtxt({path!r})",
        "__import__('io').open({path!r}, 'rb').read()",
    ],
)
def test_hostile_paths_are_refused_and_nothing_outside_the_map_is_read(worker, reader):
    result = run(
        worker,
        [reader.format(path=path) for path in HOSTILE]
        + [f"import os\nprint(os.path.exists('/etc/passwd'), os.path.exists({SECRET!r}))\nos.listdir('/home/pyodide')"],
    )
    for path, cell in zip(HOSTILE, outputs(result)):
        (output,) = cell
        assert output["output_type"] == "error", (path, output)
        # numpy asks os.path.exists first and raises its own FileNotFoundError: nothing was read either
        assert output["ename"] in {"PathRefused", "NotInPathMap", "ValueError", "FileNotFoundError"}, (path, output)
        assert "s3cr3t" not in json.dumps(output) and "root:" not in json.dumps(output)
    listing = outputs(result)[-1]
    assert text(listing[0]) == "False False\n" and listing[1].get("ename") == "PathRefused", listing


def test_a_mapped_file_whose_blob_was_not_sent_is_named_not_a_key_error(worker):
    """The host leaves out a blob the store lacks or cannot use (a link out of the archive) and
    says why; the notebook that reads it gets an error naming the path and the blob (it got a
    bare KeyError of the blob's id, found by a hostile-input sweep)."""
    missing = "sha256:" + "0" * 64
    pathmap = {**PATHMAP, "files": {**PATHMAP["files"], "/2017/17-042 Ballast/inputs/lost.csv": missing}}
    request = json.dumps({"cells": ["open('inputs/lost.csv').read()"], "pathmap": pathmap, "blobs": BLOBS, "cwd": CWD})
    result = json.loads(worker.run(f"import cellar.rerender.sandbox as sandbox; sandbox.run_request({request!r})"))
    ((output,),) = outputs(result)
    assert output["ename"] == "BlobNotFound", output
    assert output["evalue"].startswith(f"inputs/lost.csv: its blob {missing} is missing from the archive's blob store")


def test_a_cell_cannot_open_the_interpreters_own_files(worker):
    # Library code may read the standard library and site-packages (imports, fonts); a cell may not.
    (cell,) = outputs(run(worker, ["open('/lib/python3.12/site-packages/cellar/rerender/sandbox.py').read()"]))
    assert cell[0]["ename"] == "PathRefused"


def test_writes_go_to_a_scratch_area_that_is_thrown_away(worker):
    first = run(
        worker,
        [
            "open('inputs/out.csv', 'w').write('a,b\\n1,2\\n')\nint(__import__('pandas').read_csv('inputs/out.csv').b.sum())",
            "open('inputs/tanks.csv', 'a').write('x')\nlen(open('inputs/tanks.csv').read())",
        ],
    )
    assert text(outputs(first)[0][0]) == "2" and text(outputs(first)[1][0]) == str(len(TANKS) + 1)
    second = run(worker, ["import os\nos.path.exists('inputs/out.csv'), len(open('inputs/tanks.csv').read())"])
    assert text(outputs(second)[0][0]) == f"(False, {len(TANKS)})"


def test_network_is_refused_at_once(worker):
    result = run(
        worker,
        [
            "import socket\nsocket.create_connection(('example.org', 80))",
            "import urllib.request\nurllib.request.urlopen('http://example.org/')",
            "from pyodide.http import open_url\nopen_url('http://example.org/')",
            "import js\njs.fetch('http://example.org/')",
            "import pandas as pd\npd.read_csv('https://example.org/tanks.csv')",
        ],
        cell_timeout=30,
    )
    names = [cell[0]["ename"] for cell in outputs(result)]
    assert names == ["NetworkRefused", "URLError", "NetworkRefused", "NetworkRefused", "URLError"]
    # https too (Pyodide has no ssl): the same refusal, naming the URL
    assert outputs(result)[4][0]["evalue"] == (
        "<urlopen error network access is not available in the sandbox: https://example.org/tanks.csv>"
    )
    assert result["stopped"] is None


def test_ipython_semantics_for_results_display_errors_magics_and_shell_lines(worker):
    result = run(
        worker,
        [
            "import pandas as pd\nprint('hi')\npd.DataFrame({'a': [1, 2]})",
            "from IPython.display import display, Markdown\ndisplay(Markdown('**x**'))\nx = 1;",
            "{'b': list(range(30)), 'a': 1}",
            "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);",
            "%timeit y = 2 ** 10\ny",
            "!pip install pint",
            "1 / 0",
            "input('name? ')",
        ],
    )
    cells = outputs(result)
    assert [o["output_type"] for o in cells[0]] == ["stream", "execute_result"]
    assert "text/html" in cells[0][1]["data"] and cells[0][1]["data"]["text/plain"] == "   a\n0  1\n1  2"
    assert [(o["output_type"], sorted(o["data"])) for o in cells[1]] == [
        ("display_data", ["text/markdown", "text/plain"])
    ]
    assert cells[2][0]["data"]["text/plain"].startswith("{'b': [0,\n  1,\n")  # IPython's pretty printer
    assert sorted(cells[3][0]["data"]) == ["image/png", "text/plain"] and cells[3][0]["output_type"] == "display_data"
    assert text(cells[4][0]) == "1024"
    assert cells[5][0]["ename"] == "ShellUnavailable" and "not available in the sandbox" in cells[5][0]["evalue"]
    assert (cells[6][0]["ename"], cells[6][0]["evalue"]) == ("ZeroDivisionError", "division by zero")
    assert cells[7][0]["ename"] == "StdinNotImplementedError"


FIGURES = [
    "import matplotlib.pyplot as plt, numpy as np\nhours = np.linspace(0, 10, 50)",
    # a line plot with a title, labels with units and a legend
    "fig, ax = plt.subplots()\nax.plot(hours, 41.21 * hours, label='forepeak')\n"
    "ax.plot(hours, 288 - 10 * hours, label='aft peak')\nax.set_title('Ballast tank volumes')\n"
    "ax.set_xlabel('Time [h]'); ax.set_ylabel('Volume [m3]'); ax.legend();",
    # a bar chart over categories
    "plt.bar(['forepeak', 'aft peak', 'midship'], [412.1, 288.0, 2106.3])\nplt.ylabel('Volume [m3]');",
    # a histogram, shown mid-cell with plt.show(), then a second figure: two outputs
    "plt.hist(np.random.normal(size=400), bins=12)\nplt.xlabel('GZ [m]')\nplt.show()\n"
    "plt.plot([1, 2, 3])\nplt.title('after show');",
    # one figure, two axes and a suptitle
    "fig, (a, b) = plt.subplots(1, 2)\na.plot(hours, np.sin(hours)); a.set_ylabel('Heel [deg]')\n"
    "b.scatter([0.5, 1.0, 1.5], [2.1, 2.5, 2.9]); b.set_xlabel('Draught [m]')\nfig.suptitle('Stability, 2017 vessel');",
    # parts the describer cannot read (they raise): the figure renders, the rest is described
    "fig, ax = plt.subplots()\nax.plot([3, 1, 2], label='odd')\nax.legend(); ax.set_title('hidden')\n"
    "ax.get_title = ax.get_legend = lambda *a, **k: 1 / 0;",
]


def figure_text(output: dict) -> str:
    return output["metadata"]["cellar"]["figure"]


def test_each_figure_is_described_from_its_objects_in_its_output_metadata(worker):
    cells = outputs(run(worker, FIGURES))
    assert cells[0] == []
    assert [[o["output_type"] for o in cell] for cell in cells[1:]] == [["display_data"]] * 2 + [
        ["display_data"] * 2
    ] + [["display_data"]] * 2
    assert all("image/png" in o["data"] for cell in cells[1:] for o in cell)
    assert figure_text(cells[1][0]) == (
        'Figure. "Ballast tank volumes": line plot (2 lines); "forepeak" 50 points y from 0 to 412.1 '
        'x from 0 to 10, "aft peak" 50 points y from 188 to 288 x from 0 to 10; x axis "Time [h]"; '
        'y axis "Volume [m3]"; legend: forepeak, aft peak.'
    )
    assert figure_text(cells[2][0]) == (
        "Figure. Bar chart (3 bars); values from 288 to 2106; x axis categories forepeak, aft peak, "
        'midship; y axis "Volume [m3]".'
    )
    histogram, after = (figure_text(o) for o in cells[3])
    assert histogram.startswith("Figure. Histogram (12 bins); bins from -") and histogram.endswith('x axis "GZ [m]".')
    assert after == 'Figure. "after show": line plot (1 line); 3 points y from 1 to 3.'
    two = figure_text(cells[4][0])
    assert two.startswith('Figure "Stability, 2017 vessel" with 2 axes. Axes 1 Line plot (1 line); 50 points y from -')
    assert 'y axis "Heel [deg]". Axes 2 Scatter plot (3 points); 3 points x from 0.5 to 1.5 y from 2.1 to 2.9' in two
    assert two.endswith('x axis "Draught [m]".')
    assert figure_text(cells[5][0]) == 'Figure. Line plot (1 line); "odd" 3 points y from 1 to 3.'


PROBE = (
    "import random, numpy as np, pandas as pd, matplotlib as mpl, sys\n"
    "print(random.random(), np.random.rand(), pd.get_option('display.precision'), mpl.rcParams['lines.linewidth'],\n"
    "      np.get_printoptions()['precision'], 'helper' in sys.modules, 'x' in globals())"
)
MESS = (
    "import random, numpy as np, pandas as pd, matplotlib as mpl, sys, types\n"
    "random.random(); np.random.rand(5); pd.set_option('display.precision', 2); mpl.rcParams['lines.linewidth'] = 9\n"
    "np.set_printoptions(precision=1); sys.modules['helper'] = types.ModuleType('helper'); x = 1"
)


def test_notebooks_sharing_a_worker_do_not_see_each_other(worker):
    alone = outputs(run(worker, [PROBE]))
    run(worker, [MESS])
    after = outputs(run(worker, [PROBE]))[0]
    assert after == alone[0]
    assert text(after[0]).endswith(" 6 1.5 8 False False\n")


def test_two_runs_give_identical_outputs(worker):
    cells = [
        "import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
        "df = pd.DataFrame(np.random.rand(4, 3), columns=list('abc'))\ndf",
        "fig, ax = plt.subplots()\ndf.plot(ax=ax)\nax.set_title('random');",
        "import time, datetime\nprint(time.time(), datetime.datetime.now())",
    ]
    first, second = (run(worker, cells, clock="2017-03-01T09:30:00") for _ in range(2))
    assert json.dumps(outputs(first), sort_keys=True) == json.dumps(outputs(second), sort_keys=True)
    assert text(outputs(first)[2][0]) == "1488360600.0 2017-03-01 09:30:00\n"


def test_a_runaway_cell_is_stopped_and_the_worker_goes_on(worker):
    result = run(worker, ["x = 1", "while True:\n    x += 1", "print('never')"], cell_timeout=2)
    assert result["stopped"] == "cell 1 exceeded the cell's time limit of 2 s"
    assert len(result["cells"]) == 2 and result["cells"][1]["outputs"][0]["ename"] == "KeyboardInterrupt"
    assert text(outputs(run(worker, ["6 * 7"]))[0][0]) == "42"
