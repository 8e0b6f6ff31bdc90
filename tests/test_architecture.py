"""The package's layers (docs/architecture.md): imports go only downward, and no module imports
itself back through others, counting imports inside functions.

Read from the source with ``ast``: nothing is imported, so the optional engines need not be
installed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "vcfzarr_sql"

#: Each layer and the layers it may import (besides itself). ``errors`` is below everything.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "kernels": {"errors"},
    "format": {"errors", "kernels"},
    "store": {"errors", "kernels", "format"},
    "query": {"errors", "kernels", "format", "store"},
    "stats": {"errors", "kernels", "format", "store", "query"},
    "adapters": {"errors", "kernels", "format", "store", "query"},
    "converter": {"errors", "kernels", "format", "store", "query", "version"},
    "view": {"errors", "kernels", "format", "store", "query"},
    "exporters": {"errors", "kernels", "format", "store", "query"},
    "qc": {"errors", "kernels", "format", "store", "query"},
    "validation": {"errors", "kernels", "format", "store", "query"},
    "engine": {"errors", "kernels", "format", "store", "query", "stats", "adapters", "qc"},
    "serve": {"errors", "kernels", "format", "store", "engine", "version"},
}
#: Entry points may import any layer: the CLI, the package's lazy public names, the public
#: Daft/Spark module names, ``python -m vcfzarr_sql``.
TOP = {"cli", "package", "daft", "spark", "__main__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    """``vcfzarr_sql.query.plan`` -> ``query``; the package's own ``__init__`` -> ``package``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "package"


def _imports(path: Path) -> Iterator[str]:
    """Every vcfzarr_sql module ``path`` imports, at any depth of its code."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("vcfzarr_sql"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("vcfzarr_sql"):
                continue
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                # (a name of the package itself, such as __version__, stands for itself)
                top = node.module == "vcfzarr_sql"
                yield candidate if top or _exists(candidate) else node.module


def _exists(module: str) -> bool:
    base = PACKAGE.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        graph[_module_name(path)] = set(_imports(path)) - {_module_name(path)}
    return graph


GRAPH = _graph()


def _imported_layer(module: str) -> str:
    return "version" if module == "vcfzarr_sql.__version__" else _layer(module)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_only_downward(module):
    layer = _layer(module)
    if layer in TOP:
        return
    upward = sorted(
        target for target in GRAPH[module]
        if _imported_layer(target) != layer and _imported_layer(target) not in ALLOWED[layer]
    )
    assert upward == [], f"{module} ({layer}) imports {upward}"


def test_every_subpackage_has_a_layer():
    layers = {_layer(m) for m in GRAPH}
    assert layers <= set(ALLOWED) | TOP, sorted(layers - set(ALLOWED) - TOP)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules():
    assert _cycles(GRAPH) == []


def test_no_import_cycle_between_subpackages():
    layers: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        layers.setdefault(_layer(module), set()).update(
            _layer(t) for t in targets if _layer(t) != _layer(module)
        )
    layers.pop("package", None)  # (the lazy public names import every layer, nothing imports them)
    assert _cycles(layers) == []


#: The only ``__getattr__`` forwarding: the DuckDB connection (a foreign object we wrap on
#: purpose) and the lazy public names of the package and of ``store``.
FORWARDING = {"vcfzarr_sql.engine.connection", "vcfzarr_sql", "vcfzarr_sql.store"}


def _functions(path: Path) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_getattr_forwards_only_where_a_foreign_object_is_wrapped():
    forwarding = {
        _module_name(path)
        for path in PACKAGE.rglob("*.py")
        for function in _functions(path)
        if function.name == "__getattr__"
    }
    assert forwarding <= FORWARDING, sorted(forwarding - FORWARDING)


def test_no_store_or_chunk_source_is_typed_any():
    untyped = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for function in _functions(path):
            arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
            for argument in arguments:
                if argument.arg in ("store", "source") and (
                    argument.annotation is None or ast.unparse(argument.annotation) == "Any"
                ):
                    untyped.append(f"{_module_name(path)}.{function.name}({argument.arg})")
    assert untyped == []


#: Optional libraries (pyproject extras) and the only modules that may import them.
OPTIONAL = {"matplotlib": {"vcfzarr_sql.qc.report"}, "deflate": {"vcfzarr_sql.converter.text"}}


def _foreign_imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


@pytest.mark.parametrize("library", sorted(OPTIONAL))
def test_optional_libraries_stay_in_their_module(library):
    importers = {_module_name(p) for p in PACKAGE.rglob("*.py") if library in set(_foreign_imports(p))}
    assert importers <= OPTIONAL[library], sorted(importers - OPTIONAL[library])
