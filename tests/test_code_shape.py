"""Habits the code keeps (issues 10 and 21): short functions everywhere, in
Python and in C, the graph builder read as phases, and a package whose
imports run one way, down its layers (README "Layout"):

    shared base -> trace -> tables -> graph -> metrics -> problems -> analysis
    -> programs (suite, record, synth) -> views (export, app) -> commands -> cli

Imports are read from the source (ast), module-level and inside functions
alike: a lazy import is still a dependency."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "grainlab"
GRAPH = PACKAGE / "graph"
LIMIT = 80

# Lowest first; a module may import its own layer and those below it.
LAYERS = [
    ("base", ["grainlab", "grainlab.errors", "grainlab.schema", "grainlab.sorting",
              "grainlab.idindex", "grainlab.symbolize", "grainlab.progress",
              "grainlab.process_memory", "grainlab.outpath", "grainlab._paths",
              "grainlab.units"]),
    ("trace", ["grainlab.trace"]),
    ("tables", ["grainlab.tables"]),
    ("graph", ["grainlab.graph"]),
    ("metrics", ["grainlab.metrics"]),
    ("problems", ["grainlab.problems"]),
    ("analysis", ["grainlab.analysis"]),
    ("programs", ["grainlab.suite", "grainlab.record", "grainlab.synth", "grainlab.cluster"]),
    ("views", ["grainlab.export", "grainlab.app"]),
    ("commands", ["grainlab.commands"]),
    ("cli", ["grainlab.cli"]),
]

# The only imports of a higher layer: `Trace`'s shortcuts to what is built
# from it (t.tasks(), t.chunks(), t.graph(): the public API), each inside the
# method that uses it.
UPWARD_SHORTCUTS = {
    ("grainlab.trace.trace", "grainlab.tables.tasks"),
    ("grainlab.trace.trace", "grainlab.tables.loops"),
    ("grainlab.trace.trace", "grainlab.graph.build"),
}


# ---------------------------------------------------------------------------
# function length


def python_functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def _blank(text: str) -> str:
    """C source with comments, strings, character literals and preprocessor
    lines blanked (newlines kept, so line numbers stay)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
                         r'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.S | re.M)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _name_before(code: str, close: int) -> tuple[str, int]:
    """The identifier before the parenthesis that `close` (a ')') closes,
    and where it starts."""
    depth = 0
    for i in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(code[i], 0)
        if depth == 0:
            m = re.search(r"(\w+)\s*$", code[:i])
            return (m.group(1), m.start(1)) if m else ("?", i)
    return "?", close


def c_functions(text: str):
    """(name, first line, lines) of every function defined at file level: a
    top-level `{` right after a `)` opens a body (a struct, enum or
    initializer's `{` follows a name or `=`), its matching `}` closes it."""
    code = _blank(text)
    depth, body = 0, None
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                head = code[:i].rstrip()
                body = _name_before(head, len(head) - 1) if head.endswith(")") else None
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and body is not None:
                name, start = body
                first = code.count("\n", 0, start) + 1
                yield name, first, code.count("\n", 0, i) + 1 - first + 1
                body = None


def test_the_c_function_reader_finds_bodies_and_skips_the_rest():
    text = ('struct s { int a; };\nstatic const int t[] = { 1, 2 };\n'
            '/* f() { */\nstatic inline __attribute__((always_inline)) int\n'
            'f(int x, int (*g)(int)) {\n  if (x) { return g(x); }\n  return "}"[0];\n}\n'
            '#define M(x) { x }\nint main(void)\n{\n  return 0;\n}\n')
    assert list(c_functions(text)) == [("f", 5, 4), ("main", 10, 4)]


def test_no_function_is_longer_than_80_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        long += [f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)"
                 for name, line, n in python_functions(path) if n > LIMIT]
    sources = [p for top in (ROOT / "collector", PACKAGE) for ext in ("*.c", "*.cpp")
               for p in top.rglob(ext)]
    assert len(sources) >= 20
    for path in sorted(sources):
        long += [f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)"
                 for name, line, n in c_functions(path.read_text()) if n > LIMIT]
    assert not long, long


def test_the_builder_starts_with_its_glossary():
    doc = ast.get_docstring(ast.parse((GRAPH / "build.py").read_text()))
    for word in ("owner", "slot", "chain", "stride", "waiter", "segment"):
        assert f"\n  {word}" in doc, word


# ---------------------------------------------------------------------------
# imports


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str, path: Path, known) -> list:
    """(imported module, line, inside a function) for each grainlab module
    that `name` imports; `from package import submodule` names the submodule."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function |= {id(n) for n in ast.walk(node) if n is not node}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source
                       for a in node.names]
        else:
            continue
        out += [(t, node.lineno, id(node) in in_function)
                for t in targets if t == "grainlab" or t.startswith("grainlab.")]
    return out


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


def test_every_import_names_a_module():
    """A lazy import left behind by a move fails only when its function runs:
    every import is checked here instead."""
    known = modules()
    wrong = [f"{name}:{line} imports {target}" for name, path in known.items()
             for target, line, _ in imports(name, path, known) if target not in known]
    assert not wrong, wrong


def test_every_name_imported_from_grainlab_is_there():
    """In the package, the tests and the benchmarks: `from grainlab.x import
    y` finds y (a name or a submodule), whichever function the import is in."""
    missing = []
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
             *(ROOT / "benchmarks").rglob("*.py")]
    for path in files:
        package = _module_name(path) if path.name == "__init__.py" else \
            _module_name(path).rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            if not (source == "grainlab" or source.startswith("grainlab.")):
                continue
            module = importlib.import_module(source)
            for a in node.names:
                if not hasattr(module, a.name) and not (
                        hasattr(module, "__path__")
                        and importlib.util.find_spec(f"{source}.{a.name}") is not None):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {source}.{a.name}")
    assert not missing, missing


def test_every_module_has_a_layer():
    assert [m for m in modules() if layer_of(m) is None] == []


def test_no_module_imports_a_layer_above_its_own():
    known = modules()
    upward, used = [], set()
    for name, path in known.items():
        for target, line, lazy in imports(name, path, known):
            if layer_of(target) <= layer_of(name):
                continue
            if lazy and (name, target) in UPWARD_SHORTCUTS:
                used.add((name, target))
                continue
            upward.append(f"{name}:{line} imports {target} "
                          f"({LAYERS[layer_of(name)][0]} -> {LAYERS[layer_of(target)][0]})")
    assert not upward, upward
    assert used == UPWARD_SHORTCUTS     # a shortcut that went away leaves the list


def import_cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (or a module
    importing itself): Tarjan's algorithm, iteratively."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    known = modules()
    graph = {name: {t for t, _, _ in imports(name, path, known) if t in known and t != name}
             for name, path in known.items()}
    assert sum(map(len, graph.values())) > 150      # the reader sees the imports
    assert import_cycles(graph) == []
