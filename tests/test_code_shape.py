"""Habits the code keeps (issue 10): the graph builder reads as phases of
short functions."""
import ast
from pathlib import Path

GRAPH = Path(__file__).resolve().parents[1] / "grainlab" / "graph"


def test_no_graph_function_is_longer_than_80_lines():
    long = []
    for path in sorted(GRAPH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_the_builder_starts_with_its_glossary():
    doc = ast.get_docstring(ast.parse((GRAPH / "build.py").read_text()))
    for word in ("owner", "slot", "chain", "stride", "waiter", "segment"):
        assert f"\n  {word}" in doc, word
