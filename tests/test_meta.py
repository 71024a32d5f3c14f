"""collector/src/meta.c — the run context stored in the trace's metadata —
through collector/tests/meta_dump (built by `make`), checked against /proc,
/sys and the ELF file read independently here."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from grainlab import _paths

pytestmark = pytest.mark.native  # the whole module runs native code

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")


def meta_dump_path() -> Path:
    path = _paths.build_dir() / "tests" / "meta_dump"
    if not path.is_file():
        pytest.fail(f"native test program {path} not built (run `make build`)")
    return path


def dump(*args: bytes | str) -> tuple[list, dict, list]:
    out = subprocess.run([str(meta_dump_path()), *args], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode("utf-8").splitlines()
    assert len(lines) == 3
    return tuple(json.loads(line) for line in lines)


def cpulist(text: str) -> list[int]:
    ids: list[int] = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def test_command_is_argv_with_json_escaping():
    args = ['a "quoted" arg', "back\\slash", "new\nline\ttab", "ünï ✓", "", "{}[],"]
    command, _, _ = dump(*args)
    assert command == [str(meta_dump_path()), *args]


def test_command_bytes_that_are_not_utf8_become_replacement_chars():
    command, _, _ = dump(b"ok\xff\xfeend", b"\xc3")
    assert command[1:] == ["ok\ufffd\ufffdend", "\ufffd"]


def test_topology_matches_sysfs():
    _, topo, _ = dump()
    present = cpulist((SYS_CPU / "present").read_text())
    assert topo["cpus"] == len(present) == os.cpu_count()
    assert topo["online"] == cpulist((SYS_CPU / "online").read_text())
    for cpu in present:
        t = SYS_CPU / f"cpu{cpu}" / "topology"
        assert topo["cpu_core"][cpu] == int((t / "core_id").read_text())
        assert topo["cpu_package"][cpu] == int((t / "physical_package_id").read_text())
    nodes = sorted(int(p.name[4:]) for p in SYS_NODE.glob("node[0-9]*"))
    assert topo["nodes"] == nodes
    for i, node in enumerate(nodes):
        row = [int(x) for x in (SYS_NODE / f"node{node}" / "distance").read_text().split()]
        assert topo["numa_distances"][i] == row
        for cpu in cpulist((SYS_NODE / f"node{node}" / "cpulist").read_text()):
            assert topo["cpu_node"][cpu] == node
    n = len(topo["numa_distances"])
    assert all(len(row) == n for row in topo["numa_distances"])
    assert "errors" not in topo


def test_caches_match_sysfs_in_bytes():
    _, topo, _ = dump()
    dirs = sorted((SYS_CPU / "cpu0" / "cache").glob("index[0-9]*"),
                  key=lambda p: int(p.name[5:]))
    assert len(topo["caches"]) == len(dirs) > 0
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for cache, d in zip(topo["caches"], dirs):
        size = (d / "size").read_text().strip()
        assert cache["level"] == int((d / "level").read_text())
        assert cache["type"] == (d / "type").read_text().strip()
        assert cache["size"] == int(size.rstrip("KMG")) * units.get(size[-1], 1)
        assert cache["line"] == int((d / "coherency_line_size").read_text())
        assert cache["shared_cpus"] == cpulist((d / "shared_cpu_list").read_text())
    # A last-level cache is at least as big as a first-level one.
    assert max(c["size"] for c in topo["caches"]) >= min(c["size"] for c in topo["caches"])


def test_loadmap_has_executable_segments_of_main_program_and_libc():
    _, _, loadmap = dump()
    exe = meta_dump_path().resolve()
    assert loadmap[0]["path"] == str(exe)  # the main program's empty name resolved
    for entry in loadmap:
        assert entry["base"] <= entry["start"] < entry["end"]
    # The main program's executable PT_LOAD segments, from the ELF file itself.
    with open(exe, "rb") as f:
        segs = [(s["p_vaddr"], s["p_memsz"]) for s in ELFFile(f).iter_segments()
                if s["p_type"] == "PT_LOAD" and s["p_flags"] & 0x1]
    mine = [e for e in loadmap if e["path"] == str(exe)]
    assert [(e["start"] - e["base"], e["end"] - e["start"]) for e in mine] == segs
    assert any(Path(e["path"]).name.startswith("libc.so") for e in loadmap)
    # Ranges of different objects never overlap.
    ranges = sorted((e["start"], e["end"]) for e in loadmap)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(ranges, ranges[1:]))
