"""The rules for every file grainlab writes (docs/trace-format.md, "Output path").

- Only regular files: an output that exists and is a device, FIFO, socket or
  directory is refused with one line — never opened (a FIFO would block),
  never unlinked.
- A symbolic link is written through: its target is replaced, the link stays.
- Nothing is truncated or unlinked in place: writers write a temporary file of
  their own beside the output and rename it over the output at the end, so a
  reader never sees half a file.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import UsageError

KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISCHR, "is a device"),
         (stat.S_ISBLK, "is a device"), (stat.S_ISFIFO, "is a FIFO"),
         (stat.S_ISSOCK, "is a socket"))


def resolve_output(path, what: str = "trace") -> Path:
    """The regular file that writing to `path` will replace (links followed),
    after checking it may be written; raises UsageError with one line."""
    given = Path(path)
    target = Path(os.path.realpath(given))          # follows links, even dangling ones
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(f"cannot write {what} to {given}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in KINDS if test(st.st_mode)), "is not a regular file")
        raise UsageError(f"cannot write {what} to {given}: it {kind} (grainlab writes only "
                         "regular files: choose a file name)")
    parent = target.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} to {given}: directory {parent} does not exist")
    # The writability check creates a file of our own beside the target (the
    # name the rename will come from) and removes it: root passes access()
    # checks for /proc or a read-only mount where creating a file fails.
    probe = temporary_beside(target)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"cannot write {what} to {given}: {e.strerror}") from None
    return target


def temporary_beside(target: Path) -> Path:
    """A fresh name of our own in the target's directory (same file system:
    the final rename is atomic)."""
    for k in range(1000):
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{k}.grainlab-tmp")
        if not os.path.lexists(tmp):
            return tmp
    raise UsageError(f"cannot find a free temporary name beside {target}")
