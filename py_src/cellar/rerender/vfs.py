r"""Virtual file system for re-rendering: paths as written in notebooks -> content-addressed blobs.

An archive keeps `pathmap.json` at its root and its input files as blobs under
`blobs/sha256/<ab>/<hex>`:

    {"format": 1,
     "files": {"\\\\srv-calc-01\\projects\\2017\\17-042\\inputs\\tanks_17042c.csv": "sha256:<hex>"},
     "trees": {"\\\\srv-calc-01\\hull": {"2019/130m/lines.csv": "sha256:<hex>"}}}

`files` maps single logical paths; `trees` maps whole folders (such as a share root) with paths
relative to the prefix, `/`-separated. A notebook's path is resolved to a blob id by `PathMap.resolve`
and the bytes come from a `cellar.rerender.blob_store.BlobStore`, which checks every blob against
its SHA-256.

Resolution rules (Windows-faithful, and refusing rather than guessing):

- Flavours. Windows paths (`\\server\share\...`, `X:\...`, `\\?\UNC\...`, `\\?\X:\...`) take
  either slash and compare case-insensitively, character by character as Windows does. POSIX paths
  (`/...`) take `/` only and compare exactly; a backslash in one is refused as ambiguous. Home paths
  (`~`, `~/...`, `~\...`: the author's home, whatever the sandbox's `expanduser` makes of it) take
  either slash and compare exactly; `~name` (another user's home) is refused.
- Relative paths resolve against `cwd` (an absolute logical path; see `chdir`) and take its flavour.
  With a Windows cwd, `\x` is rooted at the cwd's share or drive and `C:x` is relative to the cwd
  if it is on drive C, else to `C:\`.
- Repeated separators collapse and `.` is dropped; `..` goes up, but a `..` that would climb above the
  share root, drive root, `/` or `~` is refused, even if later names would come back down. In the
  device forms `\\?\` and `\\.\`, `.` and `..` are refused: Windows passes them through
  unresolved in `\\?\` paths, and nothing legitimate needs them there.
- Nothing is decoded: `..%5c` is a name with a percent sign in it, and look-alike characters such as
  U+FF0E (fullwidth full stop) are ordinary characters.
- Refused in every flavour: paths over 4,096 characters, names over 255, NUL and other control
  characters, text that is not valid Unicode. In Windows paths also `<>:"|?*` (so alternate data
  streams `name:stream`), device names (CON, PRN, AUX, NUL, COM0-9, LPT0-9 and superscript-digit
  forms, CONIN$, CONOUT$, with or without extensions), names ending in a dot or a space (Windows
  strips those, so they would alias another name), and device-namespace paths other than a drive or
  `UNC\server\share` (`\\.\PhysicalDrive0`, `\\?\GLOBALROOT\...`).
- A path that is not mapped is a FileNotFoundError (`NotInPathMap`) when its folder is one the map
  implies (an ancestor of a mapped file) or it lies below a tree prefix; any other path is outside
  every mapping and refused (`PathRefused`, a PermissionError): other servers, other drives' folders,
  `/etc/passwd`.

Exceptions, all `VfsError`:

    VfsError
    |- PathMapError (ValueError)            a bad pathmap.json: names the file and the entry
    |- PathRefused (PermissionError)        unsafe path, or outside every mapping
    |- NotInPathMap (FileNotFoundError)     unmapped path in a mapped folder
    |- IsADirectory (IsADirectoryError)     a file read of a folder the map implies
    |- NotADirectory (NotADirectoryError)   a listing of a mapped file
    `- BlobError
       |- InvalidBlobId (ValueError)        not `sha256:` + 64 lowercase hex digits
       |- BlobNotFound (FileNotFoundError)  the store has no such blob
       `- BlobCorrupt                       the bytes do not hash to the blob id: never swallowed
                                            by a notebook's `except OSError`

Resolution and the blob checks are stdlib-only and run in Pyodide; the store that reads blobs
from a folder or object storage is cellar.rerender.blob_store's. In the browser the worker fetches a
blob's bytes from `blob_path(blob_id)` on the site and checks them with `verify_blob`.

Writing an archive (`cellar blobs add` / `check`) is cellar.rerender.archive's.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from cellar.ingest.discovery import FileRefused, read_document, write_atomic
from cellar.ingest.provenance import revision

FORMAT = 1
PATHMAP_FILE = "pathmap.json"
MAX_PATH_CHARS = 4096  # POSIX PATH_MAX; Windows' own limit (32,767) is far beyond any real archive
MAX_NAME_CHARS = 255
MAX_BLOB_BYTES = 1024 * 2**20  # one input file of a notebook (a blob): larger ones are refused unread
# The folders a path map may imply: each costs a node of the tree (a few hundred bytes), so a map of
# 1,000 paths 2,000 folders deep, 6 MB, took 1.1 GB; an archive's tens of thousands of input files
# sit in far fewer folders.
MAX_IMPLIED_FOLDERS = 200_000
BLOB_PATTERN = re.compile(r"sha256:([0-9a-f]{64})")
_WINDOWS_BAD_CHARS = frozenset('<>:"|?*')
_DEVICE_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{port}{digit}" for port in ("COM", "LPT") for digit in "0123456789\u00b9\u00b2\u00b3"]
)
_DEVICE_PREFIX = re.compile(r"[\\/]{2}[?.][\\/]")
_DRIVE = re.compile(r"([A-Za-z]):(.*)", re.S)
_SEPARATORS = {"windows": re.compile(r"[\\/]"), "home": re.compile(r"[\\/]"), "posix": re.compile("/")}

AnyPath = str | bytes | PathLike


class VfsError(Exception):
    """Base of every error that cellar.rerender.vfs raises."""


class PathMapError(VfsError, ValueError):
    """A path map that is not valid: the message names the file and the entry."""


class PathRefused(VfsError, PermissionError):
    """A path that is unsafe or outside every mapping; nothing was read."""


class NotInPathMap(VfsError, FileNotFoundError):
    """A path in a mapped folder that the path map does not list."""


class IsADirectory(VfsError, IsADirectoryError):
    """A file read of a folder that the path map implies."""


class NotADirectory(VfsError, NotADirectoryError):
    """A folder listing of a mapped file."""


class BlobError(VfsError):
    """Base of the blob store's errors."""


class InvalidBlobId(BlobError, ValueError):
    """A blob id that is not `sha256:` followed by 64 lowercase hex digits."""


class BlobNotFound(BlobError, FileNotFoundError):
    """The blob store has no blob with this id."""


class BlobCorrupt(BlobError):
    """A blob whose bytes do not hash to its id."""


def _shown(text: str) -> str:
    """The path as an error message shows it: whole, unless it is too long to read."""
    return text if len(text) <= 200 else f"{text[:120]}... ({len(text)} characters)"


def _refused(text: str, reason: str) -> PathRefused:
    return PathRefused(errno.EACCES, f"refused: {reason}", _shown(text))


# -- Logical paths ---------------------------------------------------------------------------------


def _fold(name: str) -> str:
    """Windows' case-insensitive form: each character upper-cased alone (no 'ß' -> 'SS')."""
    return "".join(upper if len(upper := char.upper()) == 1 else char for char in name)


@dataclass(frozen=True)
class LogicalPath:
    r"""An absolute logical path: a root (`\\server\share`, `C:`, `/` or `~`) and names below it."""

    flavour: str  # "windows", "posix" or "home"
    root: str
    parts: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.flavour == "windows":  # a drive root is C:\ but a share root has no final separator
            if not self.parts and not self.root.startswith("\\"):
                return self.root + "\\"
            return "\\".join((self.root,) + self.parts)
        if self.flavour == "posix":
            return "/" + "/".join(self.parts)
        return "/".join(("~",) + self.parts)

    @property
    def key(self) -> tuple[str, ...]:
        """What two spellings of one path have in common: case-folded on Windows, exact elsewhere."""
        names = (self.root,) + self.parts
        return tuple(map(_fold, names)) if self.flavour == "windows" else names


def _text(path: AnyPath) -> str:
    """The path as text, with the checks that do not depend on its flavour."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        try:
            path = path.decode("utf-8")
        except UnicodeDecodeError:
            raise _refused(repr(path), "a path that is not valid UTF-8") from None
    if not isinstance(path, str):
        raise TypeError(f"a path must be str, bytes or os.PathLike, not {type(path).__name__}")
    if len(path) > MAX_PATH_CHARS:
        raise _refused(path, f"longer than {MAX_PATH_CHARS} characters")
    if "\x00" in path:
        raise _refused(path, "a NUL byte in the path")
    control = next((char for char in path if char < " "), None)
    if control is not None:
        raise _refused(path, f"a control character {control!r} in the path")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise _refused(path, "a lone surrogate in the path (not valid Unicode)") from None
    if not path:
        raise NotInPathMap(errno.ENOENT, "an empty path is not in the archive's path map", path)
    return path


def _check_name(name: str, flavour: str, text: str) -> None:
    """Refuse a file or folder name that could alias another name or reach a device."""
    if len(name) > MAX_NAME_CHARS:
        raise _refused(text, f"a name longer than {MAX_NAME_CHARS} characters")
    if flavour == "posix":
        if "\\" in name:
            raise _refused(text, "a backslash in a POSIX path (a separator on Windows, a character here)")
        return
    if flavour != "windows":
        return
    if ":" in name:
        raise _refused(text, f"{name!r} names an alternate data stream (':' inside a path)")
    bad = next((char for char in name if char in _WINDOWS_BAD_CHARS), None)
    if bad is not None:
        raise _refused(text, f"{bad!r} is not allowed in a Windows file name ({name!r})")
    if name.split(".")[0].rstrip(" ").upper() in _DEVICE_NAMES:
        raise _refused(text, f"{name!r} is a Windows device name")
    if name.endswith((".", " ")):
        raise _refused(text, f"{name!r} ends in a dot or a space, which Windows strips")


def _walk(base: LogicalPath, rest: str, verbatim: bool, text: str) -> LogicalPath:
    """Apply the names of `rest` to `base`: collapse separators, drop `.`, keep `..` within the root."""
    parts = list(base.parts)
    for name in _SEPARATORS[base.flavour].split(rest):
        if name in (".", "..") and verbatim:
            raise _refused(text, f"{name!r} in a device path (\\\\?\\ or \\\\.\\), taken literally there")
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                raise _refused(text, f"'..' climbs above {str(LogicalPath(base.flavour, base.root))!r}")
            parts.pop()
            continue
        _check_name(name, base.flavour, text)
        parts.append(name)
    return LogicalPath(base.flavour, base.root, tuple(parts))


def _unc(text: str) -> tuple[LogicalPath, str]:
    r"""The share root of a `\\server\share\...` path and the rest after it."""
    server, share, rest = (re.split(r"[\\/]", text[2:], maxsplit=2) + ["", ""])[:3]
    if not server or not share:
        raise _refused(text, "a UNC path needs a server and a share: \\\\server\\share\\...")
    for name in (server, share):
        if name in (".", ".."):
            raise _refused(text, f"{name!r} as a server or share name")
        _check_name(name, "windows", text)
    return LogicalPath("windows", f"\\\\{server}\\{share}"), rest


def logical_path(path: AnyPath, cwd: AnyPath | None = None) -> LogicalPath:
    """The absolute logical path that `path` names, relative paths taken against `cwd`.

    Raises PathRefused for anything unsafe (see the module's rules); never touches a file system.
    """
    text = _text(path)
    body, verbatim = text, False
    if _DEVICE_PREFIX.match(text):
        body, verbatim = text[4:], True
        if re.match(r"UNC[\\/]", body, re.I):
            body = "\\\\" + body[4:]
        elif not re.match(r"[A-Za-z]:([\\/]|$)", body):
            raise _refused(text, "a device-namespace path that names neither a drive nor UNC\\server\\share")
    drive = _DRIVE.match(body)
    if re.match(r"[\\/]{2}", body):
        base, rest = _unc(body)
    elif drive:
        root, rest = drive.group(1).upper() + ":", drive.group(2)
        base = LogicalPath("windows", root)
        if not verbatim and rest[:1] not in ("\\", "/") and cwd is not None:
            here = logical_path(cwd)  # `C:x`: relative to the working directory if that is on C:
            if here.root == root:
                base = here
    elif body == "~" or body.startswith(("~/", "~\\")):
        base, rest = LogicalPath("home", "~"), body[1:]
    elif body.startswith("~"):
        raise _refused(text, "the home directory of another user (only '~' is mapped)")
    elif body.startswith(("/", "\\")):
        working = logical_path(cwd) if cwd is not None else None
        if working is not None and working.flavour == "windows":  # rooted at the working directory's drive
            base = LogicalPath("windows", working.root)
        else:
            base = LogicalPath("posix", "/")
        rest = body
    elif cwd is None:
        raise _refused(text, "a relative path with no working directory to resolve it against")
    else:
        base, rest = logical_path(cwd), body
    return _walk(base, rest, verbatim, text)


def tree_target(root: LogicalPath, relative: str) -> LogicalPath:
    """The path of a tree entry: `relative` ('/'-separated, no '.', '..' or empty names) below `root`."""
    names = relative.split("/")
    if "\\" in relative or {"", ".", ".."} & set(names):
        raise _refused(relative, "a tree path must be relative and '/'-separated, without '.', '..' or empty names")
    for name in names:
        _check_name(name, root.flavour, relative)
    target = LogicalPath(root.flavour, root.root, root.parts + tuple(names))
    if len(str(target)) > MAX_PATH_CHARS:
        raise _refused(relative, f"the full path is longer than {MAX_PATH_CHARS} characters")
    return target


def chdir(cwd: AnyPath | None, path: AnyPath) -> str:
    r"""The working directory after `os.chdir(path)` from `cwd`, computed without any file system.

    `chdir(r"\\srv\p\2017", r"C:\PGE383")` is `'C:\\PGE383'`; whether the folder exists is the
    path map's question (`PathMap.isdir`).
    """
    return str(logical_path(path, cwd))


# -- Blob ids and the hash check (pure: the browser worker uses them too) --------------------------


def check_blob_id(blob_id: object) -> str:
    """The hex digest of a valid blob id; InvalidBlobId for anything else (so no id leaves the store)."""
    match = BLOB_PATTERN.fullmatch(blob_id) if isinstance(blob_id, str) else None
    if match is None:
        raise InvalidBlobId(f"invalid blob id {blob_id!r}: expected 'sha256:' and 64 lowercase hex digits")
    return match.group(1)


def blob_id_of(data: bytes) -> str:
    """The blob id of `data`: `sha256:` and the SHA-256 hex digest of the bytes."""
    return "sha256:" + revision(data)


def blob_path(blob_id: str) -> str:
    """Where a blob lives relative to the store's root: `blobs/sha256/<ab>/<hex>`."""
    digest = check_blob_id(blob_id)
    return f"blobs/sha256/{digest[:2]}/{digest}"


def verify_blob(blob_id: str, data: bytes, where: str = "") -> bytes:
    """`data` if it hashes to `blob_id`; BlobCorrupt naming the blob (and `where` it came from)."""
    actual = blob_id_of(data)
    if actual != f"sha256:{check_blob_id(blob_id)}":
        place = f" at {where}" if where else ""
        raise BlobCorrupt(f"blob {blob_id}{place} is corrupt: its bytes hash to {actual}")
    return data


# -- The path map -----------------------------------------------------------------------------------


class _Folder:
    """A folder that the path map implies, as a node of a tree of folders: each name of a path is
    one step down from its parent, so building and looking up cost the length of the path, never
    its square (a key per ancestor would fold and hash every prefix again)."""

    __slots__ = ("names", "folders", "entry", "tree")

    def __init__(self, entry: str) -> None:
        self.names: dict[str, str] = {}  # folded name -> name as first mapped, files and folders alike
        self.folders: dict[str, _Folder] = {}  # folded name -> the subfolder
        self.entry = entry  # the first entry that implies the folder, for error messages
        self.tree = False  # a tree's prefix: every path below it is NotInPathMap, not refused


@dataclass(frozen=True, eq=False)
class PathMap:
    """Logical paths -> blob ids, with the folders they imply. Build it with `from_dict`."""

    data: dict[str, Any]  # the map as pathmap.json holds it, keys sorted
    files: dict[tuple[str, ...], tuple[str, str]] = field(repr=False)  # key -> (path, blob id)
    roots: dict[str, _Folder] = field(repr=False)  # folded root (share, drive, / or ~) -> its folder

    @classmethod
    def from_dict(cls, data: object, source: str = PATHMAP_FILE) -> PathMap:
        """Validate a decoded pathmap.json; PathMapError names `source` and the entry at fault."""
        return _Builder(source).build(data)

    @classmethod
    def empty(cls) -> PathMap:
        """The map of an archive without pathmap.json: no files, so every path is refused."""
        return cls.from_dict({"format": FORMAT, "files": {}})

    def entries(self) -> dict[str, str]:
        """Every mapped file, as the map spells it, with its blob id."""
        return dict(sorted(self.files.values()))

    def resolve(self, path: AnyPath, cwd: AnyPath | None = None) -> str:
        """The blob id of the file that `path` names (relative paths against `cwd`)."""
        target = logical_path(path, cwd)
        hit = self.files.get(target.key)
        if hit is not None:
            return hit[1]
        raise self._missing(target, _text(path))

    def listdir(self, path: AnyPath, cwd: AnyPath | None = None) -> list[str]:
        """The names in a folder that the map implies, sorted."""
        target = logical_path(path, cwd)
        folder = self._folder(target.key)
        if folder is not None:
            return sorted(folder.names.values())
        if target.key in self.files:
            raise NotADirectory(errno.ENOTDIR, "a file in the archive's path map, not a folder", _shown(_text(path)))
        raise self._missing(target, _text(path))

    def exists(self, path: AnyPath, cwd: AnyPath | None = None) -> bool:
        """Whether `path` is a mapped file or implied folder; False for refused paths, like os.path.exists."""
        key = self._key(path, cwd)
        return key is not None and (key in self.files or self._folder(key) is not None)

    def isfile(self, path: AnyPath, cwd: AnyPath | None = None) -> bool:
        return self._key(path, cwd) in self.files

    def isdir(self, path: AnyPath, cwd: AnyPath | None = None) -> bool:
        key = self._key(path, cwd)
        return key is not None and self._folder(key) is not None

    def _key(self, path: AnyPath, cwd: AnyPath | None) -> tuple[str, ...] | None:
        try:
            return logical_path(path, cwd).key
        except VfsError:
            return None

    def _folders(self, key: tuple[str, ...]) -> list[_Folder]:
        """The implied folders along `key`, from its root down, as far as the map implies them."""
        found: list[_Folder] = []
        below = self.roots
        for name in key:
            folder = below.get(name)
            if folder is None:
                break
            found.append(folder)
            below = folder.folders
        return found

    def _folder(self, key: tuple[str, ...]) -> _Folder | None:
        found = self._folders(key)
        return found[-1] if len(found) == len(key) else None

    def _missing(self, target: LogicalPath, text: str) -> VfsError:
        """The error for a path that names no mapped file: which depends on where it points."""
        key = target.key
        found = self._folders(key)
        if len(found) == len(key):
            return IsADirectory(errno.EISDIR, "a folder in the archive's path map, not a file", _shown(text))
        under_tree = any(folder.tree for folder in found[: len(key) - 1])
        if under_tree or (len(key) > 1 and len(found) == len(key) - 1):  # below a tree, or its folder is mapped
            resolved = str(target)
            note = "" if resolved == text else f" (resolved to {_shown(resolved)!r})"
            return NotInPathMap(errno.ENOENT, f"not in the archive's path map{note}", _shown(text))
        return _refused(text, "outside every mapping of the archive's path map")


class _Builder:
    """Collects validated entries into a PathMap, naming the source and entry of every problem."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.files: dict[tuple[str, ...], tuple[str, str]] = {}
        self.file_entry: dict[tuple[str, ...], str] = {}
        self.roots: dict[str, _Folder] = {}
        self.folders = 0  # implied so far, up to MAX_IMPLIED_FOLDERS

    def fail(self, entry: str, problem: str) -> PathMapError:
        return PathMapError(f"{self.source}: {entry}: {problem}")

    def build(self, data: object) -> PathMap:
        if not isinstance(data, dict):
            raise self.fail("the path map", f"must be a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - {"format", "files", "trees"})
        if unknown:
            raise self.fail("the path map", f"unknown key(s) {', '.join(map(repr, unknown))}")
        if data.get("format") != FORMAT or isinstance(data.get("format"), bool):
            raise self.fail("format", f"must be {FORMAT}, not {data.get('format')!r}")
        files, trees = data.get("files", {}), data.get("trees", {})
        for name, value in (("files", files), ("trees", trees)):
            if not isinstance(value, dict):
                raise self.fail(name, f"must be a JSON object, not {type(value).__name__}")
        for logical, blob in sorted(files.items()):
            entry = f"files[{logical!r}]"
            target = self.path(logical, entry)
            if not target.parts:
                raise self.fail(entry, "a share or drive root cannot be a file")
            self.add_file(target, blob, entry)
        for prefix, tree in sorted(trees.items()):
            entry = f"trees[{prefix!r}]"
            root = self.path(prefix, entry)
            if not isinstance(tree, dict):
                raise self.fail(entry, f"must be a JSON object of relative paths, not {type(tree).__name__}")
            self.add_dir(root, entry).tree = True
            for relative, blob in sorted(tree.items()):
                inner = f"{entry}[{relative!r}]"
                self.add_file(self.tree_path(root, relative, inner), blob, inner)
        clean = {
            "format": FORMAT,
            "files": dict(sorted(files.items())),
            "trees": {prefix: dict(sorted(tree.items())) for prefix, tree in sorted(trees.items())},
        }
        return PathMap(clean, self.files, self.roots)

    def path(self, logical: object, entry: str) -> LogicalPath:
        if not isinstance(logical, str):
            raise self.fail(entry, "a logical path must be a string")
        try:
            return logical_path(logical)
        except OSError as error:
            raise self.fail(entry, error.strerror or str(error)) from None

    def tree_path(self, root: LogicalPath, relative: object, entry: str) -> LogicalPath:
        if not isinstance(relative, str):
            raise self.fail(entry, "a tree path must be a string")
        try:
            return tree_target(root, relative)
        except OSError as error:
            raise self.fail(entry, error.strerror or str(error)) from None

    def add_dir(self, target: LogicalPath, entry: str) -> _Folder:
        """The folder `target`, made with every folder above it that is new: one step per name."""
        key = target.key  # each name folded once
        folder = self.roots.setdefault(key[0], _Folder(entry))
        for depth, name in enumerate(key[1:]):
            below = folder.folders.get(name)
            if below is None:
                if name in folder.names:  # named, but not a folder: a file
                    above = LogicalPath(target.flavour, target.root, target.parts[: depth + 1])
                    owner = self.file_entry[key[: depth + 2]]
                    raise self.fail(entry, f"puts files below {str(above)!r}, which {owner} maps as a file")
                self.folders += 1
                if self.folders > MAX_IMPLIED_FOLDERS:
                    raise self.fail(entry, f"the map implies more than {MAX_IMPLIED_FOLDERS:,} folders")
                below = folder.folders[name] = _Folder(entry)
                folder.names[name] = target.parts[depth]
            folder = below
        return folder

    def add_file(self, target: LogicalPath, blob: object, entry: str) -> None:
        try:
            check_blob_id(blob)
        except InvalidBlobId as error:
            raise self.fail(entry, str(error)) from None
        assert isinstance(blob, str)  # check_blob_id accepts strings only
        key = target.key
        if key in self.files and self.files[key][1] != blob:
            raise self.fail(entry, f"maps the same path as {self.file_entry[key]} to another blob")
        parent = self.add_dir(LogicalPath(target.flavour, target.root, target.parts[:-1]), entry)
        if key[-1] in parent.folders:
            raise self.fail(entry, f"{str(target)!r} is a folder of {parent.folders[key[-1]].entry}")
        parent.names.setdefault(key[-1], target.parts[-1])
        self.files.setdefault(key, (str(target), blob))
        self.file_entry.setdefault(key, entry)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object hook that refuses duplicate keys, which json would silently collapse."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"the key {key!r} occurs twice in one object")
        result[key] = value
    return result


def load_pathmap(path: str | PathLike[str]) -> PathMap:
    """Read and validate a pathmap.json; PathMapError names the file and what is wrong.

    It is read as `cellar rerender` reads it, as any file of the archive (`read_document`, the
    archive being its folder): a FIFO, a device, a link out of the archive or a file over the
    size limit is a PathMapError, never opened, so it cannot hang or exhaust memory.
    """
    source = os.fspath(path)
    if not os.path.lexists(source):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), source)
    try:
        raw = read_document(source, os.path.dirname(os.path.abspath(source)))
    except FileRefused as error:
        raise PathMapError(f"{source}: {error.problem}") from None
    return parse_pathmap(raw, source)


def parse_pathmap(raw: bytes, source: str = PATHMAP_FILE) -> PathMap:
    """A pathmap.json's bytes, validated; PathMapError names `source` and what is wrong."""
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as error:
        raise PathMapError(f"{source}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except (ValueError, RecursionError) as error:  # not JSON, a duplicate key, nested too deeply
        raise PathMapError(f"{source}: not a valid path map: {error}") from None
    return PathMap.from_dict(data, source)


def dump_pathmap(pathmap: PathMap) -> str:
    """pathmap.json's text: keys sorted, two-space indent, non-ASCII kept, one final newline."""
    return json.dumps(pathmap.data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def save_pathmap(path: str | PathLike[str], pathmap: PathMap) -> None:
    """Write pathmap.json atomically and deterministically (same map, same bytes)."""
    write_atomic(os.fspath(path), dump_pathmap(pathmap).encode("utf-8"))
