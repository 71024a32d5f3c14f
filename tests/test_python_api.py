"""docs/python-api.md's worked example runs as written (issue 10 item 6): every
```python block of its "A worked example" section, in order, in one namespace,
in a folder holding a real fib trace."""
from __future__ import annotations

import os
import re
import shutil

from conftest import REPO


def blocks() -> list[str]:
    text = (REPO / "docs" / "python-api.md").read_text()
    section = text.split("## A worked example", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_worked_example_runs(record, tmp_path, capsys):
    code = blocks()
    assert len(code) >= 5
    shutil.copy(record("fib", 20, 6).path, tmp_path / "fib.parquet")
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        ns: dict = {}
        for block in code:
            exec(compile(block, "docs/python-api.md", "exec"), ns)
    finally:
        os.chdir(here)
    out = capsys.readouterr().out
    # fib 20 with cutoff 6: 2^7 - 2 tasks
    assert out.startswith("126 grains, span ")
    assert (tmp_path / "fib.analysis").exists()
