"""Output-path rules (docs/trace-format.md, "Output path"), through the real
collector (GRAINLAB_OUTPUT) and the real CLI (`record -o`, `export`): only
regular files are written, nothing grainlab did not create is unlinked or
truncated, a symbolic link is written through and stays a link, the trace
appears atomically by rename. Device nodes are made with mknod in a
temporary directory (never /dev)."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

import grainlab as gl
from grainlab import _paths
from conftest import assert_one_line_error, grainlab


def fib_tasks(n, cutoff, depth=0):
    """Tasks examples/fib.c creates (its recursion, independently)."""
    if n < 2 or depth >= cutoff:
        return 0
    return 2 + fib_tasks(n - 1, cutoff, depth + 1) + fib_tasks(n - 2, cutoff, depth + 1)


def collector_run(build, example, out, *args, threads=2, timeout=60):
    env = dict(os.environ, OMP_TOOL_LIBRARIES=str(build / "lib" / _paths.COLLECTOR),
               OMP_NUM_THREADS=str(threads), GRAINLAB_OUTPUT=str(out), GRAINLAB_CONVERT="wait")
    return subprocess.run([example("fib"), *map(str, args or (12, 3))], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def device(tmp_path):
    """A character device node equal to /dev/null (1, 3), in a temp dir."""
    node = tmp_path / "null-node"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.fail("mknod needs root (CI and these machines run as root)")
    return node


def assert_untouched_node(path, kind):
    st = os.lstat(path)
    assert kind(st.st_mode), oct(st.st_mode)


def test_collector_refuses_a_device_and_leaves_it(build, example, device):
    r = collector_run(build, example, device)
    assert r.returncode == 0 and r.stdout.startswith("fib(12)")   # the app is unaffected
    assert "is a device" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert_untouched_node(device, stat.S_ISCHR)
    assert os.major(os.stat(device).st_rdev) == 1
    assert not os.path.exists(str(device) + ".spool")


def test_record_refuses_a_device_fifo_socket_at_once(tmp_path, device, example):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import socket
    sock_path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_path))
    try:
        for path, kind, test in ((device, "is a device", stat.S_ISCHR),
                                 (fifo, "is a FIFO", stat.S_ISFIFO),
                                 (sock_path, "is a socket", stat.S_ISSOCK)):
            # opening a FIFO for writing would wait for a reader forever: the
            # timeout (a hang detector, not a speed bound) fails that
            r = grainlab("record", "-o", path, "--", example("fib"), 10, 3, timeout=120)
            assert_one_line_error(r, kind, "regular files")
            assert_untouched_node(path, test)
    finally:
        s.close()


def test_collector_refuses_a_fifo_without_blocking(build, example, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = collector_run(build, example, fifo, timeout=120)   # a hang detector
    assert r.returncode == 0 and "is a FIFO" in r.stderr
    assert_untouched_node(fifo, stat.S_ISFIFO)


@pytest.mark.parametrize("via", ["record", "collector"])
def test_a_symlink_is_written_through_and_stays_a_link(via, build, example, tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "trace.parquet"
    target.write_bytes(b"an old file that the new trace replaces")
    link = tmp_path / "link.parquet"
    link.symlink_to(target)
    if via == "record":
        r = grainlab("record", "-q", "-o", link, "--", example("fib"), 12, 3)
    else:
        r = collector_run(build, example, link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    t = gl.load(target)
    assert (t.events["event"] == 7).sum() == fib_tasks(12, 3)
    assert gl.load(link).events.shape == t.events.shape
    assert not list(real_dir.glob("*grainlab-tmp")) and not list(tmp_path.glob("*.spool"))


def test_a_dangling_symlink_names_where_the_trace_goes(example, tmp_path):
    link = tmp_path / "dangling.parquet"
    target = tmp_path / "sub-target.parquet"
    link.symlink_to(target.name)                          # relative, target missing
    r = grainlab("record", "-q", "-o", link, "--", example("fib"), 10, 3)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and target.is_file()
    gl.load(link)


def test_a_foreign_file_at_the_spool_name_is_never_truncated(build, example, tmp_path):
    out = tmp_path / "t.parquet"
    spool = tmp_path / "t.parquet.spool"
    spool.write_text("somebody's notes\n")
    r = collector_run(build, example, out)
    assert r.returncode == 0 and "not a grainlab spool" in r.stderr, r.stderr
    assert spool.read_text() == "somebody's notes\n"
    assert not out.exists()
    link_spool = tmp_path / "u.parquet.spool"
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link_spool.symlink_to(victim)
    r = collector_run(build, example, tmp_path / "u.parquet")
    assert "symbolic link" in r.stderr, r.stderr
    assert victim.read_text() == "keep me" and link_spool.is_symlink()


def test_an_old_trace_stays_until_the_new_one_replaces_it(example, tmp_path):
    out = tmp_path / "t.parquet"
    assert grainlab("record", "-q", "-o", out, "--", example("fib"), 10, 3).returncode == 0
    first = os.stat(out).st_ino
    r = grainlab("record", "-q", "-o", out, "--", example("fib"), 12, 3)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_ino != first                   # renamed into place: a new file
    assert (gl.load(out).events["event"] == 7).sum() == fib_tasks(12, 3)
    assert not list(tmp_path.glob("*grainlab-tmp")) and not list(tmp_path.glob("*.tmp"))


def test_record_of_a_non_openmp_program_does_not_report_an_old_trace(example, tmp_path):
    out = tmp_path / "t.parquet"
    assert grainlab("record", "-q", "-o", out, "--", example("fib"), 10, 3).returncode == 0
    r = grainlab("record", "--force", "-o", out, "--", example("not_openmp"))
    assert r.returncode != 0 and "no trace written" in r.stderr, r.stderr
    assert out.exists()                                    # the earlier trace is not removed


def test_export_follows_the_same_rules(record, device, tmp_path, cli):
    t = record("fib", 10, 3)
    assert_one_line_error(cli("export", t.path, "--graphml", device), "is a device")
    assert_untouched_node(device, stat.S_ISCHR)
    target = tmp_path / "real.graphml"
    target.write_text("old")
    link = tmp_path / "g.graphml"
    link.symlink_to(target)
    r = cli("export", t.path, "--graphml", link, "-q")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and target.read_text().startswith("<?xml")
