"""A full disk (issue 11 item 4), on a real 5 MiB tmpfs: the program's output
and exit status are untouched; the collector stops recording when the next
block would not fit, ends the spool properly (`end_reason: disk full`, exact
counts of what was kept and lost), and the trace is either in place or, when
it does not fit beside the spool, one line says where the run is kept and how
to convert it elsewhere. Nothing half-written is left behind."""
from __future__ import annotations

import os
import struct
import subprocess

import pytest

import grainlab as gl
from grainlab import _paths
from grainlab.trace.spool import spool_of
from conftest import grainlab

# 2.5M events at 1 thread: ~12.7 MB of compact spool (142 MB raw), well over
# the 5 MiB disk in both encodings
FIB = ("fib", "27")
FIB_OUT = "fib(27) = 196418\n"


@pytest.fixture
def small_disk(tmp_path, request):
    """A 5 MiB tmpfs of our own (never a real one); another size with
    @pytest.mark.parametrize("small_disk", ["2m"], indirect=True)."""
    where = tmp_path / "small"
    where.mkdir()
    size = getattr(request, "param", "5m")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or 'mount failed'}): "
                    "the full-disk tests need root or CAP_SYS_ADMIN")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def said(r):
    """record's lines on stderr, but for the progress line it prints when the
    conversion takes over 0.5 s (a loaded machine's matter, not an error)."""
    return [ln for ln in r.stderr.strip().splitlines()
            if not ln.startswith("grainlab: waiting for the collector to finish writing")]


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if "grainlab-tmp" in p.name)


@pytest.fixture(scope="module")
def full_run_events(tmp_path_factory, example):
    """Events of the same program, same buffer size, 1 thread, on a roomy disk:
    deterministic, so kept + lost on the small disk must add up to it. Counted
    from the spool's block headers (no conversion: tiny buffers make slow
    traces), checked against the collector's own count in its end record."""
    counts = {}

    def events(buffer):
        if buffer not in counts:
            out = tmp_path_factory.mktemp("roomy") / "t.parquet"
            env = {**os.environ, "OMP_NUM_THREADS": "1", "GRAINLAB_QUIET": "1",
                   "GRAINLAB_CONVERT": "no", "GRAINLAB_BUFFER_EVENTS": buffer,
                   "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
                   "GRAINLAB_OUTPUT": str(out)}
            r = subprocess.run([example(FIB[0]), FIB[1]], env=env, capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0 and r.stdout == FIB_OUT, r.stderr
            counts[buffer] = spool_events(spool_of(out))
        return counts[buffer]
    return events


def spool_events(spool):
    """Rows in a complete spool's blocks (grainlab_spool.h, version 2), which
    its end record's recorded_events must equal."""
    data = spool.read_bytes()
    header_bytes = struct.unpack_from("<12xI", data)[0]
    off, rows, recorded = header_bytes, 0, None
    while off < len(data):
        magic, a, b, _ = struct.unpack_from("<4I", data, off)
        if magic == 0x4B4C4247:  # block: thread, nevents, ...; payload_bytes at 40
            rows += b
            off += 48 + struct.unpack_from("<Q", data, off + 40)[0]
        else:  # trailer: nkv, kv_bytes
            assert magic == 0x52544C47
            kv, at = data[off + 32:off + 32 + b], 0
            while at < len(kv):
                klen, vlen = struct.unpack_from("<2I", kv, at)
                if kv[at + 8:at + 8 + klen] == b"grainlab.recorded_events":
                    recorded = int(kv[at + 8 + klen:at + 8 + klen + vlen])
                at += 8 + klen + vlen
            off += 32 + b
    assert recorded == rows
    return rows


@pytest.mark.parametrize("encoding", ["compact", "raw"])
def test_trace_of_what_fit_is_in_place_with_exact_counts(small_disk, example, full_run_events,
                                                         encoding):
    """Exact counts whatever the blocks' encoding: the reservation counts the
    bytes actually appended (compact blocks are ~10x smaller than raw)."""
    out = small_disk / "t.parquet"
    r = grainlab("record", "-o", out, "--", example(FIB[0]), FIB[1],
                 env={"OMP_NUM_THREADS": "1", "GRAINLAB_SPOOL_ENCODING": encoding})
    assert r.stdout == FIB_OUT
    assert r.returncode == 0, r.stderr               # the program's own status
    lines = said(r)
    assert len(lines) == 1 and "disk full" in lines[0], r.stderr
    t = gl.load(out)
    assert not t.complete and t.meta["end_reason"] == "disk full"
    kept, lost = len(t.events), int(t.meta["dropped_events"])
    assert int(t.meta["recorded_events"]) == kept
    assert kept > 0 and lost > 0
    assert kept + lost == full_run_events(str(65536))
    assert not spool_of(out).exists() and leftovers(small_disk) == []
    # and the partial trace analyzes
    a = gl.analyze(t)
    assert len(a.grains) > 0 and a.report()["span_ns"] > 0


@pytest.mark.parametrize("small_disk", ["1m"], indirect=True)
def test_no_room_to_convert_says_where_and_how(small_disk, example, tmp_path, full_run_events):
    out = small_disk / "t.parquet"
    # Tiny blocks: every one becomes a row group of the trace (~2.5 KiB of
    # Parquet for 65 rows), so the trace is ~5x its spool, far more than the
    # room the collector keeps for it (3/4 of the spool): it cannot fit. (A
    # 1 MiB disk: the converter soon fills the room it has.)
    r = grainlab("record", "--buffer-events", 64, "-o", out, "--", example(FIB[0]), FIB[1],
                 env={"OMP_NUM_THREADS": "1"})
    assert r.stdout == FIB_OUT
    lines = said(r)
    assert len(lines) == 1, r.stderr
    spool = spool_of(out)
    assert str(spool) in lines[0] and f"grainlab convert {spool}" in lines[0]
    assert "disk is full" in lines[0] and "Traceback" not in r.stderr
    assert r.returncode != 0 and not out.exists()
    assert spool.exists() and leftovers(small_disk) == []
    # the instruction works
    elsewhere = tmp_path / "t.parquet"
    c = grainlab("convert", spool, "-o", elsewhere)
    assert c.returncode == 0, c.stderr
    t = gl.load(elsewhere)
    assert t.meta["end_reason"] == "disk full"
    kept, lost = len(t.events), int(t.meta["dropped_events"])
    assert int(t.meta["recorded_events"]) == kept
    assert kept + lost == full_run_events("64")


def test_program_run_with_the_collector_alone_is_unaffected(small_disk, example):
    out = small_disk / "t.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_CONVERT": "wait",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
           "GRAINLAB_OUTPUT": str(out)}
    r = subprocess.run([example(FIB[0]), FIB[1]], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == FIB_OUT
    assert "is full: recording stopped" in r.stderr
    assert gl.load(out).meta["end_reason"] == "disk full"


def test_a_disk_too_full_to_start_leaves_nothing(tmp_path, example):
    where = tmp_path / "tiny"
    where.mkdir()
    # 128 KiB: less than the collector's reserve for the end record
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()})")
    try:
        out = where / "t.parquet"
        env = {**os.environ, "OMP_NUM_THREADS": "2",
               "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
               "GRAINLAB_OUTPUT": str(out)}
        c = subprocess.run([example("fib"), "10"], env=env, capture_output=True, text=True,
                           timeout=60)
        assert c.returncode == 0 and c.stdout == "fib(10) = 55\n"
        assert c.stderr.count("\n") == 1 and "No space left on device" in c.stderr, c.stderr
        assert list(where.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
