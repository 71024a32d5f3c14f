"""Compact spool blocks (docs/trace-format.md, "Compact blocks"; issue 7
item 4): the collector encodes each full buffer off the hot path, the
converter decodes it, and nothing a raw block would have said is lost.

The comparisons are exact and made on ONE run's events:

- a run recorded raw (GRAINLAB_SPOOL_ENCODING=raw: the collector writes its
  buffers' bytes as they are, the ground truth) is re-encoded block by block
  with the collector's own encoder (build/tests/spool_codec_test recode) and
  both spools are converted: the Parquet tables are equal, every column and
  every counter, row for row;
- a spool the collector wrote compactly is decoded here, in Python, from the
  documented byte layout alone, and equals what grainlab-convert made of it.

Also: edge values and a decoder fuzzer in C (under AddressSanitizer when gcc
has it), damaged compact blocks through grainlab-convert, version-1 spools,
zero-length blocks, raw blocks from a signal handler beside compact ones,
2^26-event buffers, and the bytes per event on fib with a task per call
(a bound the raw format cannot meet: bytes, not time)."""
from __future__ import annotations

import os
import random
import shutil
import signal
import struct
import subprocess
import time

import pyarrow.parquet as pq
import pytest

import grainlab
from grainlab import _paths
from grainlab.trace.spool import spool_of
from conftest import REPO, peak_rss_prefix

pytestmark = pytest.mark.native

HEADER = struct.Struct("<8sIIIIIIQQ")   # gl_spool_header
BLOCK = struct.Struct("<IIIIQQIIQ")     # gl_spool_block, version 2 (48 bytes)
BLOCK_V1 = struct.Struct("<IIIIQQ")     # version 1 (32 bytes); the trailer's shape
EVENT = struct.Struct("<QQQQQQIHBB")    # gl_event_t
BLOCK_MAGIC, TRAILER_MAGIC = 0x4B4C4247, 0x52544C47
RAW, COMPACT = 0, 1
M64 = (1 << 64) - 1
INT64_MIN = -(1 << 63)
COUNTERS = "task-clock,context-switches"
COLUMNS = ["tsc", "task", "other", "codeptr", "value", "count", "kind", "cpu", "event", "flags"]


def codec_test() -> str:
    path = _paths.build_dir() / "tests" / "spool_codec_test"
    if not path.is_file():
        pytest.fail(f"{path} not built (run `make build`)")
    return str(path)


def converter() -> str:
    return str(_paths.converter())


def spool_run(example, out, *args, threads=2, buffer=4096, env=None, check=True, wrap=()):
    """Run fib under the collector with GRAINLAB_CONVERT=no: the spool stays.
    wrap: a command that runs it (e.g. one that measures its peak memory)."""
    full = {**os.environ, "OMP_NUM_THREADS": str(threads), "GRAINLAB_QUIET": "1",
            "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
            "GRAINLAB_OUTPUT": str(out), "GRAINLAB_BUFFER_EVENTS": str(buffer),
            "GRAINLAB_CONVERT": "no", **(env or {})}
    result = subprocess.run([*wrap, example("fib"), *map(str, args)], env=full,
                            capture_output=True,
                            text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
        assert spool_of(out).exists()
    return spool_of(out), result


def records(data: bytes):
    """(offset, kind, fields) of every record of a spool: kind is "header",
    "block" (fields: thread, n, nc, tsc, mono, encoding, check, payload_bytes)
    or "trailer"."""
    _, version, header_bytes, *_ = HEADER.unpack_from(data)
    assert version == 2
    out, off = [("header", 0, header_bytes)], header_bytes
    while off < len(data):
        if data[off:off + 8] == b"GLSPOOL\n":
            size = HEADER.unpack_from(data, off)[2]
            out.append(("header", off, size))
        else:
            magic, a, b, *_ = BLOCK_V1.unpack_from(data, off)
            if magic == BLOCK_MAGIC:
                f = BLOCK.unpack_from(data, off)
                size = BLOCK.size + f[8]
                out.append(("block", off, size))
            else:
                assert magic == TRAILER_MAGIC
                size = BLOCK_V1.size + b
                out.append(("trailer", off, size))
        off += size
    assert off == len(data)
    return out


def block_fields(data, off):
    return BLOCK.unpack_from(data, off)


# ---------------------------------------------------------------- reference

def check_value(header: bytes, payload: bytes) -> int:
    """The documented block check, in Python (the header's check taken as 0)."""
    header = header[:36] + b"\0\0\0\0" + header[40:48]
    h = 0x6A09E667F3BCC908

    def mix(h, w):
        h = ((h ^ w) * 0x9E3779B97F4A7C15) & M64
        return h ^ (h >> 32)
    for i in range(0, 48, 8):
        h = mix(h, int.from_bytes(header[i:i + 8], "little"))
    for i in range(0, len(payload), 8):
        h = mix(h, int.from_bytes(payload[i:i + 8].ljust(8, b"\0"), "little"))
    h = mix(h, len(payload))
    return (h ^ (h >> 32)) & 0xFFFFFFFF


def with_check(fields: list, payload: bytes) -> bytes:
    """A block header for `payload`, its check computed here."""
    fields = list(fields)
    fields[7] = 0
    fields[7] = check_value(BLOCK.pack(*fields), payload)
    return BLOCK.pack(*fields)


def decode_compact(payload: bytes, n: int, nc: int):
    """The documented compact decoder, written from docs/trace-format.md alone:
    returns rows as dicts (COLUMNS) and counters (None = null)."""
    at = 0

    def byte():
        nonlocal at
        b = payload[at]
        at += 1
        return b

    def varint():
        v, shift = 0, 0
        while True:
            b = byte()
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                assert v <= M64
                return v
            shift += 7
            assert shift < 70

    def unzz(z):
        return ((z >> 1) ^ -(z & 1)) & M64

    syms = []  # [key, predictions] ; slot 127 shared
    shared = None
    prev_tsc, prev_cpu, prev_ctr = 0, 0, [0] * nc
    rows, counters = [], []
    for _ in range(n):
        head = byte()
        s = head & 0x7F
        if s == 127:
            key = (byte(), byte(), varint(), varint())  # event, flags, kind, codeptr
            sym = {"key": key, "task": 0, "other": 0, "value": 0, "count": 0, "nulls": 0}
            if len(syms) < 127:
                syms.append(sym)
            else:
                shared = sym
        else:
            assert s < len(syms)
            sym = syms[s]
        x = byte() if head & 0x80 else 0
        assert x & 0xF0 == 0
        event, flags, kind, codeptr = sym["key"]
        tsc = (prev_tsc + unzz(varint())) & M64
        task = (sym["task"] + unzz(varint())) & M64
        other = (sym["other"] + unzz(varint())) & M64
        value = (sym["value"] + unzz(varint())) & M64 if x & 1 else sym["value"]
        count = (sym["count"] + unzz(varint())) & M64 if x & 2 else sym["count"]
        cpu = varint() if x & 4 else prev_cpu
        nulls = byte() if x & 8 else sym["nulls"]
        assert cpu <= 0xFFFF and nulls >> nc == 0
        ctr = []
        for k in range(nc):
            if nulls >> k & 1:
                ctr.append(None)
            else:
                prev_ctr[k] = (prev_ctr[k] + unzz(varint())) & M64
                signed = prev_ctr[k] - (1 << 64) if prev_ctr[k] >> 63 else prev_ctr[k]
                ctr.append(signed)
        sym.update(task=task, other=other, value=value, count=count, nulls=nulls)
        prev_tsc, prev_cpu = tsc, cpu
        rows.append(dict(tsc=tsc, task=task, other=other, codeptr=codeptr, value=value,
                         count=count, kind=kind, cpu=cpu, event=event, flags=flags))
        counters.append(ctr)
    assert at == len(payload)
    del shared
    return rows, counters


def decode_raw(payload: bytes, n: int, nc: int):
    rows = [dict(zip(COLUMNS, EVENT.unpack_from(payload, i * EVENT.size))) for i in range(n)]
    base = n * EVENT.size
    counters = []
    for i in range(n):
        vals = struct.unpack_from(f"<{nc}q", payload, base + 8 * nc * i)
        counters.append([None if v == INT64_MIN else v for v in vals])
    return rows, counters


def spool_rows(spool):
    """Every row of a spool, decoded here: (thread, row dict, counters)."""
    data = spool.read_bytes()
    nc = HEADER.unpack_from(data)[4]
    out = []
    for kind, off, _size in records(data):
        if kind != "block":
            continue
        f = block_fields(data, off)
        thread, n, encoding, check, payload_bytes = f[1], f[2], f[6], f[7], f[8]
        payload = data[off + BLOCK.size:off + BLOCK.size + payload_bytes]
        if encoding == COMPACT:
            assert check == check_value(data[off:off + BLOCK.size], payload)
            rows, ctr = decode_compact(payload, n, nc)
        else:
            rows, ctr = decode_raw(payload, n, nc)
        out.extend((thread, r, c) for r, c in zip(rows, ctr))
    return out


def convert(spool, out):
    r = subprocess.run([converter(), str(spool), str(out)], capture_output=True, text=True,
                       timeout=120)        # a hang detector, generous for a busy machine
    return r


def encodings(spool):
    data = spool.read_bytes()
    return [block_fields(data, off)[6] for kind, off, _ in records(data) if kind == "block"]


# ---------------------------------------------------------------- C level

def test_codec_edge_values_round_trip():
    """Extreme values (0, 2^63, max uint64 ids, INT64_MIN+1 and INT64_MAX
    counters, negative counter deltas), tsc going backwards and wrapping,
    zero rows, > 127 symbols, every counter count; an encoder given too small
    a buffer says so and never writes past it."""
    r = subprocess.run([codec_test(), "edge"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "round trips exact" in r.stdout


def test_decoder_fuzz_never_crashes():
    r = subprocess.run([codec_test(), "fuzz", "100000", "7"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refused" in r.stdout


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_decoder_fuzz_under_address_sanitizer(tmp_path):
    """The same fuzzer, the codec built with gcc's AddressSanitizer and
    UndefinedBehaviorSanitizer: any read or write out of bounds fails."""
    src = REPO / "collector"
    exe = tmp_path / "codec_asan"
    build = subprocess.run(
        ["gcc", "-std=gnu11", "-O1", "-g", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", f"-I{src / 'include'}", f"-I{src / 'src'}",
         str(src / "tests" / "spool_codec_test.c"), str(src / "src" / "spool_codec.c"),
         "-o", str(exe)], capture_output=True, text=True, timeout=120)
    if build.returncode != 0:
        pytest.skip(f"gcc cannot build with the sanitizers here: {build.stderr[-200:]}")
    for cmd in (["edge"], ["fuzz", "30000", "11"]):
        r = subprocess.run([str(exe), *cmd], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]


# ---------------------------------------------------------------- one run, both ways

@pytest.fixture(scope="module")
def raw_run(tmp_path_factory, example):
    """fib 18 on 2 threads with two counters, every block raw: the rows as
    the collector held them in memory."""
    d = tmp_path_factory.mktemp("rawrun")
    spool, _ = spool_run(example, d / "t.parquet", 18, buffer=1024,
                         env={"GRAINLAB_SPOOL_ENCODING": "raw", "GRAINLAB_COUNTERS": COUNTERS})
    assert set(encodings(spool)) == {RAW}
    return spool


def test_one_runs_events_decode_identically_raw_and_compact(raw_run, tmp_path):
    compact = tmp_path / "c.parquet.spool"
    r = subprocess.run([codec_test(), "recode", str(raw_run), str(compact), "compact"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert set(encodings(compact)) == {COMPACT}
    assert compact.stat().st_size < raw_run.stat().st_size / 5
    raw_copy = tmp_path / "r.parquet.spool"
    shutil.copy(raw_run, raw_copy)
    for spool in (raw_copy, compact):
        c = convert(spool, spool.with_suffix(""))
        assert c.returncode == 0, c.stderr
    a = pq.read_table(tmp_path / "r.parquet")
    b = pq.read_table(tmp_path / "c.parquet")
    assert a.schema == b.schema
    assert "counter:task-clock" in a.column_names and "counter:context-switches" in a.column_names
    assert a.num_rows > 10000
    for name in a.column_names:  # column by column, so a failure names the column
        assert a.column(name).equals(b.column(name)), name
    # the counters really vary: negative and positive deltas, nulls
    tc = a.column("counter:task-clock").to_pylist()
    assert tc.count(None) > 0 and len(set(tc)) > 1000
    fa, fb = pq.ParquetFile(tmp_path / "r.parquet"), pq.ParquetFile(tmp_path / "c.parquet")
    assert [fa.metadata.row_group(i).num_rows for i in range(fa.num_row_groups)] == \
        [fb.metadata.row_group(i).num_rows for i in range(fb.num_row_groups)]
    assert fa.metadata.metadata == fb.metadata.metadata


def test_compact_back_to_raw_is_byte_identical(raw_run, tmp_path):
    """raw -> compact -> raw gives the very bytes the collector wrote."""
    compact, back = tmp_path / "c.spool", tmp_path / "r.spool"
    for src, dst, how in ((raw_run, compact, "compact"), (compact, back, "raw")):
        r = subprocess.run([codec_test(), "recode", str(src), str(dst), how],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    assert back.read_bytes() == raw_run.read_bytes()


def test_the_documented_layout_decodes_what_the_collector_wrote(example, tmp_path):
    """A Python decoder written from docs/trace-format.md alone reads a spool
    the collector encoded (two threads, counters) exactly as grainlab-convert."""
    spool, _ = spool_run(example, tmp_path / "t.parquet", 16, buffer=512,
                         env={"GRAINLAB_COUNTERS": COUNTERS})
    assert COMPACT in encodings(spool)
    ours = spool_rows(spool)
    c = convert(spool, tmp_path / "t.parquet")
    assert c.returncode == 0, c.stderr
    t = pq.read_table(tmp_path / "t.parquet").to_pydict()
    assert len(ours) == len(t["event"]) > 3000
    for col in COLUMNS:
        assert [r[col] for _, r, _ in ours] == t[col], col
    assert [th for th, _, _ in ours] == t["thread"]
    for k, name in enumerate(COUNTERS.split(",")):
        assert [c[k] for _, _, c in ours] == t[f"counter:{name}"], name


def test_raw_and_compact_recordings_hold_the_same_events(example, tmp_path):
    """The same deterministic run (1 thread) recorded both ways: every
    column but the timing ones (tsc, cpu) and code addresses (ASLR) equal."""
    tables = {}
    for enc in ("raw", "compact"):
        spool, _ = spool_run(example, tmp_path / f"{enc}.parquet", 15, threads=1, buffer=256,
                             env={"GRAINLAB_SPOOL_ENCODING": enc})
        assert set(encodings(spool)) == {RAW if enc == "raw" else COMPACT}
        c = convert(spool, tmp_path / f"{enc}.parquet")
        assert c.returncode == 0, c.stderr
        tables[enc] = pq.read_table(tmp_path / f"{enc}.parquet")
    a, b = tables["raw"], tables["compact"]
    assert a.num_rows == b.num_rows > 4000
    for name in ("event", "thread", "task", "other", "value", "count", "kind", "flags"):
        assert a.column(name).equals(b.column(name)), name


# ---------------------------------------------------------------- bytes

@pytest.mark.parametrize("threads", [1, 2])
def test_bytes_per_event_on_fib_a_task_per_call(example, tmp_path, threads):
    """The compact spool of fib(22), a task per call, holds under 8 bytes per
    event (measured ~5); a raw row alone is 56."""
    sizes = {}
    for enc in ("raw", "compact"):
        spool, _ = spool_run(example, tmp_path / f"{enc}.parquet", 22, threads=threads,
                             buffer=65536, env={"GRAINLAB_SPOOL_ENCODING": enc})
        data = spool.read_bytes()
        events = sum(block_fields(data, off)[2] for kind, off, _ in records(data)
                     if kind == "block")
        assert events > 200000
        sizes[enc] = len(data) / events
    assert sizes["raw"] > 56
    assert sizes["compact"] < 8, sizes


# ---------------------------------------------------------------- the converter

def test_version_1_spools_still_convert(raw_run, tmp_path):
    """A version-1 spool (32-byte block headers, rows always raw) converts to
    the same trace as the version-2 spool it is rewritten from."""
    data = raw_run.read_bytes()
    old = bytearray()
    for kind, off, size in records(data):
        rec = data[off:off + size]
        if kind == "header":
            f = list(HEADER.unpack_from(rec))
            f[1] = 1
            rec = HEADER.pack(*f) + rec[HEADER.size:]
        elif kind == "block":
            rec = rec[:BLOCK_V1.size] + rec[BLOCK.size:]
        old += rec
    v1, v2 = tmp_path / "v1.parquet.spool", tmp_path / "v2.parquet.spool"
    v1.write_bytes(bytes(old))
    shutil.copy(raw_run, v2)
    for spool in (v1, v2):
        c = convert(spool, spool.with_suffix(""))
        assert c.returncode == 0, c.stderr
    assert pq.read_table(tmp_path / "v1.parquet").equals(pq.read_table(tmp_path / "v2.parquet"))


def test_unknown_spool_version_is_one_line(raw_run, tmp_path):
    data = bytearray(raw_run.read_bytes())
    struct.pack_into("<I", data, 8, 3)
    bad = tmp_path / "v3.parquet.spool"
    bad.write_bytes(bytes(data))
    c = convert(bad, tmp_path / "v3.parquet")
    assert c.returncode == 1 and c.stderr.count("\n") == 1, c.stderr
    assert "spool format version 3" in c.stderr and bad.exists()


def test_zero_length_compact_blocks_are_read(example, tmp_path):
    spool, _ = spool_run(example, tmp_path / "t.parquet", 12)
    data = spool.read_bytes()
    blocks = [off for kind, off, _ in records(data) if kind == "block"]
    f = list(block_fields(data, blocks[0]))
    f[2], f[6], f[8] = 0, COMPACT, 0   # no rows, compact, empty payload
    empty = with_check(f, b"")
    at = blocks[len(blocks) // 2]
    z = tmp_path / "z.parquet.spool"
    z.write_bytes(data[:at] + empty + empty + data[at:])
    for s in (spool, z):
        c = convert(s, s.with_suffix(""))
        assert c.returncode == 0, c.stderr
    a, b = grainlab.load(tmp_path / "t.parquet"), grainlab.load(tmp_path / "z.parquet")
    assert b.complete and a.events.equals(b.events)
    assert list(a.row_group_sizes) == list(b.row_group_sizes)


@pytest.fixture(scope="module")
def small_compact_spool(tmp_path_factory, example):
    d = tmp_path_factory.mktemp("small")
    spool, _ = spool_run(example, d / "t.parquet", 15, buffer=256,
                         env={"GRAINLAB_COUNTERS": COUNTERS})
    data = spool.read_bytes()
    blocks = [(off, size) for kind, off, size in records(data) if kind == "block"]
    assert len(blocks) > 10 and set(encodings(spool)) == {COMPACT}
    c = convert(spool, d / "t.parquet")
    assert c.returncode == 0, c.stderr
    return data, blocks, pq.ParquetFile(d / "t.parquet").metadata.num_rows


def convert_damaged(tmp_path, name, data):
    spool = tmp_path / f"{name}.parquet.spool"
    spool.write_bytes(data)
    c = convert(spool, tmp_path / f"{name}.parquet")     # a hang fails by convert's timeout
    assert c.returncode in (0, 1), (c.returncode, c.stderr)  # never a crash
    assert "Traceback" not in c.stderr
    return c


def test_a_damaged_compact_block_is_left_out_and_counted(small_compact_spool, tmp_path):
    data, blocks, rows = small_compact_spool
    off, size = blocks[len(blocks) // 2]
    n = BLOCK.unpack_from(data, off)[2]
    bad = bytearray(data)
    bad[off + BLOCK.size + size // 3] ^= 0x10      # one bit in the payload
    c = convert_damaged(tmp_path, "flip", bytes(bad))
    assert c.returncode == 0, c.stderr
    t = grainlab.load(tmp_path / "flip.parquet")
    assert not t.complete
    assert len(t.events) == rows - n                # the blocks after it are kept
    assert int(t.meta["lost_events"]) == n
    assert "1 damaged block left out" in t.meta["spool_damage"]
    assert "fails its check" in t.meta["spool_damage"]


def test_random_damage_to_compact_blocks(small_compact_spool, tmp_path):
    """Random byte flips in compact blocks (headers included) and truncations
    anywhere after the file header, through grainlab-convert: each finishes in
    seconds with a trace marked incomplete (fewer rows) or one line."""
    data, blocks, rows = small_compact_spool
    rng = random.Random(20240611)
    header_end = blocks[0][0]
    for case in range(30):
        bad = bytearray(data)
        if case % 3 == 2:
            cut = rng.randrange(header_end, len(data))
            bad = bad[:cut]
        else:
            for _ in range(1 + case % 4):
                off, size = rng.choice(blocks)
                bad[off + rng.randrange(size)] ^= 1 << rng.randrange(8)
        c = convert_damaged(tmp_path, f"d{case}", bytes(bad))
        if c.returncode == 1:
            assert c.stderr.count("\n") == 1, c.stderr
            continue
        t = pq.ParquetFile(tmp_path / f"d{case}.parquet")
        meta = {k.decode(): v.decode() for k, v in t.metadata.metadata.items()}
        assert meta["grainlab.complete"] == "false", (case, meta.get("grainlab.spool_damage"))
        assert t.metadata.num_rows <= rows


# ---------------------------------------------------------------- the collector

def test_signal_handler_blocks_are_raw_beside_compact_ones(example, tmp_path):
    """SIGTERM mid-run: the writer thread's blocks are compact, the handler
    writes what it reaches raw (no allocation or encoding in a handler); the
    converter reads both into one trace."""
    out = tmp_path / "t.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
           "GRAINLAB_OUTPUT": str(out), "GRAINLAB_CONVERT": "no",
           "GRAINLAB_BUFFER_EVENTS": "4096"}
    proc = subprocess.Popen([example("fib"), "40"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    spool = spool_of(out)
    deadline = time.monotonic() + 120      # a hang detector: the run is well under way
    while time.monotonic() < deadline and (not spool.exists() or spool.stat().st_size < 200000):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    kinds = encodings(spool)
    assert COMPACT in kinds and RAW in kinds, kinds
    data = spool.read_bytes()
    events = sum(block_fields(data, off)[2] for kind, off, _ in records(data) if kind == "block")
    c = convert(spool, out)
    assert c.returncode == 0, c.stderr
    t = grainlab.load(out)
    assert t.meta["end_reason"] == "signal:SIGTERM" and not t.complete
    assert len(t.events) == events == int(t.meta["recorded_events"])


def test_inline_writes_are_compact_too(example, tmp_path):
    """GRAINLAB_WRITER=0: each thread encodes its own full buffers."""
    spool, _ = spool_run(example, tmp_path / "t.parquet", 18, buffer=1024,
                         env={"GRAINLAB_WRITER": "0"})
    kinds = encodings(spool)
    assert len(kinds) > 20 and set(kinds) == {COMPACT}
    c = convert(spool, tmp_path / "t.parquet")
    assert c.returncode == 0, c.stderr
    assert grainlab.load(tmp_path / "t.parquet").complete


def test_a_bad_encoding_name_is_one_line_and_compact(example, tmp_path):
    spool, r = spool_run(example, tmp_path / "t.parquet", 12, env={"GRAINLAB_SPOOL_ENCODING":
                                                                   "zip"})
    assert r.stderr.splitlines() == [
        "grainlab: GRAINLAB_SPOOL_ENCODING=zip is not raw or compact; writing compact blocks"]
    assert set(encodings(spool)) == {COMPACT}


def test_the_largest_buffer_encodes(example, tmp_path):
    """GRAINLAB_BUFFER_EVENTS=2^26: the buffers and the encoder's scratch area
    are reserved for 2^26 + 1 rows (address space, touched only as used: the
    pages the collector touches ahead are capped, so 2 threads x 2 buffers of
    3.7 GiB stay ~40 MiB resident)."""
    peak = tmp_path / "peak"
    spool, _ = spool_run(example, tmp_path / "t.parquet", 20, buffer=1 << 26,
                         wrap=peak_rss_prefix(peak))
    assert int(peak.read_text()) < 256 * 2**20
    assert set(encodings(spool)) == {COMPACT}
    c = convert(spool, tmp_path / "t.parquet")
    assert c.returncode == 0, c.stderr
    t = grainlab.load(tmp_path / "t.parquet")
    assert t.complete and t.summary()["tasks"] == 2 * 10946 - 2
