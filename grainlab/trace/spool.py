"""Spools: what the collector writes while a program runs (docs/trace-format.md,
"The spool"). The collector appends blocks of events (compactly encoded) to
`<trace>.spool` and, when the run ends, starts `grainlab-convert`, which
writes `<trace>` and removes the spool. The spool is flock()ed from the run's start until the trace is
ready, so:

- spool locked: the run or its conversion is in progress -> wait;
- spool unlocked and no trace: the run was killed (SIGKILL) or its converter
  failed -> convert it now (a killed run's trace is marked incomplete).

`ensure_trace(path)` does exactly that; `grainlab.trace.load` calls it first.
"""
from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

from .. import _paths
from ..errors import TraceError

SUFFIX = ".spool"
# Say why we are waiting only when the wait is noticeable.
WAIT_MESSAGE_AFTER_S = 0.5
POLL_S = 0.02


def spool_of(trace_path) -> Path:
    """The spool that belongs to a trace path."""
    return Path(str(trace_path) + SUFFIX)


def is_locked(spool: Path) -> bool | None:
    """True while a collector or converter holds the spool; None if no spool."""
    try:
        fd = os.open(spool, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


_HEADER = struct.Struct("<8s6I2Q")  # gl_spool_header (grainlab_spool.h)
MAGIC = b"GLSPOOL\n"  # GL_SPOOL_MAGIC


def header_values(spool: Path) -> dict:
    """The key/value records of a spool's header (JSON values parsed), or {}
    when there is no readable header yet."""
    try:
        with open(spool, "rb") as f:
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size:
                return {}
            magic, _version, header_bytes, _eb, _nc, nkv, _clock, _m, _r = _HEADER.unpack(head)
            if magic != MAGIC or header_bytes > 1 << 24:
                return {}
            body = f.read(header_bytes - _HEADER.size)
    except OSError:
        return {}
    out, at = {}, 0
    for _ in range(nkv):
        if at + 8 > len(body):
            break
        klen, vlen = struct.unpack_from("<2I", body, at)
        key = body[at + 8:at + 8 + klen].decode(errors="replace")
        value = body[at + 8 + klen:at + 8 + klen + vlen].decode(errors="replace")
        at += 8 + klen + vlen
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def lock_holder(spool: Path) -> int | None:
    """The process holding the spool's flock (from /proc/locks), or None."""
    try:
        st = os.stat(spool)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 3456 fe:00:9977903 0 EOF" ("->": a waiter)
        if len(parts) < 6 or parts[1] != "FLOCK" or "->" in line:
            continue
        try:
            maj, mnr, ino = parts[5].split(":")
            if (int(maj, 16), int(mnr, 16), int(ino)) == want:
                return int(parts[4])
        except ValueError:
            continue
    return None


def is_converter(pid: int) -> bool:
    """Is `pid` a grainlab-convert (finishing a run that has ended)?"""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().startswith("grainlab-conver")
    except OSError:
        return False


def wait_until_unlocked(spool: Path, trace_path, quiet: bool = False) -> None:
    """Block while the spool is locked (the run or its conversion goes on);
    one line on stderr if that takes more than WAIT_MESSAGE_AFTER_S."""
    start = time.monotonic()
    said = quiet
    while is_locked(spool):
        if not said and time.monotonic() - start > WAIT_MESSAGE_AFTER_S:
            print(f"grainlab: waiting for the collector to finish writing {trace_path}",
                  file=sys.stderr, flush=True)
            said = True
        time.sleep(POLL_S)


def ensure_trace(path, quiet: bool = False) -> None:
    """Make the trace at `path` ready to read if a spool says it is coming:
    wait for the collector/converter, or convert a spool nobody is working on.
    Does nothing when there is no spool (the common case: one stat)."""
    path = Path(os.path.realpath(path))   # a link's spool is its target's
    spool = spool_of(path)
    if not spool.exists():
        return
    wait_until_unlocked(spool, path, quiet)
    # A spool still there after its lock is gone is a run that was not
    # converted (killed): newer than any trace at `path`, which it replaces.
    if not spool.exists():
        return
    convert(spool, path)


def convert(spool: Path, out: Path) -> None:
    """Run grainlab-convert on a spool that no process holds. Raises
    TraceError with the converter's one-line reason on failure."""
    exe = _paths.converter()
    try:
        # the converter renames onto its output: give it the link's target
        env = {k: v for k, v in os.environ.items() if k != "GRAINLAB_QUIET"}  # we want its reason
        result = subprocess.run([str(exe), str(spool), os.path.realpath(out)], capture_output=True,
                                text=True, stdin=subprocess.DEVNULL, env=env)
    except OSError as e:
        raise TraceError(f"{spool}: cannot run {exe} ({e.strerror})") from None
    if result.returncode != 0:
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        reason = lines[-1] if lines else f"{exe.name} exited with {result.returncode}"
        prefix = f"grainlab: cannot convert {spool}: "
        reason = reason[len(prefix):] if reason.startswith(prefix) else \
            reason.removeprefix("grainlab: ")
        if "No space left on device" in reason or "errno 28" in reason:
            raise TraceError(
                f"no room to write the trace beside {spool} (its disk is full): the run is "
                f"kept there; convert it on another disk with `grainlab convert {spool} "
                f"-o OTHER_DIR/{Path(out).name}`")
        raise TraceError(f"{spool}: cannot convert to a trace: {reason}")
