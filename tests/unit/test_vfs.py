"""cellar.rerender.vfs: logical paths from old notebooks resolve to content-addressed blobs, and nothing else.

The resolution table lists real-world spellings of mapped files that must resolve; the hostile
table lists paths that must be refused (or be simply not found), and an audit hook proves that
no hostile path makes the process open or list anything. The blob store is read from a local
folder, over HTTP from a real server on 127.0.0.1, and over the S3 protocol from a local moto
server; a tampered blob is refused by name everywhere.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path, PureWindowsPath

import pytest

from cellar.cli import main
from cellar.rerender.archive import check_archive
from cellar.rerender.blob_store import BlobStore, read_bytes
from cellar.rerender.vfs import (
    BlobCorrupt,
    BlobNotFound,
    InvalidBlobId,
    IsADirectory,
    NotADirectory,
    NotInPathMap,
    PathMap,
    PathMapError,
    PathRefused,
    VfsError,
    blob_id_of,
    blob_path,
    chdir,
    load_pathmap,
    logical_path,
    verify_blob,
)

CONTENT = {
    "tanks": b"tank,volume_m3\nforepeak,412.1\naftpeak,1284.6\n",
    "ballast": b"PK\x03\x04 not really a workbook, but bytes all the same",
    "wells": b"well,depth_m\nA-1,2310\n",
    "density": b"t_c,rho\n15,1025.0\n",
    "config": b'{"units": "SI"}\n',
    "lines": b"station,halfbreadth\n0,0.0\n10,6.5\n",
    "readme": b"Hull share of the 130 m vessel\n",
}
BLOB = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in CONTENT.items()}
MAP = {
    "format": 1,
    "files": {
        r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv": BLOB["tanks"],
        r"P:\2017\17-042\ballast.xlsx": BLOB["ballast"],
        r"C:\PGE383\data\wells.csv": BLOB["wells"],
        "/data/shared/density.csv": BLOB["density"],
        "~/notebooks/config.json": BLOB["config"],
    },
    "trees": {r"\\srv-calc-01\hull": {"2019/130m/lines.csv": BLOB["lines"], "README.txt": BLOB["readme"]}},
}
PROJECT = r"\\srv-calc-01\projects\2017\17-042"


@pytest.fixture(scope="module")
def pathmap() -> PathMap:
    return PathMap.from_dict(MAP)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """An archive folder with pathmap.json and every blob, written by hand (not by the code under test)."""
    root = tmp_path / "archive"
    for name, data in CONTENT.items():
        digest = BLOB[name].removeprefix("sha256:")
        blob = root / "blobs" / "sha256" / digest[:2] / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
    (root / "pathmap.json").write_text(json.dumps(MAP), encoding="utf-8")
    return root


# -- An audit hook records every file the process opens or lists while `watch` is on --------------

_SEEN: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple) -> None:
    if _SEEN is not None and event in ("open", "os.listdir", "os.scandir"):
        _SEEN.append((event, os.fsdecode(args[0]) if isinstance(args[0], (str, bytes)) else repr(args[0])))


sys.addaudithook(_audit)


@pytest.fixture
def watch() -> Iterator[list[tuple[str, str]]]:
    global _SEEN
    _SEEN = []
    try:
        yield _SEEN
    finally:
        _SEEN = None


# -- Spellings that must resolve ------------------------------------------------------------------

RESOLVES = [
    (r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv", None, "tanks"),
    (r"\\SRV-CALC-01\PROJECTS\2017\17-042\INPUTS\TANKS_17042C.CSV", None, "tanks"),
    (r"\\Srv-Calc-01\Projects\2017\17-042\Inputs\Tanks_17042C.csv", None, "tanks"),
    ("//srv-calc-01/projects/2017/17-042/inputs/tanks_17042c.csv", None, "tanks"),
    (r"\\srv-calc-01/projects\2017/17-042\inputs/tanks_17042c.csv", None, "tanks"),
    (r"\\?\UNC\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv", None, "tanks"),
    (r"\\?\unc\SRV-CALC-01\Projects\2017\17-042\inputs\tanks_17042c.csv", None, "tanks"),
    (r"\\srv-calc-01\projects\2017\17-042\outputs\..\inputs\.\tanks_17042c.csv", None, "tanks"),
    (r"\\srv-calc-01\projects\\2017\\\17-042\inputs\\tanks_17042c.csv", None, "tanks"),
    (r"inputs\tanks_17042c.csv", PROJECT, "tanks"),
    ("inputs/tanks_17042c.csv", PROJECT, "tanks"),
    (r".\inputs\tanks_17042c.csv", PROJECT, "tanks"),
    (r"..\inputs\tanks_17042c.csv", PROJECT + r"\notebooks", "tanks"),
    (r"..\..\..\2017\17-042\inputs\tanks_17042c.csv", PROJECT + r"\notebooks", "tanks"),
    (r"\2017\17-042\inputs\tanks_17042c.csv", PROJECT + r"\notebooks", "tanks"),  # rooted at the share
    (PureWindowsPath(r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv"), None, "tanks"),
    (r"P:\2017\17-042\ballast.xlsx", None, "ballast"),
    ("p:/2017/17-042/BALLAST.XLSX", None, "ballast"),
    (r"\\?\P:\2017\17-042\ballast.xlsx", None, "ballast"),
    (r"data\wells.csv", chdir(PROJECT, "C:\\PGE383"), "wells"),  # after os.chdir("C:\PGE383")
    (r"C:data\wells.csv", r"C:\PGE383", "wells"),  # drive-relative, cwd on the same drive
    (r"C:PGE383\data\wells.csv", r"D:\work", "wells"),  # drive-relative from another drive: C:'s root
    (r"\PGE383\data\wells.csv", r"C:\Users\engineer", "wells"),
    ("/data/shared/density.csv", None, "density"),
    ("/data//shared/./density.csv", None, "density"),
    (b"/data/shared/density.csv", None, "density"),
    ("shared/density.csv", "/data", "density"),
    ("../shared/density.csv", "/data/archive", "density"),
    ("~/notebooks/config.json", None, "config"),
    (r"~\notebooks\config.json", None, "config"),
    ("config.json", "~/notebooks", "config"),
    (r"\\SRV-CALC-01\Hull\2019\130M\LINES.CSV", None, "lines"),
    ("//srv-calc-01/hull/README.txt", None, "readme"),
    (r"130m\lines.csv", r"\\srv-calc-01\hull\2019", "lines"),
]


@pytest.mark.parametrize("path, cwd, name", RESOLVES)
def test_real_world_spellings_resolve(pathmap: PathMap, path, cwd, name) -> None:
    assert pathmap.resolve(path, cwd=cwd) == BLOB[name]
    assert pathmap.exists(path, cwd) and pathmap.isfile(path, cwd) and not pathmap.isdir(path, cwd)


def test_chdir_is_pure_and_lexical() -> None:
    assert chdir(PROJECT, "C:\\PGE383") == "C:\\PGE383"
    assert chdir("C:\\PGE383", "data") == "C:\\PGE383\\data"
    assert chdir("C:\\PGE383\\data", "..") == "C:\\PGE383"
    assert chdir("c:/pge383", "../") == "C:\\"
    assert chdir("/data", "shared/..//x") == "/data/x"
    assert chdir(None, "//srv-calc-01/projects/2020/20-004") == r"\\srv-calc-01\projects\2020\20-004"
    with pytest.raises(PathRefused, match="climbs above"):
        chdir("C:\\", "..")


def test_paths_keep_their_spelling_and_fold_case_only_on_windows() -> None:
    upper, lower = logical_path(r"\\SRV-CALC-01\Projects\A.csv"), logical_path("//srv-calc-01/projects/a.csv")
    assert str(upper) == r"\\SRV-CALC-01\Projects\A.csv" and upper.key == lower.key
    assert logical_path("/data/A.csv").key != logical_path("/data/a.csv").key
    # Windows compares character by character: 'ß' is not 'SS' there
    assert logical_path("C:\\straße").key != logical_path("C:\\STRASSE").key
    assert logical_path("C:\\straße").key == logical_path("C:\\STRAßE").key


def test_posix_and_home_paths_are_case_sensitive(pathmap: PathMap) -> None:
    with pytest.raises(NotInPathMap):
        pathmap.resolve("/data/shared/Density.csv")
    with pytest.raises(PathRefused):
        pathmap.resolve("/DATA/shared/density.csv")
    assert not pathmap.exists("~/Notebooks/config.json")


# -- Unmapped, folders and listings ---------------------------------------------------------------


def test_an_unmapped_path_in_a_mapped_folder_is_file_not_found_naming_it(pathmap: PathMap) -> None:
    missing = r"\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042d.csv"
    with pytest.raises(FileNotFoundError) as info:
        pathmap.resolve(missing)
    assert isinstance(info.value, NotInPathMap) and info.value.filename == missing
    assert "not in the archive's path map" in str(info.value)
    with pytest.raises(NotInPathMap, match=r"resolved to '\\\\\\\\srv-calc-01"):
        pathmap.resolve(r"inputs\missing.csv", PROJECT)


def test_anything_below_a_tree_prefix_is_not_found_rather_than_refused(pathmap: PathMap) -> None:
    with pytest.raises(NotInPathMap):
        pathmap.resolve(r"\\srv-calc-01\hull\2020\140m\lines.csv")


def test_listing_the_folders_that_the_map_implies(pathmap: PathMap) -> None:
    assert pathmap.listdir(PROJECT) == ["inputs"]
    assert pathmap.listdir(r"\\SRV-CALC-01\PROJECTS") == ["2017"]
    assert pathmap.listdir(r"\\srv-calc-01\hull") == ["2019", "README.txt"]
    assert pathmap.listdir(r"..\..", r"\\srv-calc-01\hull\2019\130m") == ["2019", "README.txt"]
    assert pathmap.listdir("C:\\") == ["PGE383"]
    assert pathmap.listdir("/") == ["data"]
    assert pathmap.listdir("~") == ["notebooks"]
    assert pathmap.isdir(r"c:\pge383\DATA") and not pathmap.isfile(r"c:\pge383\DATA")
    with pytest.raises(IsADirectory):
        pathmap.resolve(r"C:\PGE383\data")
    with pytest.raises(NotADirectory):
        pathmap.listdir(r"C:\PGE383\data\wells.csv")
    with pytest.raises(NotInPathMap):
        pathmap.listdir(r"C:\PGE383\results")
    with pytest.raises(PathRefused):
        pathmap.listdir(r"C:\Windows\System32")


def test_listing_keeps_the_maps_spelling_of_each_folder() -> None:
    both = PathMap.from_dict(
        {"format": 1, "files": {r"\\srv\p\Data\a.csv": BLOB["tanks"], r"\\SRV\P\DATA\B.csv": BLOB["wells"]}}
    )
    assert both.listdir(r"\\srv\p") == ["DATA"]  # the first spelling in sorted order
    assert both.listdir(r"\\srv\p\data") == ["B.csv", "a.csv"]


# -- Hostile paths --------------------------------------------------------------------------------

HOSTILE = [
    # traversal, in every spelling
    (r"\\srv-calc-01\projects\..\..\etc\passwd", None, PathRefused),
    (r"..\..\..\..\etc\passwd", PROJECT, PathRefused),
    ("../../../../etc/passwd", PROJECT, PathRefused),
    (r"..\../..\/../etc/passwd", PROJECT, PathRefused),
    (r"inputs\..\..\..\..\..\hull\README.txt", PROJECT, PathRefused),  # share hopping via '..'
    (r"\\srv-calc-01\projects\2017\..\..\hull\README.txt", None, PathRefused),
    (r"\\?\C:\..\Windows\win.ini", None, PathRefused),
    (r"\\?\C:\PGE383\..\PGE383\data\wells.csv", None, PathRefused),  # \\?\ resolves no '..'
    (r"\\?\UNC\srv-calc-01\projects\.\2017\17-042\inputs\tanks_17042c.csv", None, PathRefused),
    (r"C:\..\..\Windows\win.ini", None, PathRefused),
    (r"..\..\Windows\win.ini", r"C:\PGE383", PathRefused),
    ("/data/../../etc/passwd", None, PathRefused),
    ("~/../bob/.ssh/id_rsa", None, PathRefused),
    # nothing is decoded: percent escapes and look-alike dots are ordinary characters
    (r"..%5c..%5c..%5cetc%5cpasswd", PROJECT, NotInPathMap),
    ("%2e%2e/%2e%2e/%2e%2e/etc/passwd", PROJECT, PathRefused),
    ("\uff0e\uff0e\\\uff0e\uff0e\\Windows\\win.ini", r"C:\PGE383", PathRefused),
    # other servers and shares, host paths
    (r"\\srv-calc-02\projects\2017\17-042\inputs\tanks_17042c.csv", None, PathRefused),
    (r"\\srv-calc-01.corp.example\projects\2017\17-042\inputs\tanks_17042c.csv", None, PathRefused),
    (r"\\127.0.0.1\c$\Windows\win.ini", None, PathRefused),
    (r"\\srv-calc-01\c$\Windows\win.ini", None, PathRefused),
    ("/etc/passwd", None, PathRefused),
    ("/proc/self/environ", None, PathRefused),
    (r"C:\Windows\win.ini", None, PathRefused),
    (r"C:\Windows\win.ini", PROJECT, PathRefused),
    (r"\Windows\win.ini", r"C:\PGE383", PathRefused),
    ("file:///etc/passwd", None, PathRefused),
    # NUL and control characters
    ("C:\\PGE383\\data\\wells.csv\x00.txt", None, PathRefused),
    ("/data/shared/density.csv\x00", None, PathRefused),
    ("inputs\\tanks\n.csv", PROJECT, PathRefused),
    # device names, with extensions too, and the device namespaces
    (r"C:\PGE383\data\CON", None, PathRefused),
    ("con.txt", r"C:\PGE383\data", PathRefused),
    ("NUL.csv", r"C:\PGE383\data", PathRefused),
    ("COM1", PROJECT, PathRefused),
    ("lpt1.log", PROJECT, PathRefused),
    ("AUX.tar.gz", PROJECT, PathRefused),
    ("CONOUT$", PROJECT, PathRefused),
    ("COM\u00b9.txt", PROJECT, PathRefused),
    ("nul .csv", PROJECT, PathRefused),
    (r"\\.\COM1", None, PathRefused),
    (r"\\.\PhysicalDrive0", None, PathRefused),
    (r"\\?\GLOBALROOT\Device\HarddiskVolume1\Windows\win.ini", None, PathRefused),
    (r"\??\C:\Windows\win.ini", PROJECT, PathRefused),
    # alternate data streams
    (r"C:\PGE383\data\wells.csv:stream", None, PathRefused),
    (r"C:\PGE383\data\wells.csv::$DATA", None, PathRefused),
    (r"inputs\tanks_17042c.csv:Zone.Identifier", PROJECT, PathRefused),
    # names Windows would strip into another name, wildcards
    (r"C:\PGE383\data\wells.csv.", None, PathRefused),
    (r"C:\PGE383\data\wells.csv ", None, PathRefused),
    (r"C:\PGE383\data.\wells.csv", None, PathRefused),
    (r"C:\PGE383\data\*.csv", None, PathRefused),
    ("wells?.csv", r"C:\PGE383\data", PathRefused),
    # overly long
    ("C:\\" + "a\\" * 16_000 + "wells.csv", None, PathRefused),
    ("\\\\?\\C:\\" + "PGE383\\" * 4_600 + "wells.csv", None, PathRefused),
    ("C:\\PGE383\\data\\" + "w" * 300 + ".csv", None, PathRefused),
    # other users' homes
    ("~bob/.ssh/id_rsa", None, PathRefused),
    ("~root", None, PathRefused),
    (r"~administrator\Desktop\passwords.txt", None, PathRefused),
    # malformed UNC, relative without a working directory, ambiguous backslashes in POSIX paths
    (r"\\srv-calc-01", None, PathRefused),
    (r"\\\srv-calc-01\projects\2017\17-042\inputs\tanks_17042c.csv", None, PathRefused),
    (r"\\srv-calc-01\\projects\2017\17-042\inputs\tanks_17042c.csv", None, PathRefused),
    (r"inputs\tanks_17042c.csv", None, PathRefused),
    ("/data\\shared\\density.csv", None, PathRefused),
    ("shared\\density.csv", "/data", PathRefused),
    # text that is not a path at all
    ("C:\\PGE383\\\ud800.csv", None, PathRefused),
    (b"/data/shared/\xff.csv", None, PathRefused),
]


def _label(path: object) -> str:
    text = repr(path)
    return text if len(text) < 60 else text[:40] + f"...({len(text)})"


@pytest.mark.parametrize("path, cwd, error", HOSTILE, ids=[_label(row[0]) for row in HOSTILE])
def test_hostile_paths_are_refused_and_nothing_is_opened(pathmap, archive, watch, path, cwd, error) -> None:
    store = BlobStore(archive)
    with pytest.raises(error) as info:
        read_bytes(pathmap, store, path, cwd)
    assert watch == []  # not a file opened, not a folder listed
    assert isinstance(info.value, VfsError)
    message = str(info.value)
    assert ("refused: " in message) if error is PathRefused else ("not in the archive's path map" in message)
    if isinstance(path, str):  # the error names the path (its start, if it is very long)
        assert info.value.filename in (path, f"{path[:120]}... ({len(path)} characters)")
    assert not pathmap.exists(path, cwd) and not pathmap.isdir(path, cwd)


def test_refusals_say_why(pathmap: PathMap) -> None:
    reasons = {
        r"..\..\..\..\etc\passwd": "'..' climbs above",
        "C:\\PGE383\\x\x00": "a NUL byte",
        "con.txt": "is a Windows device name",
        "wells.csv:stream": "alternate data stream",
        "C:\\" + "a\\" * 16_000: "longer than 4096 characters",
        "~bob/.ssh/id_rsa": "the home directory of another user",
        r"\\srv-calc-02\projects\x.csv": "outside every mapping",
        r"\\?\C:\..\x": "in a device path",
    }
    for path, reason in reasons.items():
        with pytest.raises(PathRefused, match=reason):
            pathmap.resolve(path, PROJECT)
    with pytest.raises(PermissionError):  # what a notebook's `except PermissionError` would catch
        pathmap.resolve("/etc/passwd")


def test_host_files_at_the_same_paths_are_never_read(pathmap, archive, tmp_path, monkeypatch, watch) -> None:
    """Real files wait at the host paths that hostile spellings aim for; the vfs never returns them."""
    host = tmp_path / "host"
    (host / "etc").mkdir(parents=True)
    (host / "etc" / "passwd").write_bytes(b"HOST SECRET")
    (host / "data" / "shared").mkdir(parents=True)
    (host / "data" / "shared" / "density.csv").write_bytes(b"HOST COPY")
    monkeypatch.chdir(host)
    store = BlobStore(archive)
    watch.clear()
    assert read_bytes(pathmap, store, "/data/shared/density.csv") == CONTENT["density"]
    assert read_bytes(pathmap, store, "shared/density.csv", "/data") == CONTENT["density"]
    for path, cwd in [
        (str(host / "etc" / "passwd"), None),
        ("etc/passwd", None),
        ("etc/passwd", "/"),
        (str(host / "data" / "shared" / "density.csv"), None),
        ("data/shared/density.csv", None),
    ]:
        with pytest.raises(VfsError):
            read_bytes(pathmap, store, path, cwd)
    blobs = str(archive / "blobs" / "sha256")
    assert watch and all(event == "open" and seen.startswith(blobs) for event, seen in watch)


# -- Blob ids and the blob store ------------------------------------------------------------------


def test_blob_ids_are_sha256_of_the_bytes() -> None:
    assert blob_id_of(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert blob_path(BLOB["tanks"]) == f"blobs/sha256/{BLOB['tanks'][7:9]}/{BLOB['tanks'][7:]}"
    assert verify_blob(BLOB["tanks"], CONTENT["tanks"]) == CONTENT["tanks"]
    with pytest.raises(BlobCorrupt, match=BLOB["tanks"]):
        verify_blob(BLOB["tanks"], CONTENT["tanks"] + b"\n")


BAD_IDS = [
    "sha256:../../../../etc/passwd",
    "sha256:" + "A" * 64,
    "sha256:" + "a" * 63,
    "sha256:" + "a" * 64 + "\n",
    "sha256:" + "a" * 64 + "/../x",
    "sha1:" + "a" * 40,
    "a" * 64,
    "",
    None,
]


@pytest.mark.parametrize("blob_id", BAD_IDS)
def test_invalid_blob_ids_never_reach_the_store(archive, watch, blob_id) -> None:
    with pytest.raises(InvalidBlobId):
        BlobStore(archive).read(blob_id)
    assert watch == []


def test_local_store_reads_checked_bytes(archive) -> None:
    store = BlobStore(archive)
    assert all(store.read(BLOB[name]) == data for name, data in CONTENT.items())
    assert store.ids() == sorted(BLOB.values())


def test_a_tampered_local_blob_is_refused_naming_it(archive, tmp_path) -> None:
    store = BlobStore(archive)
    Path(store.location(BLOB["tanks"])).write_bytes(b"tank,volume_m3\nforepeak,999.9\n")
    with pytest.raises(BlobCorrupt) as info:
        store.read(BLOB["tanks"])
    assert BLOB["tanks"] in str(info.value) and store.location(BLOB["tanks"]) in str(info.value)
    # a blob swapped for a link to a host file is refused just the same
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"HOST SECRET")
    blob = Path(store.location(BLOB["wells"]))
    blob.unlink()
    blob.symlink_to(secret)
    with pytest.raises(BlobCorrupt, match=BLOB["wells"]):
        store.read(BLOB["wells"])


def test_a_missing_blob_is_not_found_naming_it(archive) -> None:
    store = BlobStore(archive)
    Path(store.location(BLOB["config"])).unlink()
    with pytest.raises(BlobNotFound, match=BLOB["config"]) as info:
        store.read(BLOB["config"])
    assert isinstance(info.value, FileNotFoundError)


def test_write_is_content_addressed_and_repairs_a_damaged_copy(tmp_path) -> None:
    store = BlobStore(tmp_path)
    blob = store.write(CONTENT["lines"])
    assert blob == BLOB["lines"] and store.read(blob) == CONTENT["lines"]
    Path(store.location(blob)).write_bytes(b"damaged")
    assert store.write(CONTENT["lines"]) == blob and store.read(blob) == CONTENT["lines"]
    assert store.ids() == [blob]


@pytest.fixture
def http_archive(archive: Path) -> Iterator[str]:
    """The archive served by a real HTTP server on 127.0.0.1 (a free port), stopped after the test."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(archive)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_blobs_over_http(http_archive: str, archive: Path) -> None:
    pytest.importorskip("aiohttp", reason="test-only: pip install aiohttp==3.14.5 fsspec==2026.9.0")
    store = BlobStore(http_archive + "/")
    assert store.read(BLOB["tanks"]) == CONTENT["tanks"]
    (archive / blob_path(BLOB["lines"])).write_bytes(b"station,halfbreadth\n0,9.9\n")
    with pytest.raises(BlobCorrupt) as info:
        store.read(BLOB["lines"])
    assert BLOB["lines"] in str(info.value) and f"{http_archive}/{blob_path(BLOB['lines'])}" in str(info.value)
    (archive / blob_path(BLOB["readme"])).unlink()
    with pytest.raises(BlobNotFound, match=BLOB["readme"]):
        store.read(BLOB["readme"])


def test_blobs_over_the_s3_protocol(monkeypatch, tmp_path) -> None:
    pytest.importorskip("s3fs", reason="test-only: pip install s3fs==2026.9.0 moto[server]==5.2.5")
    from moto.server import ThreadedMotoServer

    for name, value in {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }.items():
        monkeypatch.setenv(name, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        options = {
            "key": "testing",
            "secret": "testing",
            "skip_instance_cache": True,
            "client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
        }
        import s3fs

        s3 = s3fs.S3FileSystem(**options)
        s3.mkdir("cellar-test")
        store = BlobStore("s3://cellar-test/archive", storage_options=options)
        ids = [store.write(data) for data in CONTENT.values()]
        assert ids == list(BLOB.values()) and store.ids() == sorted(ids)
        assert store.read(BLOB["density"]) == CONTENT["density"]
        s3.pipe_file(f"cellar-test/archive/{blob_path(BLOB['density'])}", b"t_c,rho\n15,1000.0\n")
        with pytest.raises(BlobCorrupt) as info:
            store.read(BLOB["density"])
        assert f"s3://cellar-test/archive/{blob_path(BLOB['density'])}" in str(info.value)
        s3.rm_file(f"cellar-test/archive/{blob_path(BLOB['config'])}")
        with pytest.raises(BlobNotFound, match=BLOB["config"]):
            store.read(BLOB["config"])
    finally:
        server.stop()


# -- pathmap.json validation ----------------------------------------------------------------------

BAD_MAPS = [
    ([], "the path map: must be a JSON object"),
    ({"files": {}}, "format: must be 1"),
    ({"format": 2}, "format: must be 1"),
    ({"format": True}, "format: must be 1"),
    ({"format": 1, "file": {}}, "unknown key(s) 'file'"),
    ({"format": 1, "files": []}, "files: must be a JSON object"),
    ({"format": 1, "files": {"/data/x.csv": "sha256:XYZ"}}, "files['/data/x.csv']: invalid blob id 'sha256:XYZ'"),
    ({"format": 1, "files": {"data/x.csv": BLOB["tanks"]}}, "files['data/x.csv']: refused: a relative path"),
    ({"format": 1, "files": {r"C:\..\x.csv": BLOB["tanks"]}}, "'..' climbs above"),
    ({"format": 1, "files": {r"C:\x.csv:ads": BLOB["tanks"]}}, "alternate data stream"),
    ({"format": 1, "files": {"~bob/x": BLOB["tanks"]}}, "another user"),
    ({"format": 1, "files": {"C:\\": BLOB["tanks"]}}, "a share or drive root cannot be a file"),
    (
        {"format": 1, "files": {r"C:\a\B.csv": BLOB["tanks"], r"c:\A\b.CSV": BLOB["wells"]}},
        "maps the same path as files['C:\\\\a\\\\B.csv'] to another blob",
    ),
    (
        {"format": 1, "files": {r"C:\a": BLOB["tanks"], r"C:\a\b.csv": BLOB["wells"]}},
        "which files['C:\\\\a'] maps as a file",
    ),
    (
        {"format": 1, "trees": {r"\\srv\share": {"a\\b.csv": BLOB["tanks"]}}},
        "trees['\\\\\\\\srv\\\\share']['a\\\\b.csv']: refused",
    ),
    ({"format": 1, "trees": {r"\\srv\share": {"../b.csv": BLOB["tanks"]}}}, "without '.', '..'"),
    ({"format": 1, "trees": {r"\\srv\share": {"/b.csv": BLOB["tanks"]}}}, "without '.', '..' or empty names"),
    ({"format": 1, "trees": {r"\\srv\share": {"x/con.txt": BLOB["tanks"]}}}, "device name"),
    ({"format": 1, "trees": {r"\\srv\share": []}}, "must be a JSON object of relative paths"),
    (
        {
            "format": 1,
            "files": {r"\\srv\share\a.csv": BLOB["tanks"]},
            "trees": {r"\\SRV\Share": {"A.csv": BLOB["wells"]}},
        },
        "to another blob",
    ),
]


@pytest.mark.parametrize("data, problem", BAD_MAPS)
def test_bad_path_maps_name_the_file_and_the_entry(tmp_path, data, problem) -> None:
    mapfile = tmp_path / "pathmap.json"
    mapfile.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PathMapError) as info:
        load_pathmap(mapfile)
    assert str(info.value).startswith(f"{mapfile}: ") and problem in str(info.value)


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"format": 1, "files": {"/a": "x"', "not a valid path map"),
        ('{"format": 1, "files": {}, "files": {}}', "the key 'files' occurs twice"),
        (b'{"format": 1, "files": {"/\xff": ""}}', "not UTF-8"),
    ],
)
def test_unreadable_path_map_files(tmp_path, text, problem) -> None:
    mapfile = tmp_path / "pathmap.json"
    mapfile.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(PathMapError, match=problem) as info:
        load_pathmap(mapfile)
    assert str(mapfile) in str(info.value)


def test_the_same_blob_under_two_spellings_is_accepted() -> None:
    both = PathMap.from_dict({"format": 1, "files": {r"C:\a.csv": BLOB["tanks"], r"c:\A.CSV": BLOB["tanks"]}})
    assert both.resolve(r"C:\A.csv") == BLOB["tanks"]


# -- `cellar blobs add` / `cellar blobs check` ----------------------------------------------------


def _inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "inputs"
    (folder / "hull" / "2019" / "130m").mkdir(parents=True)
    (folder / "tanks_17042c.csv").write_bytes(CONTENT["tanks"])
    (folder / "wells.csv").write_bytes(CONTENT["wells"])
    (folder / "density.csv").write_bytes(CONTENT["density"])
    (folder / "hull" / "README.txt").write_bytes(CONTENT["readme"])
    (folder / "hull" / "2019" / "130m" / "lines.csv").write_bytes(CONTENT["lines"])
    return folder


def test_cli_add_maps_files_and_trees_and_check_passes(tmp_path, capsys) -> None:
    inputs, archive = _inputs(tmp_path), tmp_path / "archive"
    tanks = PROJECT + r"\inputs\tanks_17042c.csv"
    assert main(["blobs", "add", str(archive), str(inputs / "tanks_17042c.csv"), "--as", tanks]) == 0
    assert (
        main(
            [
                "blobs",
                "add",
                str(archive),
                str(inputs / "wells.csv"),
                str(inputs / "density.csv"),
                "--as",
                "C:/PGE383/data/",
            ]
        )
        == 0
    )
    assert main(["blobs", "add", str(archive), "--tree", r"\\srv-calc-01\hull", str(inputs / "hull")]) == 0
    printed = capsys.readouterr().out
    assert (
        f"{BLOB['tanks']}  {tanks}" in printed
        and f"{BLOB['lines']}  \\\\srv-calc-01\\hull\\2019\\130m\\lines.csv" in printed
    )

    written = json.loads((archive / "pathmap.json").read_text(encoding="utf-8"))
    assert written == {
        "format": 1,
        "files": {
            tanks: BLOB["tanks"],
            r"C:\PGE383\data\density.csv": BLOB["density"],
            r"C:\PGE383\data\wells.csv": BLOB["wells"],
        },
        "trees": {r"\\srv-calc-01\hull": {"2019/130m/lines.csv": BLOB["lines"], "README.txt": BLOB["readme"]}},
    }
    pathmap = load_pathmap(archive / "pathmap.json")
    assert read_bytes(pathmap, BlobStore(archive), r"data\wells.csv", "C:\\PGE383") == CONTENT["wells"]
    assert main(["blobs", "check", str(archive)]) == 0
    assert "5 blobs for 5 paths: 0 missing, 0 corrupt, 0 orphans" in capsys.readouterr().out


def test_cli_pathmap_is_deterministic_whatever_the_order(tmp_path) -> None:
    inputs = _inputs(tmp_path)
    steps = [
        ["--tree", "//srv-calc-01/hull", str(inputs / "hull")],
        [str(inputs / "tanks_17042c.csv"), "--as", PROJECT + r"\inputs\tanks_17042c.csv"],
        [str(inputs / "wells.csv"), "--as", r"C:\PGE383\data\wells.csv"],
    ]
    for name, order in (("one", steps), ("two", steps[::-1]), ("three", steps + steps)):
        for step in order:
            assert main(["blobs", "add", str(tmp_path / name), *step]) == 0
    one = (tmp_path / "one" / "pathmap.json").read_bytes()
    assert one == (tmp_path / "two" / "pathmap.json").read_bytes() == (tmp_path / "three" / "pathmap.json").read_bytes()
    assert one.endswith(b"}\n") and list(json.loads(one)["files"]) == sorted(json.loads(one)["files"])


def test_cli_add_replaces_a_path_in_any_spelling_and_check_lists_the_orphan(tmp_path, capsys) -> None:
    inputs, archive = _inputs(tmp_path), tmp_path / "archive"
    assert main(["blobs", "add", str(archive), str(inputs / "wells.csv"), "--as", r"C:\PGE383\data\wells.csv"]) == 0
    assert main(["blobs", "add", str(archive), str(inputs / "density.csv"), "--as", r"c:/pge383/DATA/WELLS.csv"]) == 0
    assert load_pathmap(archive / "pathmap.json").entries() == {r"C:\pge383\DATA\WELLS.csv": BLOB["density"]}
    capsys.readouterr()
    assert main(["blobs", "check", str(archive), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["orphans"] == [BLOB["wells"]]


def test_cli_check_names_corrupt_and_missing_blobs(archive, capsys) -> None:
    (archive / blob_path(BLOB["tanks"])).write_bytes(b"tampered")
    (archive / blob_path(BLOB["readme"])).unlink()
    assert main(["blobs", "check", str(archive)]) == 1
    out = capsys.readouterr().out
    assert f"corrupt  {BLOB['tanks']}  {PROJECT}\\inputs\\tanks_17042c.csv" in out
    assert f"missing  {BLOB['readme']}  \\\\srv-calc-01\\hull\\README.txt" in out
    report = check_archive(archive)
    assert not report.ok and list(report.corrupt) == [BLOB["tanks"]] and list(report.missing) == [BLOB["readme"]]


def test_cli_add_goes_on_past_bad_files_and_refuses_hostile_targets(tmp_path, capsys) -> None:
    inputs, archive = _inputs(tmp_path), tmp_path / "archive"
    status = main(
        ["blobs", "add", str(archive), str(inputs / "nope.csv"), str(inputs / "wells.csv"), "--as", "C:\\PGE383\\"]
    )
    assert status == 1
    captured = capsys.readouterr()
    assert "nope.csv" in captured.err and f"{BLOB['wells']}  C:\\PGE383\\wells.csv" in captured.out
    assert main(["blobs", "add", str(archive), str(inputs / "density.csv"), "--as", r"C:\PGE383\..\..\x.csv"]) == 1
    assert "climbs above" in capsys.readouterr().err
    assert main(["blobs", "add", str(archive), str(inputs / "density.csv"), "--as", "C:\\NUL.csv"]) == 1
    assert load_pathmap(archive / "pathmap.json").entries() == {r"C:\PGE383\wells.csv": BLOB["wells"]}
    assert main(["blobs", "add", str(archive), str(inputs / "a"), str(inputs / "b"), "--as", r"C:\x.csv"]) == 2


def test_cli_check_refuses_a_damaged_path_map(archive, capsys) -> None:
    (archive / "pathmap.json").write_text('{"format": 1, "files": {"C:\\\\CON": "sha256:00"}}')
    assert main(["blobs", "check", str(archive)]) == 2
    assert "pathmap.json: files['C:\\\\CON']" in capsys.readouterr().err
