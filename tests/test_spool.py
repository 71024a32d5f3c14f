"""The spool (docs/trace-format.md, "The spool"): what the collector appends
during a run and grainlab-convert turns into the Parquet trace. Real runs of
the fib example through libomp; the spool's blocks are parsed here from the
documented byte layout (collector/include/grainlab_spool.h), independently of
the converter."""
from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys

import pytest

import grainlab
from grainlab.trace.spool import spool_of
from conftest import grainlab as run_cli

HEADER = struct.Struct("<8sIIIIIIQQ")  # gl_spool_header
BLOCK = struct.Struct("<IIIIQQIIQ")    # gl_spool_block (version 2)
TRAILER = struct.Struct("<IIIIQQ")     # gl_spool_trailer
BLOCK_MAGIC, TRAILER_MAGIC = 0x4B4C4247, 0x52544C47
EVENT_BYTES = 56
RAW, COMPACT = 0, 1
GNU_TIME = "/usr/bin/time"


def spool_run(build, example, out, *args, buffer=4096, env=None, timer=None):
    """Run fib under the collector with GRAINLAB_CONVERT=no: the spool stays."""
    full = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_QUIET": "1",
            "OMP_TOOL_LIBRARIES": str(build / "lib" / "libgraincollect.so"),
            "GRAINLAB_OUTPUT": str(out), "GRAINLAB_BUFFER_EVENTS": str(buffer),
            "GRAINLAB_CONVERT": "no", **(env or {})}
    argv = [example("fib"), *map(str, args)]
    if timer:
        argv = [GNU_TIME, "-f", "%M", "-o", str(timer), *argv]
    result = subprocess.run(argv, env=full, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert not out.exists() and spool_of(out).exists()
    return spool_of(out)


def blocks_of(path, encodings=None):
    """(offset, magic, thread, nevents, size) of every record after the header;
    `encodings`, a list, receives each block's encoding."""
    data = path.read_bytes()
    magic, version, header_bytes, event_bytes, ncounters, *_ = HEADER.unpack_from(data)
    assert magic == b"GLSPOOL\n" and version == 2 and event_bytes == EVENT_BYTES
    out, off = [], header_bytes
    while off < len(data):
        m, a, b, c, *_ = TRAILER.unpack_from(data, off)
        if m == BLOCK_MAGIC:
            m, thread, n, nc, _, _, encoding, _, payload = BLOCK.unpack_from(data, off)
            assert encoding in (RAW, COMPACT)
            if encoding == RAW:
                assert payload == n * (EVENT_BYTES + 8 * nc)
            if encodings is not None:
                encodings.append(encoding)
            size = BLOCK.size + payload
            out.append((off, m, thread, n, size))
        else:
            assert m == TRAILER_MAGIC
            size = TRAILER.size + b  # trailer: nkv, kv_bytes
            out.append((off, m, None, None, size))
        off += size
    assert off == len(data)
    return out


def convert(spool, out):
    return run_cli("convert", spool, "-o", out)


def test_spool_layout_and_conversion(tmp_path, build, example):
    spool = spool_run(build, example, tmp_path / "t.parquet", 20)
    records = blocks_of(spool)
    blocks = [r for r in records if r[1] == BLOCK_MAGIC]
    assert [r[1] for r in records].count(TRAILER_MAGIC) == 1
    # Full buffers are 4096 events + the FLUSH_BEGIN row.
    assert any(r[3] == 4097 for r in blocks)
    result = convert(spool, tmp_path / "t.parquet")
    assert result.returncode == 0, result.stderr
    assert not spool.exists()
    t = grainlab.load(tmp_path / "t.parquet")
    assert t.complete and t.meta["end_reason"] == "finalize"
    assert len(t.events) == sum(r[3] for r in blocks)
    assert list(t.row_group_sizes) == [r[3] for r in blocks if r[3] > 0]
    assert int(t.meta["flushes"]) == len(t.row_group_sizes)


def test_truncated_spool_converts_with_lost_events_counted(tmp_path, build, example):
    spool = spool_run(build, example, tmp_path / "t.parquet", 20)
    blocks = [r for r in blocks_of(spool) if r[1] == BLOCK_MAGIC]
    assert len(blocks) >= 4
    victim = blocks[len(blocks) // 2]
    off, _, _, lost, size = victim
    cut = tmp_path / "cut.parquet.spool"
    with open(spool, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read(off + size // 2))  # mid-block
    result = convert(cut, tmp_path / "cut.parquet")
    assert result.returncode == 0, result.stderr
    t = grainlab.load(tmp_path / "cut.parquet")
    kept = sum(r[3] for r in blocks if r[0] < off)
    assert len(t.events) == kept
    assert int(t.meta["lost_events"]) == lost
    assert int(t.meta["dropped_events"]) == lost
    assert "cut short" in t.meta["spool_damage"]
    assert t.complete is False and t.meta["end_reason"] == "killed: no shutdown record"
    # The intact spool, converted too, has exactly the lost rows more.
    whole = grainlab.load(tmp_path / "t.parquet")  # load converts the leftover spool
    assert len(whole.events) == kept + lost + sum(r[3] for r in blocks if r[0] > off)


@pytest.mark.native
def test_not_a_spool_is_one_line_and_kept(tmp_path):
    bad = tmp_path / "x.parquet.spool"
    bad.write_bytes(b"hello, not a spool at all")
    result = convert(bad, tmp_path / "x.parquet")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a grainlab spool" in lines[0], result.stderr
    assert bad.exists() and not (tmp_path / "x.parquet").exists()
    assert not (tmp_path / "x.parquet.tmp").exists()


def test_load_waits_for_a_locked_spool(tmp_path, build, example):
    """A locked spool means "still being written": load waits (saying so)
    and then converts the spool if nobody else did."""
    out = tmp_path / "t.parquet"
    spool = spool_run(build, example, out, 15)
    fd = os.open(spool, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "grainlab.cli", "info", "--json", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # it waits, and says so, for as long as the lock is held (however
        # slowly it starts on a loaded machine)
        ready, _, _ = select.select([proc.stderr], [], [], 120)   # a hang detector
        assert ready, "no waiting message within 120 s"
        said = proc.stderr.readline()
        assert proc.poll() is None
    finally:
        os.close(fd)  # releases the lock
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert (said + stderr).strip().splitlines() == [
        f"grainlab: waiting for the collector to finish writing {out}"]
    assert '"complete": true' in stdout
    assert out.exists() and not spool.exists()


def test_memory_is_bounded_by_the_buffer_not_the_run(tmp_path, build, example):
    """Peak RSS of the application (and of the converter) with the same buffer
    setting: a run with ~7x the events costs no more memory (compared, not
    timed)."""
    peaks, conv_peaks, sizes = [], [], []
    for n in (22, 26):
        out = tmp_path / f"f{n}.parquet"
        rss = tmp_path / f"rss{n}"
        spool = spool_run(build, example, out, n, timer=rss)
        peaks.append(int(rss.read_text().split()[-1]))
        sizes.append(spool.stat().st_size)
        crss = tmp_path / f"crss{n}"
        subprocess.run([GNU_TIME, "-f", "%M", "-o", str(crss),
                        str(build / "lib" / "grainlab-convert"), str(spool), str(out)],
                       check=True, timeout=120)
        conv_peaks.append(int(crss.read_text().split()[-1]))
    assert sizes[1] > 6 * sizes[0]  # the long run really has many more events
    assert peaks[1] - peaks[0] < 2048, peaks  # KiB
    # The converter holds one block; the Parquet footer it builds grows with
    # the number of row groups (here ~100 -> ~400), a few KiB each.
    assert conv_peaks[1] - conv_peaks[0] < 12 * 1024, conv_peaks


NESTED = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int s = 0;
#pragma omp parallel reduction(+ : s)
  s += 1;
  printf("outer %d\n", s);
  fflush(stdout);
  return system(argv[1]);
}
"""


def test_traced_program_running_a_traced_program_does_not_hang(tmp_path, build, example):
    """The inner program finds the spool locked by its own ancestor: waiting
    would never end, so it runs untraced with one line; the outer trace is
    whole."""
    src, exe, out = tmp_path / "nested.c", tmp_path / "nested", tmp_path / "t.parquet"
    src.write_text(NESTED)
    subprocess.run(["clang-19", "-fopenmp", str(src), "-o", str(exe)], check=True, timeout=60)
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(build / "lib" / "libgraincollect.so"),
           "GRAINLAB_OUTPUT": str(out)}
    result = subprocess.run([str(exe), f"{example('fib')} 11"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["outer 2", "fib(11) = 89"]
    assert result.stderr.splitlines() == [
        f"grainlab: cannot write trace to {out}: process {result.stderr.split('process ')[1].split(',')[0]}"
        ", which runs this one, is recording to it"]
    t = grainlab.load(out)
    assert t.complete and t.summary()["tasks"] == 0 and t.summary()["parallel_regions"] == 1
