"""The package's imports run down its layers and never in a circle, as CONTRIBUTING.md's layout table says.

Every import is read from the source (ast), those inside functions and under TYPE_CHECKING too: an import
put off until a function runs still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "arena"

# Bottom up; a module may import its own layer and those below it. botkit is protocol v1 from a bot's side
# (it plays one match), the student's tools use the report's boards and sit under the front door.
LAYERS = {
    "arena.game": 0,
    "arena.match": 1,
    "arena.botkit": 1,
    "arena.kgp": 1,  # KWARC's Kalah Game Protocol: grammar, wire and relay beside the match that plays them
    "arena.stops": 0,  # how a process stops on a signal: the CLI, the game workers, the server's workers
    "arena.sandbox": 1,  # confining a bot's process: beside the match, whose processes it confines
    "arena.tournament": 2,
    "arena.stats": 2,  # the ratings and when a ranking is settled, beside the run that asks
    "arena.store": 2,
    "arena.lab": 2,  # the run's back end on a Dask lab
    "arena.report": 3,
    "arena.student": 4,
    "arena.api": 5,
    "arena.cli": 5,
    "arena.server": 5,  # `arena serve`: on top of the API, beside the CLI (whose serve command starts it)
    "arena.__main__": 5,
    "arena.kgp.server": 5,  # the class server's KGP port, lobby and ranked desk, which arena.server imports
    "arena": 0,  # arena/__init__.py imports nothing when loaded (names on first use): any module may
}


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py")) if "starters" not in p.parts}


def imports(module: str) -> set[str]:
    """The arena modules `module` imports, anywhere in its source."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base])
                base = base.strip(".")
            for alias in node.names:  # `from arena.store import writer as store` imports a module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def layer(module: str) -> int:
    while module not in LAYERS:
        module = module.rpartition(".")[0]
    return LAYERS[module]


def test_every_module_has_a_layer() -> None:
    assert {m.split(".")[1] for m in MODULES if m != "arena"} <= {
        k.split(".")[1] for k in LAYERS if k != "arena"
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_up_a_layer(module: str) -> None:
    upward = sorted(m for m in GRAPH[module] if layer(m) > layer(module))
    assert not upward, f"{module} (layer {layer(module)}) imports {upward} from a layer above"


def test_no_import_circle() -> None:
    """Depth-first search for a back edge; the circle found is named module by module."""
    state: dict[str, int] = {}  # 1: on the path being searched, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (circle := visit(target)):
                return circle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(MODULES):
        if module not in state:
            circle = visit(module)
            assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_reader_sees_imports_inside_functions() -> None:
    """The check would pass vacuously if the reader missed the imports a function makes."""
    assert "arena.lab" in GRAPH["arena.tournament.scheduler"]  # inside `backend()`
    assert "arena.lab.workers" in GRAPH["arena.lab"]  # inside `Cluster.play`
    assert "arena.store.writer" in GRAPH["arena.report.page"]  # `from arena.store import writer as store`
