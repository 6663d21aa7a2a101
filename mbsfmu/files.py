"""Reading input files safely: only regular files, so a device (/dev/zero), a FIFO or a
directory given as a model, scenario, URDF, CSV input or trajectory is refused with a clear
error instead of being read without bound or blocking on open; and making output folders, with
the reason when one cannot be made."""

from __future__ import annotations

import errno
import io
import os
import stat

KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular(path: str | os.PathLike, mode: str = "r", **kwargs) -> io.IOBase:
    """Open ``path`` for reading ("r" or "rb", ``kwargs`` as for ``open``) if it is a regular
    file; OSError (strerror says what the path is) otherwise. The file is opened non-blocking
    and checked with fstat before any read, so a FIFO without writer does not block."""
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in KINDS if test(st.st_mode)), "not a regular file")
            raise OSError(errno.EINVAL, f"{kind}, not a regular file", os.fspath(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, mode, closefd=True, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """The text of a regular file (OSError for anything else, UnicodeDecodeError for bad text)."""
    with open_regular(path, "r", encoding=encoding) as f:
        return f.read()


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file (OSError for anything else)."""
    with open_regular(path, "rb") as f:
        return f.read()


__all__ = ["open_regular", "read_bytes", "read_text"]


def make_folder(path: str | os.PathLike, what: str) -> None:
    """Create the folder ``path`` with its parents; OSError whose message says why it cannot be
    (an existing file there or on its way, no permission, ...), prefixed by ``what`` (e.g.
    "--out out/x")."""
    from pathlib import Path

    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if folder.is_file():
            why = "it is an existing file"
        elif isinstance(e, (FileExistsError, NotADirectoryError)):
            blocker = next((p for p in (folder, *folder.parents) if p.is_file()), None)
            why = f"{blocker} is a file, not a folder" if blocker else "a part of its path is a file, not a folder"
        else:
            why = e.strerror or str(e)
        raise OSError(e.errno, f"{what}: cannot create the folder {folder}: {why}") from None
