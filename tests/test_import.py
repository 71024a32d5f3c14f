"""`import grainlab` and `grainlab --version` stay light (issue 10 item 5): no
numpy/pandas/pyarrow until something needs them — checked structurally, by
what got imported, not by timing."""
from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "numpy", "pyarrow", "igraph", "networkx", "scipy", "sklearn", "dash", "plotly")


def loaded_after(code: str) -> set:
    r = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_import_grainlab_loads_nothing_heavy():
    mods = loaded_after("import grainlab")
    assert not [m for m in HEAVY if m in mods]


def test_version_loads_nothing_heavy():
    mods = loaded_after("from grainlab.cli import main\nmain(['--version'])")
    assert not [m for m in HEAVY if m in mods]


def test_the_api_is_there_when_asked_for():
    mods = loaded_after("import grainlab as gl\nassert callable(gl.analyze) and gl.Trace\n"
                        "from grainlab import characterize, load")
    assert "pandas" in mods


def test_api_names_are_not_shadowed_by_submodules():
    """A submodule named like an API function would replace it on the package
    once imported (grainlab.suite.characterization, not grainlab.characterize)."""
    r = subprocess.run([sys.executable, "-c",
                        "import grainlab as gl, grainlab.cli\n"
                        "for m in grainlab.cli.command_modules(): pass\n"
                        "assert all(callable(getattr(gl, n)) for n in "
                        "('analyze', 'load', 'open', 'characterize', 'scaling')), 'shadowed'"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
