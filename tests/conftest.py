"""Shared fixtures: the native build, running the real `grainlab` CLI, and
traces of the example programs recorded once per test session.

Build artifacts missing is a FAILURE, not a skip: CI always builds them
(`make test`), so a missing collector means a broken build.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # tracegen helpers

from grainlab import _paths  # noqa: E402


NATIVE_FIXTURES = {"build", "example", "record"}


def pytest_collection_modifyitems(config, items):
    """Mark tests that need the native build (directly or through a fixture)."""
    for item in items:
        if NATIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.native)


def build_dir() -> Path:
    return _paths.build_dir()


# Linux's ru_maxrss of a child counts the memory of the process it was forked
# from (kept across exec), so a child of this big test process would report at
# least the test's own peak: a small Python forks the program instead and
# writes the program's own peak (bytes) to a file.
_PEAK_RSS = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[2:])\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "open(sys.argv[1], 'w').write(str(usage.ru_maxrss * 1024))\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def peak_rss_prefix(out: Path) -> list[str]:
    """Command prefix: runs the program after it and writes its own peak
    resident memory (bytes) to `out`; exits with the program's status."""
    return [sys.executable, "-c", _PEAK_RSS, str(out)]


@pytest.fixture(scope="session")
def build():
    """The build directory; fails the test if the native parts are not built."""
    root = build_dir()
    missing = [str(p) for p in (root / "lib" / _paths.COLLECTOR,
                                root / "lib" / _paths.EMPTY_TOOL,
                                root / "lib" / _paths.WRITER,
                                root / "lib" / _paths.GRAPH_KERNELS,
                                root / "examples" / "fib")
               if not p.is_file()]
    if missing:
        pytest.fail("build artifacts missing (run `make build`): " + ", ".join(missing))
    return root


@pytest.fixture(scope="session")
def example(build):
    def path(name: str) -> str:
        p = build / "examples" / name
        if not p.is_file():
            pytest.fail(f"example program {p} not built")
        return str(p)
    return path


def grainlab(*args, env=None, timeout=300, **kw) -> subprocess.CompletedProcess:
    """Run the real `grainlab` command line in a child Python. The timeout is
    a hang detector, generous for a machine whose cores other jobs keep busy
    (within pytest's own per-test timeout, pyproject.toml)."""
    full_env = os.environ.copy()
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "grainlab.cli", *map(str, args)],
                          capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=kw.pop("cwd", None), **kw)


@pytest.fixture
def cli(capsys, monkeypatch):
    """cli(*args, env=None): `grainlab ARGS` run in this process, through
    grainlab.cli.main as the command line runs it: a CompletedProcess with
    the exit code and what it printed. For error paths, which need no real
    process: no Python start-up (~0.6 s) per call. (`grainlab` above runs a
    real child, for what needs one: recording, signals, exit codes.)"""
    from grainlab import cli as grainlab_cli

    def run(*args, env=None):
        capsys.readouterr()
        argv = [str(a) for a in args]
        with monkeypatch.context() as m:
            for key, value in (env or {}).items():
                m.setenv(key, value)
            try:
                code = grainlab_cli.main(argv)
            except SystemExit as e:         # argparse: a usage error (or --help)
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["grainlab", *argv], code, out, err)
    return run


def assert_one_line_error(result, *fragments):
    """A user error: exit code 2, exactly one line on stderr, no traceback."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, err)
    assert "Traceback" not in err, err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("grainlab: "), err
    for f in fragments:
        assert f.lower() in lines[0].lower(), (f, lines[0])


class Recorder:
    """Records example programs with `grainlab record`, once per distinct
    (program, args, threads, env) in the session."""

    def __init__(self, tmp: Path, example):
        self.tmp = tmp
        self.example = example
        self.cache: dict = {}
        self.stdouts: dict = {}

    def __call__(self, name, *args, threads=2, env=None, extra=()):
        key = (name, args, threads, tuple(sorted((env or {}).items())), tuple(extra))
        if key not in self.cache:
            label = '_'.join(map(str, args)).replace('/', '_')[-80:]
            out = self.tmp / f"{name}-{label}-t{threads}-{len(self.cache)}.parquet"
            result = grainlab("record", "-q", "-o", out, *extra, "--",
                              self.example(name), *args,
                              env={"OMP_NUM_THREADS": str(threads), **(env or {})})
            assert result.returncode == 0, result.stderr
            assert "Traceback" not in result.stderr, result.stderr
            from grainlab import load
            self.cache[key] = load(out)
            self.stdouts[key] = result.stdout
        return self.cache[key]

    def stdout(self, name, *args, threads=2, env=None, extra=()) -> str:
        """What the recorded program printed (it is recorded if not yet)."""
        self(name, *args, threads=threads, env=env, extra=extra)
        key = (name, args, threads, tuple(sorted((env or {}).items())), tuple(extra))
        return self.stdouts[key]


@pytest.fixture(scope="session")
def record(tmp_path_factory, example):
    """record(name, *args, threads=2) -> grainlab.Trace of that example run."""
    return Recorder(tmp_path_factory.mktemp("traces"), example)
