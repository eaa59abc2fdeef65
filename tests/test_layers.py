"""The package reads one way: no import circles, no import from a lower layer up to a higher one.

Every ``import`` of a cpsched module (at module level or inside a function) is
an edge; each module has a layer (DESIGN.md's flow: readers and the problem,
engines, algorithms, outputs); an edge may go down or stay within a layer,
never up, and the graph has no cycle.
"""

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "cpsched"

#: lowest first; a module may import only from its own layer or below
LAYERS = [
    # foundations: no cpsched imports but each other
    {"cpsched", "cpsched.errors", "cpsched.checks", "cpsched.files", "cpsched.interrupt", "cpsched.quantities",
     "cpsched.opgraph", "cpsched.costmodel", "cpsched.io", "cpsched.io.bundled"},
    # the problem
    {"cpsched.instance", "cpsched.schedule"},
    # facts about the problem: the checker, bounds, classes, cut tasks, cost tables, platforms, memory packing
    {"cpsched.validator", "cpsched.bounds", "cpsched.classes", "cpsched.cuts", "cpsched.costs", "cpsched.precisions",
     "cpsched.platforms", "cpsched.memplan", "cpsched.generate"},
    # readers and lowering
    {"cpsched.io.onnx", "cpsched.io.stg", "cpsched.io.taskgraph", "cpsched.fusion", "cpsched.lowering", "cpsched.inputs"},
    # heuristics
    {"cpsched.heuristics", "cpsched.heuristics.heft", "cpsched.heuristics.baselines", "cpsched.heuristics.evict",
     "cpsched.heuristics.justify", "cpsched.heuristics.nsga2"},
    # exact engines behind the protocol
    {"cpsched.engines", "cpsched.engines.protocol", "cpsched.engines.cpsat", "cpsched.engines.milp"},
    # algorithms over engines
    {"cpsched.lexico", "cpsched.series", "cpsched.lns", "cpsched.decompose", "cpsched.pareto", "cpsched.certify",
     "cpsched.residency", "cpsched.forkjoin", "cpsched.seriesfront"},
    # outputs and measurement
    {"cpsched.indicators", "cpsched.cache", "cpsched.plots", "cpsched.profiling", "cpsched.quantization",
     "cpsched.plan", "cpsched.subgraphs", "cpsched.executor"},
    # the front door
    {"cpsched.api"},
    # shells over the front door
    {"cpsched.bench", "cpsched.cli", "cpsched.__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The cpsched modules ``path`` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("cpsched")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cpsched"):
            for a in node.names:  # `from cpsched import x` imports the module cpsched.x when there is one
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in MODULES else node.module)
    return out


FILES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
MODULES = set(FILES)


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    for name, path in FILES.items():
        g.add_edges_from((name, dep) for dep in imports(path) if dep != name)
    return g


def layer(name: str) -> int:
    return next(k for k, members in enumerate(LAYERS) if name in members)


def test_every_module_has_a_layer():
    assert MODULES == set().union(*LAYERS)


def test_no_import_circles():
    cycles = list(nx.simple_cycles(graph()))
    assert cycles == []


def test_no_upward_imports():
    up = [(a, b) for a, b in graph().edges if layer(b) > layer(a)]
    assert up == []
