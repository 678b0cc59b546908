"""The file system a notebook sees in the sandbox: the archive's path map, plus a scratch area.

In: the archive's path map (cellar.rerender.vfs), the blobs it names (id -> bytes), the notebook's
logical working directory, and a test of whether a code file is one of the notebook's cells. Out:
a `FileView` whose open/stat/listdir/chdir/getcwd/mkdir/remove read mapped files as their checked
blobs, write to a scratch folder deleted afterwards, and refuse every other path; and the
`FileHooks` that route builtins.open, io.open and os's file functions to the running notebook's
view, while library code (not a cell) still reads the interpreter's own files (`runtime_roots`).
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import stat as _stat
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from cellar.rerender import vfs

# The real file functions, as they were when this module was first imported (before any hook).
_REAL: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        "open": builtins.open,
        "stat": os.stat,
        "lstat": os.lstat,
        "listdir": os.listdir,
        "chdir": os.chdir,
        "getcwd": os.getcwd,
        "mkdir": os.mkdir,
        "remove": os.remove,
        "unlink": os.unlink,
    }
)


def runtime_roots(*extra: str) -> tuple[str, ...]:
    """Folders of the interpreter's own files, which library code (not a cell) may read.

    The standard library and site-packages, matplotlib's font cache and configuration, and `extra`
    (the run's scratch folder); not the home folder or the working directory, which Pyodide puts
    on sys.path.
    """
    paths = sysconfig.get_paths()
    roots = {
        os.path.dirname(os.__file__),
        paths["stdlib"],
        paths["platstdlib"],
        paths["purelib"],
        paths["platlib"],
        *extra,
    }
    roots.update(path for path in sys.path if path.endswith((".zip", "site-packages", "lib-dynload")))
    if "matplotlib" in sys.modules:
        roots.update([sys.modules["matplotlib"].get_cachedir(), sys.modules["matplotlib"].get_configdir()])
    roots.update([os.path.realpath(root) for root in roots])
    return tuple(sorted({os.path.join(os.path.normpath(root), "") for root in roots if root}))


class FileView:
    """The path map, a scratch overlay for writes, and the logical working directory of one run."""

    def __init__(
        self, pathmap: vfs.PathMap, blobs: Mapping[str, bytes], cwd: str, is_cell: Callable[[str], bool]
    ) -> None:
        self.pathmap, self.blobs, self.cwd, self.is_cell = pathmap, blobs, cwd, is_cell
        self.scratch = tempfile.mkdtemp(prefix="cellar-scratch-")
        self.written: dict[tuple[str, ...], str] = {}  # logical key -> scratch file
        self.made_dirs: set[tuple[str, ...]] = set()
        self.roots = runtime_roots(self.scratch)
        self.decided: dict[str, bool] = {}  # path -> whether it is a runtime file (inspect asks often)

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def real(self, path: Any, depth: int = 2) -> bool:
        """Whether `path` goes to the real file system: the interpreter's files, for library code."""
        if isinstance(path, int):
            return True  # an already open descriptor
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return True  # not a path: let the real function raise its own TypeError
        caller = sys._getframe(depth)
        if caller.f_code.co_name == "_modified_open" and caller.f_back is not None:  # IPython's wrapper of open()
            caller = caller.f_back
        if not text.startswith("/") or self.is_cell(caller.f_code.co_filename):
            return False  # a cell's own open() sees only the archive
        known = self.decided.get(text)
        if known is None:
            known = self.decided[text] = self._runtime_file(text)
        return known

    def _runtime_file(self, text: str) -> bool:
        """Under the interpreter's own folders, and not a path the archive maps or the run wrote."""
        if "\x00" in text or not os.path.join(os.path.normpath(text), "").startswith(self.roots):
            return False
        try:
            return not (self.pathmap.exists(text) or vfs.logical_path(text).key in self.written)
        except vfs.VfsError:
            return False

    def key(self, path: Any) -> tuple[str, ...]:
        return vfs.logical_path(path, self.cwd).key

    def open(
        self,
        path: Any,
        mode: str = "r",
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
        closefd: bool = True,
        opener: Any = None,
    ) -> Any:
        key = self.key(path)
        writing = any(flag in mode for flag in "wax+")
        if writing or key in self.written:
            return _REAL["open"](self._scratch_file(path, key, mode), mode, buffering, encoding, errors, newline)
        blob_id = self.pathmap.resolve(path, self.cwd)
        data = vfs.verify_blob(blob_id, self._blob(blob_id, path), os.fsdecode(os.fspath(path)))
        raw = _NamedBytesIO(data, os.fsdecode(os.fspath(path)), mode)
        if "b" in mode:
            return raw
        return io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors, newline=newline)

    def _scratch_file(self, path: Any, key: tuple[str, ...], mode: str) -> str:
        """The scratch file behind a logical path, seeded with the blob when it is updated in place."""
        if key not in self.written:
            self.written[key] = os.path.join(self.scratch, f"{len(self.written)}")
            if "w" not in mode and self.pathmap.isfile(path, self.cwd):
                blob_id = self.pathmap.resolve(path, self.cwd)
                with _REAL["open"](self.written[key], "wb") as handle:
                    handle.write(vfs.verify_blob(blob_id, self._blob(blob_id, path)))
        return self.written[key]

    def _blob(self, blob_id: str, path: Any) -> bytes:
        """The bytes of a mapped path's blob; BlobNotFound, naming both, when the host sent none
        (the store lacks it, or could not use it: the re-render's report says why)."""
        if blob_id not in self.blobs:
            raise vfs.BlobNotFound(
                f"{os.fsdecode(os.fspath(path))}: its blob {blob_id} is missing from the archive's blob store or "
                "could not be used there (see the re-render's messages): not read"
            )
        return self.blobs[blob_id]

    def stat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        key = self.key(path)
        if key in self.written:
            return _REAL["stat"](self.written[key])
        if key in self.made_dirs or self.pathmap.isdir(path, self.cwd):
            return os.stat_result((_stat.S_IFDIR | 0o555, 0, 0, 2, 0, 0, 0, 0, 0, 0))
        blob_id = self.pathmap.resolve(path, self.cwd)  # raises the right error for the rest
        size = len(self.blobs[blob_id]) if blob_id in self.blobs else 0
        return os.stat_result((_stat.S_IFREG | 0o444, 0, 0, 1, 0, 0, size, 0, 0, 0))

    lstat = stat  # the archive has no symbolic links

    def listdir(self, path: Any = ".") -> list[str]:
        key = self.key(path)
        extra = {found[-1] for found in (*self.written, *self.made_dirs) if found[:-1] == key}
        if key in self.made_dirs and not self.pathmap.isdir(path, self.cwd):
            return sorted(extra)
        return sorted(set(self.pathmap.listdir(path, self.cwd)) | extra)

    def chdir(self, path: Any) -> None:
        target = vfs.chdir(self.cwd, path)
        if not (self.pathmap.isdir(target) or vfs.logical_path(target).key in self.made_dirs):
            self.stat(target)  # the error that names why it is not a folder
            raise NotADirectoryError(20, "not a folder in the archive's path map", target)
        self.cwd = target

    def mkdir(self, path: Any, mode: int = 0o777, **kwargs: Any) -> None:
        key = self.key(path)
        if key in self.made_dirs or self.pathmap.isdir(path, self.cwd) or key in self.written:
            raise FileExistsError(17, "File exists", os.fsdecode(os.fspath(path)))
        self.made_dirs.add(key)

    def remove(self, path: Any, **kwargs: Any) -> None:
        key = self.key(path)
        if key not in self.written:
            self.pathmap.resolve(path, self.cwd)
            raise PermissionError(13, "the archive's files are read-only", os.fsdecode(os.fspath(path)))
        _REAL["remove"](self.written.pop(key))


class _NamedBytesIO(io.BytesIO):
    """A mapped file's bytes with the `name` and `mode` a real file object has."""

    def __init__(self, data: bytes, name: str, mode: str) -> None:
        super().__init__(data)
        self.name = name
        self.mode = mode  # type: ignore[misc]  # read-only in typeshed's IO; a real file object has it


class FileHooks:
    """builtins.open, io.open and os's file functions, routed to the running notebook's view.

    `install()` replaces them for good (caches such as numpy's keep references to them), once per
    interpreter; a run puts its view in with `push(view)` and takes it out with `pop()`. While no
    view is in, and while a hook runs (the view's own calls, such as os.path.realpath), the hooks
    call the real functions. The sandbox's session holds the one instance of the interpreter.
    """

    def __init__(self) -> None:
        self.views: list[FileView] = []  # the running notebook's view; empty between notebooks
        self.inside: list[str] = []  # non-empty while a hook runs: the view's own file calls go to the real ones

    def push(self, view: FileView) -> None:
        self.views.append(view)

    def pop(self) -> None:
        self.views.pop()

    def install(self) -> None:
        """Route the file functions through this object for good; again is a no-op."""
        owner = getattr(builtins.open, "cellar_file_hooks", None)
        if owner is self:
            return
        if owner is not None:
            raise RuntimeError("the file functions are routed through another FileHooks already")
        builtins.open = io.open = self._hook("open")
        for name in ("stat", "lstat", "listdir", "chdir", "getcwd", "mkdir", "remove", "unlink"):
            setattr(os, name, self._hook(name))

    def _hook(self, name: str) -> Callable[..., Any]:
        """A replacement for os.<name>/open that defers to the running notebook's view, if any."""
        real = _REAL[name]
        views, inside = self.views, self.inside  # mutated in place, never rebound

        def hooked(*args: Any, **kwargs: Any) -> Any:
            view = views[-1] if views and not inside else None
            if view is None:  # between notebooks, or the view's own calls (os.path.realpath)
                return real(*args, **kwargs)
            if name == "getcwd":
                return view.cwd
            path = args[0] if args else kwargs.get("file", kwargs.get("path", "."))
            inside.append(name)
            try:
                if view.real(path):
                    return real(*args, **kwargs)
                method = "open" if name == "open" else "remove" if name == "unlink" else name
                return getattr(view, method)(*args, **kwargs)
            finally:
                inside.pop()

        hooked.__name__ = hooked.__qualname__ = name
        hooked.__doc__ = real.__doc__
        hooked.cellar_file_hooks = self  # type: ignore[attr-defined]
        return hooked
