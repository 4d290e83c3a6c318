"""The package's import layers: every module imports only from its own layer or lower ones, and nothing imports in a
circle (the order is :data:`LAYERS` below).

The sources are parsed (``ast``), nothing is imported, so the test is fast and sees every import: at module level,
inside functions (lazy imports are still dependencies) and under ``TYPE_CHECKING``. ``rlanything_core/__init__.py``
is the lazy facade over the whole package: it may name anything, and no module may import it.

To place a new subpackage or top-level module, add it to :data:`LAYERS`; a failure names the file, the line and the
import, and the layers involved. Move the code to the layer it belongs to rather than widening a layer.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = "rlanything_core"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

# Lowest first. A part (a subpackage, or a module directly under rlanything_core/) may import parts of its own layer
# (without a circle between parts) and of the layers below it.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("data model", frozenset({"_validation", "constants", "types", "records", "seeding", "masking", "files",
                               "digests"})),
    # where the shipped configs and the data lie, which extras are installed, progress lines: import nothing above
    ("support: configs, data folder, extras, progress", frozenset({"conf", "data_dir", "extras", "progress"})),
    ("config checks: a composed config against dataclasses", frozenset({"config"})),
    ("maths", frozenset({"advantages", "rewards", "losses", "theory"})),
    ("engines: sandbox, models, generation backends", frozenset({"sandbox", "models", "generation"})),
    ("environments", frozenset({"envs"})),
    ("environment adaptation", frozenset({"adaptation"})),
    ("collection", frozenset({"collect"})),
    ("loop", frozenset({"loop"})),
    ("settings: each agent setting's parts", frozenset({"settings"})),
    ("training", frozenset({"training", "lightning"})),
    ("assembly: a run from a composed config (above settings, loop, training)", frozenset({"assembly"})),
    ("analysis of finished runs: reading them back, statistics, tables, plots", frozenset({"analysis"})),
    ("the ablation: runs, seed workers, reuse, budget, warm start (above assembly, analysis)", frozenset({"ablation"})),
    ("the command line: rlanything train|evaluate|ablate", frozenset({"cli", "__main__"})),
    ("test helpers", frozenset({"testing"})),
)
FACADE = PACKAGE  # rlanything_core/__init__.py


# ---- reading the imports --------------------------------------------------------------------------------------------


def module_sources(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """``{dotted module name: (path relative to the repository, source)}`` for every ``.py`` file under ``root``."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = (str(path.relative_to(root.parent)), path.read_text(encoding="utf-8"))
    return found


def imports(
    module: str, source: str, *, is_package: bool, known: Iterable[str], top: tuple[str, ...] = (PACKAGE,)
) -> list[tuple[int, str]]:
    """``(line, imported module)`` for each import of ``module`` from the top-level packages ``top`` (the package's).

    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``; relative imports are
    resolved against ``module``'s package; a name that is no module resolves to the nearest enclosing one.
    """
    known = set(known)

    def nearest(name: str) -> str:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            inside = any(name == t or name.startswith(t + ".") for t in top)
            if inside and (node.lineno, nearest(name)) not in found:
                found.append((node.lineno, nearest(name)))
    return found


def part(module: str) -> str:
    """A module's part: its subpackage or top-level module (``rlanything_core.envs.alfworld`` -> ``envs``)."""
    return module.split(".")[1] if module.count(".") else module


def import_graph(sources: Mapping[str, tuple[str, str]]) -> dict[str, list[tuple[int, str]]]:
    """Every module's package-internal imports (the facade's left out: it is the top of everything)."""
    return {
        module: imports(module, source, is_package=path.endswith("__init__.py"), known=sources)
        for module, (path, source) in sources.items()
        if module != FACADE
    }


# ---- the checks, as functions of a graph (tested on a small made-up package below) ---------------------------------


def layer_of(name: str, layers: tuple[tuple[str, frozenset[str]], ...] = LAYERS) -> int | None:
    """Index of the layer holding part ``name``, or ``None``."""
    return next((i for i, (_, parts) in enumerate(layers) if name in parts), None)


def upward_imports(
    graph: Mapping[str, list[tuple[int, str]]],
    paths: Mapping[str, str],
    layers: tuple[tuple[str, frozenset[str]], ...] = LAYERS,
) -> list[str]:
    """One line per import of a higher layer (or of the facade): the file, the line, the import and the layers."""
    bad = []
    for module, found in graph.items():
        here = layer_of(part(module), layers)
        for line, target in found:
            where = f"{paths[module]}:{line}: {module} imports {target}"
            if target == FACADE:
                bad.append(f"{where} (the lazy facade: import the defining module instead)")
                continue
            there = layer_of(part(target), layers)
            if here is not None and there is not None and there > here:
                bad.append(f"{where} (layer {layers[there][0]!r} is above {layers[here][0]!r})")
    return bad


def cycles(edges: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """The import cycles (nodes, the first repeated at the end): in every strongly connected component, the shortest
    cycle through each member, each cycle once. ``edges[a][b]`` is a witness of the edge (unused here)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan; the package is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, {})):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, {}):
                for member in sorted(component):  # the shortest cycle through each member, each cycle once
                    loop = cycle_through(member, component, edges)[:-1]
                    first = loop.index(min(loop))
                    loop = loop[first:] + loop[:first] + [loop[first]]
                    if loop not in found:
                        found.append(loop)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def cycle_through(start: str, component: set[str], edges: Mapping[str, Mapping[str, str]]) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth first)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(edges.get(node, {})):
                if succ not in component:
                    continue
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover: a component always has one


def describe(cycle: list[str], edges: Mapping[str, Mapping[str, str]]) -> str:
    """``a -> b -> a`` with the import that makes each step."""
    steps = [f"    {a} -> {b}  ({edges[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(cycle) + "\n" + "\n".join(steps)


def module_edges(graph: Mapping[str, list[tuple[int, str]]], paths: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Module -> imported module, with the packages an import runs on the way (``import a.b.c`` runs ``a.b``'s
    ``__init__``): a cycle can pass through a package's re-exports. The facade and a module's own packages (already
    being imported when the module runs) are left out."""
    edges: dict[str, dict[str, str]] = defaultdict(dict)
    for module, found in graph.items():
        for line, target in found:
            pieces = target.split(".")
            for depth in range(2, len(pieces) + 1):
                step = ".".join(pieces[:depth])
                if step != module and not module.startswith(step + "."):
                    edges[module].setdefault(step, f"{paths[module]}:{line} imports {target}")
    return edges


def part_edges(graph: Mapping[str, list[tuple[int, str]]], paths: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Part -> imported part (``envs`` -> ``sandbox``), each with one import that makes it."""
    edges: dict[str, dict[str, str]] = defaultdict(dict)
    for module, found in graph.items():
        for line, target in found:
            if target != FACADE and part(target) != part(module):
                edges[part(module)].setdefault(part(target), f"{paths[module]}:{line} imports {target}")
    return edges


# ---- the package ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package() -> tuple[dict[str, list[tuple[int, str]]], dict[str, str]]:
    sources = module_sources()
    return import_graph(sources), {module: path for module, (path, _) in sources.items()}


def test_every_part_of_the_package_has_exactly_one_layer(package) -> None:  # type: ignore[no-untyped-def]
    graph, _ = package
    parts = {part(m) for m in graph}
    placed = [p for _, members in LAYERS for p in members]
    assert len(placed) == len(set(placed)), "a part is listed in two layers"
    assert not parts - set(placed), f"place these parts of {PACKAGE} in LAYERS: {sorted(parts - set(placed))}"
    assert not set(placed) - parts, f"LAYERS names parts that do not exist: {sorted(set(placed) - parts)}"


def test_no_module_imports_a_higher_layer(package) -> None:  # type: ignore[no-untyped-def]
    graph, paths = package
    assert sum(len(found) for found in graph.values()) > 200  # the parser sees the package's imports
    bad = upward_imports(graph, paths)
    assert not bad, "imports against the layers (" + " < ".join(name for name, _ in LAYERS) + "):\n" + "\n".join(bad)


def test_no_two_parts_import_each_other(package) -> None:  # type: ignore[no-untyped-def]
    """Within a layer parts may import each other one way only (``losses`` -> ``rewards`` -> ``advantages``)."""
    graph, paths = package
    edges = part_edges(graph, paths)
    found = cycles(edges)
    assert not found, "circular imports between parts of the package:\n" + "\n".join(describe(c, edges) for c in found)


def test_no_import_cycle_between_modules(package) -> None:  # type: ignore[no-untyped-def]
    graph, paths = package
    edges = module_edges(graph, paths)
    found = cycles(edges)
    assert not found, "circular imports between modules:\n" + "\n".join(describe(c, edges) for c in found)


# ---- experiments/ and scripts/: the entry points and research scripts above the package -----------------------------

APPS = "experiments"
APPS_ROOT = ROOT.parent / APPS
OPTIONAL = frozenset({"peft", "matplotlib"})
"""Extras not every install has: imported inside the function that needs them (LoRA, the plots)."""
LAZY_LEFT: dict[str, frozenset[str]] = {}  # function-level imports allowed outside the optional packages: none


def function_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import inside a function (``from a.b import c``: ``a.b``; relative: ``.b``)."""
    found = []
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    found += [(node.lineno, alias.name) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    found.append((node.lineno, "." * node.level + (node.module or "")))
    return sorted(set(found))


def lazy_imports(sources: Mapping[str, tuple[str, str]], left: Mapping[str, frozenset[str]]) -> list[str]:
    """One line per import inside a function that a top-level import could do: anything but :data:`OPTIONAL` and
    the ``left`` ones of their file."""
    bad = []
    for path, source in sorted(sources.values()):
        for line, name in function_imports(source):
            if name.split(".")[0] not in OPTIONAL and name not in left.get(path, frozenset()):
                bad.append(f"{path}:{line}: imports {name} inside a function (import it at the top)")
    return bad


SCRIPTS = "scripts"
SCRIPTS_ROOT = ROOT.parent / SCRIPTS
ENTRY_POINTS = frozenset({"experiments/__init__.py", "experiments/train.py", "experiments/ablate.py"})
"""What experiments/ holds: the thin entry points (the apps are the package's)."""
ENTRY_POINT_LINES = 400


@pytest.fixture(scope="module")
def apps() -> tuple[dict[str, tuple[str, str]], dict[str, list[tuple[int, str]]]]:
    """The sources of experiments/ and scripts/, and each module's imports of them and of the package."""
    sources = {**module_sources(APPS_ROOT), **module_sources(SCRIPTS_ROOT)}
    known = set(sources) | set(module_sources())
    graph = {
        module: imports(module, source, is_package=path.endswith("__init__.py"), known=known,
                        top=(APPS, SCRIPTS, PACKAGE))  # fmt: skip
        for module, (path, source) in sources.items()
    }
    return sources, graph


def test_the_package_never_imports_experiments_or_scripts() -> None:
    """The library is used without the apps: ``rlanything_core`` importing ``experiments`` or ``scripts`` fails."""
    known = set(module_sources(APPS_ROOT)) | set(module_sources(SCRIPTS_ROOT))
    found = [
        (path, line, module, target)
        for module, (path, source) in module_sources().items()
        for line, target in imports(module, source, is_package=path.endswith("__init__.py"), known=known,
                                    top=(APPS, SCRIPTS))  # fmt: skip
    ]
    bad = [f"{p}:{line}: {m} imports {t}" for p, line, m, t in found]
    assert not bad, "the package imports the apps (move what both need into the package):\n" + "\n".join(bad)


def test_experiments_holds_only_thin_entry_points(apps) -> None:  # type: ignore[no-untyped-def]
    """experiments/ is train and ablate over the package (<= 400 lines in all); scripts/ import only the package."""
    sources, graph = apps
    held = {path for path, _ in sources.values() if path.startswith(APPS + "/")}
    assert ENTRY_POINTS <= held, f"missing entry points: {sorted(ENTRY_POINTS - held)}"
    assert not held - ENTRY_POINTS, (
        f"experiments/ holds only entry points; move these into the package or scripts/: "
        f"{sorted(held - ENTRY_POINTS)}"
    )
    lines = sum(source.count("\n") for path, source in sources.values() if path in ENTRY_POINTS)
    assert lines <= ENTRY_POINT_LINES, f"the entry points hold {lines} lines (at most {ENTRY_POINT_LINES})"
    paths = {m: path for m, (path, _) in sources.items()}
    beside = [f"{paths[m]}:{line}: imports {t}" for m, found in graph.items()
              for line, t in found if not (t == PACKAGE or t.startswith(PACKAGE + "."))]  # fmt: skip
    assert not beside, "entry points and scripts import only the package:\n" + "\n".join(beside)
    assert any(t.startswith(PACKAGE + ".") for found in graph.values() for _, t in found)  # the parser sees them


def test_no_sys_path_edit_and_no_buried_import(apps) -> None:  # type: ignore[no-untyped-def]
    """Entry points run as modules (``python -m experiments.train``, ``python -m scripts.<name>``): none edits
    ``sys.path`` or imports below its code (``noqa: E402``)."""
    sources, _ = apps
    bad = [
        f"{path}:{number}: {line.strip()}"
        for path, source in sorted(sources.values())
        for number, line in enumerate(source.splitlines(), 1)
        if "sys.path" in line or "noqa: E402" in line
    ]
    assert not bad, "\n".join(bad)


def test_experiments_import_at_the_top(apps) -> None:  # type: ignore[no-untyped-def]
    """No import inside a function that a top-level import could do (a lazy import once hid a cycle)."""
    sources, _ = apps
    bad = lazy_imports(sources, LAZY_LEFT)
    assert not bad, "\n".join(bad)
    stale = [
        f"{path}: {name}"
        for path, names in LAZY_LEFT.items()
        for name in names
        if name not in {n for _, n in function_imports((ROOT.parent / path).read_text(encoding="utf-8"))}
    ]
    assert not stale, "LAZY_LEFT names imports that are gone (remove them from the list): " + ", ".join(stale)


# ---- the checks catch what they should ----------------------------------------------------------------------------


def made_up(**files: str) -> tuple[dict[str, list[tuple[int, str]]], dict[str, str]]:
    """A package from ``{dotted module: source}`` (``__init__`` modules named ``pkg.__init__``)."""
    sources: dict[str, tuple[str, str]] = {}
    for name, source in files.items():
        module = name.removesuffix(".__init__")
        sources[module] = (name.replace(".", "/") + ".py", source)
    return import_graph(sources), {module: path for module, (path, _) in sources.items()}


def test_an_upward_import_is_named_with_its_file_line_and_layers() -> None:
    graph, paths = made_up(**{
        "rlanything_core.generation.__init__": "",
        "rlanything_core.generation.bench": "import os\ndef f():\n    from rlanything_core.collect.prompts import p\n",
        "rlanything_core.collect.__init__": "",
        "rlanything_core.collect.prompts": "from ..generation import bench\n",  # relative, downward: fine
        "rlanything_core.types": "from rlanything_core import StepBatch\n",  # the facade
    })
    bad = upward_imports(graph, paths)
    assert len(bad) == 2
    assert bad[0].startswith("rlanything_core/generation/bench.py:3: rlanything_core.generation.bench imports "
                             "rlanything_core.collect.prompts (layer 'collection' is above 'engines")
    assert "rlanything_core/types.py:1" in bad[1] and "facade" in bad[1]
    # ... and the same pair is a cycle between parts, and between modules (through the package's __init__)
    assert cycles(part_edges(graph, paths)) == [["collect", "generation", "collect"]]
    assert cycles(module_edges(graph, paths)) == [
        ["rlanything_core.collect.prompts", "rlanything_core.generation.bench", "rlanything_core.collect.prompts"]
    ]


def test_a_cycle_inside_one_layer_and_a_self_loop_are_found() -> None:
    graph, paths = made_up(**{
        "rlanything_core.rewards.__init__": "from rlanything_core.rewards.a import x\n",
        "rlanything_core.rewards.a": "from rlanything_core.losses.b import y\n",
        "rlanything_core.losses.__init__": "",
        "rlanything_core.losses.b": "from rlanything_core.rewards import z\n",
    })
    assert upward_imports(graph, paths) == []  # same layer
    edges = module_edges(graph, paths)
    (found,) = cycles(edges)
    assert found[0] == found[-1] and set(found) == {
        "rlanything_core.rewards", "rlanything_core.rewards.a", "rlanything_core.losses.b"}
    assert "rlanything_core/losses/b.py:1 imports rlanything_core.rewards" in describe(found, edges)
    assert cycles({"a": {"a": "a.py:1 imports a"}}) == [["a", "a"]]
    assert cycles({"a": {"b": "w"}, "b": {"c": "w"}}) == []


def test_lazy_imports_are_found_and_optional_ones_allowed() -> None:
    source = (
        "import os\n"
        "def f():\n    from experiments.config_checks import band\n    import peft\n"
        "    def g():\n        from . import sibling\n"
        "class C:\n    def m(self):\n        import torch.nn\n"
    )
    assert function_imports(source) == [(3, "experiments.config_checks"), (4, "peft"), (6, "."), (9, "torch.nn")]
    sources = {"experiments.a": ("experiments/a.py", source)}
    assert lazy_imports(sources, {}) == [
        "experiments/a.py:3: imports experiments.config_checks inside a function (import it at the top)",
        "experiments/a.py:6: imports . inside a function (import it at the top)",
        "experiments/a.py:9: imports torch.nn inside a function (import it at the top)",
    ]
    assert len(lazy_imports(sources, {"experiments/a.py": frozenset({"torch.nn", "."})})) == 1


def test_an_apps_cycle_and_a_package_import_of_the_apps_are_found() -> None:
    sources = {
        "experiments.checks": "def v():\n    from experiments.gui import check\n",  # lazy: still an edge
        "experiments.gui": "from experiments.checks import ConfigError\n",
    }
    graph = {m: imports(m, src, is_package=False, known=sources, top=(APPS,)) for m, src in sources.items()}
    edges = module_edges(graph, {m: m.replace(".", "/") + ".py" for m in sources})
    assert cycles(edges) == [["experiments.checks", "experiments.gui", "experiments.checks"]]
    found = imports("rlanything_core.x", "from experiments.builders import build\n", is_package=False,
                    known={"experiments.builders"}, top=(APPS,))  # fmt: skip
    assert found == [(1, "experiments.builders")]
