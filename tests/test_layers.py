"""The project's import structure, read from the source with ``ast`` (nothing is imported).

Every .py under app.py, common/, data/, core/, annotation/, ui/ and bench/ is walked, imports inside
functions included and ``if TYPE_CHECKING:`` blocks left out (they never run). The rules:

- no import cycle between project modules, and none between the top-level packages;
- no import from a lower layer to a higher one; low to high:
  common < data < core < annotation < ui < app (app.py) < bench (bench may import anything);
- nothing but ui/ imports gradio;
- common/ imports nothing outside the standard library;
- inside core/, the rooms keep their doors: core.text imports nothing else of core,
  core.retrieval never imports core.methods, core.article never imports core.retrieval;
- inside annotation/, neither the annotator's side (annotation.voting) nor what the votes say
  (annotation.results) imports the study admin's work (annotation.admin).

Each failure names the module, the import (with its line) and the rule. The last tests run the
same checks on a small made-up tree, so a check that cannot fail would show.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", "data", "core", "annotation", "ui", "bench")
LAYERS = ("common", "data", "core", "annotation", "ui", "app", "bench")  # low to high
RANK = {name: rank for rank, name in enumerate(LAYERS)}
LAYER_RULE = "layers, low to high: " + " < ".join(LAYERS)
UI_ONLY = ("gradio",)
#: Libraries one module owns: the HTTP server (who may reach which app) and password hashing stay
#: in one place each, so their rules are read in one file. The MCP SDK too: an MCP server of its own
#: elsewhere would be a way around the login that ``ui.server`` asks of Gradio's (ui/mcp_tools.py).
OWNED = {"fastapi": "ui.server", "uvicorn": "ui.server", "starlette": "ui.server", "mcp": "ui.server",
         "argon2": "annotation.accounts"}
#: (room, what it must not import, why): the rooms of core/ and the doors they keep shut.
ROOMS = (
    ("core.text", "core", "core.text (prompts, guards, fencing, tokens) sits under the rest of core and imports "
                          "nothing else of it: move what it needs into core.text, or pass it in"),
    ("core.retrieval", "core.methods", "core.retrieval finds sources for every method and knows none of them: "
                                       "pass what it needs in from the method"),
    ("core.article", "core.retrieval", "core.article builds the article from a run's events, not from pages or "
                                       "search: take it from the events, or move the shared part to core.text"),
    ("annotation.voting", "annotation.admin", "annotation.voting is the annotator's side and knows nothing of the "
                                              "study admin's work: move what both need to a shared module of "
                                              "annotation/, or have the admin's room call the annotators' side"),
    ("annotation.results", "annotation.admin", "annotation.results says what the votes say and knows nothing of "
                                               "the admin's work: move what both need to a shared module, or "
                                               "have the admin's room call it"),
)


@dataclass(frozen=True)
class Import:
    """``module`` (a project module) imports ``target`` (dotted, as written, resolved if relative)
    at ``line``; ``text`` is the statement as written."""

    module: str
    target: str
    line: int
    text: str

    def where(self) -> str:
        return f"{self.module} (line {self.line}: `{self.text}`)"


# -- reading the tree ---------------------------------------------------------------------------
def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for app.py and every .py under the packages (a package is
    named by its ``__init__.py``)."""
    modules = {"app": root / "app.py"} if (root / "app.py").is_file() else {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST):
    """Every import statement in ``tree``, at any depth, in source order, except inside
    ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(reversed(node.orelse))
            continue
        todo.extend(reversed(list(ast.iter_child_nodes(node))))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The imports of one module, each resolved to the deepest project module it names (so
    ``from core.methods import base`` is core.methods.base); other imports keep their name."""
    source = path.read_text(encoding="utf-8")
    # its lines as ast numbers them (str.splitlines also splits at a form feed), in UTF-8: ast's offsets count bytes
    lines = [line.encode("utf-8") for line in re.split(r"\r\n|\r|\n", source)]
    is_package = path.name == "__init__.py"
    found = []
    for node in _statements(ast.parse(source, filename=str(path))):
        # the statement's own text, as ast.get_source_segment gives it; that splits the whole
        # source into lines again for every statement (7 of this walk's 7.4 CPU-s)
        text = b" ".join(lines[node.lineno - 1: node.end_lineno])
        text = text[node.col_offset: len(text) - len(lines[node.end_lineno - 1]) + node.end_col_offset]
        text = " ".join(text.decode("utf-8").split())
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno, text) for alias in node.names]
            continue
        base = _absolute(module, is_package, node.module, node.level)
        for alias in node.names:
            candidate = f"{base}.{alias.name}" if base else alias.name
            found.append(Import(module, candidate if candidate in modules else base, node.lineno, text))
    return found


def _absolute(module: str, is_package: bool, name: str | None, level: int) -> str:
    """The absolute module a (possibly relative) ``from`` import names."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    package = parts if is_package else parts[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def project_target(target: str, modules: dict[str, Path]) -> str | None:
    """The project module ``target`` names (its longest known prefix), or None for another library."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in modules:
            return name
    return None


def package_of(module: str) -> str:
    return module.split(".", 1)[0]


def all_imports(root: Path = ROOT) -> tuple[dict[str, Path], list[Import]]:
    modules = project_modules(root)
    return modules, [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


# -- the checks ---------------------------------------------------------------------------------
def cycles(edges: dict[tuple[str, str], Import]) -> list[tuple[list[str], list[str]]]:
    """Per strongly connected part of the graph ``edges`` ((from, to) -> an import that makes it):
    one shortest cycle (first node repeated at the end) and all the part's nodes. Self-imports count."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    found = []
    for part in _strongly_connected(graph):
        start = min(part)
        if len(part) > 1 or start in graph[start]:
            found.append((_shortest_cycle(graph, part, start), sorted(part)))
    return sorted(found)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep trees)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.add(member)
                        if member == node:
                            break
                    parts.append(part)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return parts


def _shortest_cycle(graph: dict[str, set[str]], part: set[str], start: str) -> list[str]:
    """The shortest path start -> ... -> start inside ``part`` (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & part):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start} in {sorted(part)}")  # a strongly connected part has one


def module_edges(modules: dict[str, Path], imports: list[Import]) -> dict[tuple[str, str], Import]:
    edges: dict[tuple[str, str], Import] = {}
    for imp in imports:
        target = project_target(imp.target, modules)
        if target is not None:
            edges.setdefault((imp.module, target), imp)
    return edges


def package_edges(modules: dict[str, Path], imports: list[Import]) -> dict[tuple[str, str], Import]:
    edges: dict[tuple[str, str], Import] = {}
    for (a, b), imp in module_edges(modules, imports).items():
        if package_of(a) != package_of(b):
            edges.setdefault((package_of(a), package_of(b)), imp)
    return edges


def describe_cycle(cycle: list[str], edges: dict[tuple[str, str], Import]) -> str:
    steps = "; ".join(edges[(a, b)].where() for a, b in zip(cycle, cycle[1:], strict=False))
    return f"import cycle {' -> '.join(cycle)}: {steps}"


def cycle_problems(edges: dict[tuple[str, str], Import]) -> list[str]:
    problems = []
    for cycle, members in cycles(edges):
        more = f" (one of the cycles among {', '.join(members)})" if len(members) > len(cycle) - 1 else ""
        problems.append(describe_cycle(cycle, edges) + more + ". Break it: move what both sides need into "
                        "a lower module, or pass it in as a parameter.")
    return problems


def layer_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    problems = []
    for (a, b), imp in sorted(module_edges(modules, imports).items()):
        low, high = package_of(a), package_of(b)
        if RANK[high] > RANK[low]:
            problems.append(f"{imp.where()} imports {b}: {low} is below {high} ({LAYER_RULE}). "
                            f"Move what {a} needs down to {low} or a lower layer, or pass it in from above.")
    return problems


def gradio_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    return [f"{imp.where()} imports {imp.target}: only ui/ (and bench/, above it) may import {', '.join(UI_ONLY)} "
            "(the layers below it serve the CLI and the tests too). Move the Gradio code to ui/."
            for imp in imports if imp.target.split(".")[0] in UI_ONLY
            and package_of(imp.module) not in ("ui", "bench")]  # bench measures the UI too: it sits above it


def owned_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    return [f"{imp.where()} imports {imp.target}: only {OWNED[top]} may import {top} (one place holds "
            f"{'who may reach which app' if top != 'argon2' else 'password hashing'}). Call {OWNED[top]} instead."
            for imp in imports if (top := imp.target.split(".")[0]) in OWNED and imp.module != OWNED[top]
            and package_of(imp.module) != "bench"]


def stdlib_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    problems = []
    for imp in imports:
        top = imp.target.split(".")[0]
        if package_of(imp.module) != "common" or top == "common" or top in sys.stdlib_module_names:
            continue
        kind = "a project module" if project_target(imp.target, modules) else "not in the standard library"
        problems.append(f"{imp.where()} imports {imp.target}, {kind}: common/ is the bottom layer and uses "
                        "the standard library only. Move the code that needs it up to data/ or core/.")
    return problems


def _inside(module: str, room: str) -> bool:
    return module == room or module.startswith(room + ".")


def room_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    problems = []
    for (a, b), imp in sorted(module_edges(modules, imports).items()):
        for room, shut, why in ROOMS:
            if _inside(a, room) and _inside(b, shut) and not _inside(b, room):
                problems.append(f"{imp.where()} imports {b}: {why}.")
    return problems


#: core.methods' shared modules: the registry (``core.methods``), ``base`` and ``helpers``; the others
#: are one method (or family) each, reached by the rest of the project through the registry only.
METHOD_SHARED = ("core.methods", "core.methods.base", "core.methods.helpers")


def registry_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    problems = []
    for (a, b), imp in sorted(module_edges(modules, imports).items()):
        if _inside(b, "core.methods") and b not in METHOD_SHARED and not _inside(a, "core.methods"):
            problems.append(f"{imp.where()} imports {b}, one method's own module: the rest of the project "
                            "reaches methods through the registry (core.methods.METHODS and what a method "
                            "declares when it registers, e.g. MethodInfo.redo). Declare it there instead.")
    return problems


#: The data modules of the arena's subsystems, reached by the front ends (ui/, app.py) through
#: their annotation services only (``annotation.voting.arena.Arena``, ``annotation.results``,
#: ``annotation.admin``, ``annotation.campaigns``, ``annotation.accounts``): the services hold
#: the invariants (blind pairs, quotas, overlap).
SERVICE_DATA = ("data.arena", "data.campaigns", "data.accounts")


def service_problems(modules: dict[str, Path], imports: list[Import]) -> list[str]:
    problems = []
    for (a, b), imp in sorted(module_edges(modules, imports).items()):
        if package_of(a) in ("ui", "app") and any(_inside(b, d) for d in SERVICE_DATA):
            problems.append(f"{imp.where()} imports {b}: front ends reach the arena, campaigns and accounts "
                            "through their annotation services, which keep their invariants. Call the service "
                            "(or have it re-export the constant).")
    return problems


def report(problems: list[str]) -> str:
    return f"{len(problems)} problem(s):\n  " + "\n  ".join(problems)


# -- the project --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def project():
    return all_imports(ROOT)


def test_the_walk_finds_the_project(project):
    modules, imports = project
    assert {"app", "common", "core", "data", "ui", "annotation"} <= set(modules)
    assert any(imp.module == "app" and package_of(imp.target) == "ui" for imp in imports)


def test_no_import_cycle_between_modules(project):
    problems = cycle_problems(module_edges(*project))
    assert not problems, report(problems)


def test_no_import_cycle_between_packages(project):
    problems = cycle_problems(package_edges(*project))
    assert not problems, report(problems)


def test_no_import_from_a_lower_layer_to_a_higher_one(project):
    problems = layer_problems(*project)
    assert not problems, report(problems)


def test_only_ui_imports_gradio(project):
    problems = gradio_problems(*project)
    assert not problems, report(problems)


def test_the_server_and_password_hashing_each_have_one_owner(project):
    problems = owned_problems(*project)
    assert not problems, report(problems)


def test_methods_are_reached_through_the_registry(project):
    problems = registry_problems(*project)
    assert not problems, report(problems)


def test_front_ends_reach_the_arenas_data_through_its_services(project):
    problems = service_problems(*project)
    assert not problems, report(problems)


def test_the_service_rule_catches_its_break(tmp_path):
    tree = CLEAN | {"data/campaigns.py": "", "annotation/campaigns.py": "from data import campaigns\n",
                    "ui/admin.py": "from data.campaigns import coverage\n", "app.py": "import data.campaigns\n"}
    problems = service_problems(*all_imports(write_tree(tmp_path, tree)))
    assert [p.split(" (")[0] for p in problems] == ["app", "ui.admin"], problems
    assert "through their annotation services" in problems[0]


def test_the_registry_rule_catches_its_break(tmp_path):
    tree = CLEAN | {"core/methods/__init__.py": "from core.methods import rat\n", "core/methods/rat.py": "",
                    "core/methods/base.py": "", "core/runner.py": "from core.methods.rat import redo\n",
                    "core/live.py": "from core.methods.base import METHODS\n"}
    problems = registry_problems(*all_imports(write_tree(tmp_path, tree)))
    assert [p.split(" (")[0] for p in problems] == ["core.runner"], problems
    assert "one method's own module" in problems[0]


def test_the_owner_rule_catches_its_break(tmp_path):
    tree = CLEAN | {"ui/server.py": "import uvicorn\n", "ui/other.py": "from fastapi import Request\n",
                    "data/hashing.py": "import argon2\n", "ui/tools.py": "from mcp.server.fastmcp import FastMCP\n"}
    modules, imports = all_imports(write_tree(tmp_path, tree))
    problems = owned_problems(modules, imports)
    assert sorted(p.split(" (")[0] for p in problems) == ["data.hashing", "ui.other", "ui.tools"], problems
    assert all("only ui.server may import fastapi" in p or "only annotation.accounts may import argon2" in p
               or "only ui.server may import mcp" in p for p in problems)


def test_common_uses_only_the_standard_library(project):
    problems = stdlib_problems(*project)
    assert not problems, report(problems)


def test_the_rooms_of_core_keep_their_doors(project):
    problems = room_problems(*project)
    assert not problems, report(problems)


def test_core_has_its_three_rooms(project):
    modules, _ = project
    assert {"core.text", "core.retrieval", "core.article"} <= set(modules)


# -- the checks on a made-up tree ---------------------------------------------------------------
def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CLEAN = {
    "app.py": "import ui.tabs\n",
    "common/__init__.py": "",
    "common/types.py": "from __future__ import annotations\nimport dataclasses\n",
    "data/__init__.py": "",
    "data/store.py": "from common import types\n",
    "core/__init__.py": "",
    "core/runner.py": ("from typing import TYPE_CHECKING\nfrom . import steps\n"
                       "if TYPE_CHECKING:\n    from ui.tabs import Tab\n"),
    "core/steps.py": "from ..data.store import x\n",
    "core/text/__init__.py": "",
    "core/text/prompts.py": "from . import tokens\nfrom common import types\n",
    "core/text/tokens.py": "",
    "core/retrieval/__init__.py": "",
    "core/retrieval/search.py": "from core.text import tokens\nfrom core import steps\n",
    "core/article/__init__.py": "",
    "core/article/markdown.py": "from core.text.prompts import x\nimport core.steps\n",
    "core/methods/__init__.py": "",
    "core/methods/rat.py": "from core.retrieval import search\nfrom core.article import markdown\n",
    "annotation/__init__.py": "",
    "ui/__init__.py": "",
    "ui/tabs.py": "import gradio as gr\nfrom core.runner import Runner\n",
}


def test_a_clean_tree_passes(tmp_path):
    modules, imports = all_imports(write_tree(tmp_path, CLEAN))
    assert cycle_problems(module_edges(modules, imports)) == []
    assert cycle_problems(package_edges(modules, imports)) == []
    assert layer_problems(modules, imports) == []  # the TYPE_CHECKING import of ui is left out
    assert gradio_problems(modules, imports) == [] and stdlib_problems(modules, imports) == []
    assert room_problems(modules, imports) == []
    targets = {(imp.module, project_target(imp.target, modules)) for imp in imports}
    assert {("core.runner", "core.steps"), ("core.steps", "data.store"), ("data.store", "common.types")} <= targets


def test_each_rule_catches_its_break(tmp_path):
    broken = CLEAN | {
        "data/store.py": "from common import types\n\ndef later():\n    from core.runner import Runner\n",
        "core/steps.py": "import core.runner\nfrom ..data.store import x\n",
        "common/types.py": "import numpy\nimport gradio\n",
    }
    modules, imports = all_imports(write_tree(tmp_path, broken))

    module_cycles = cycle_problems(module_edges(modules, imports))
    assert len(module_cycles) == 1
    assert module_cycles[0].startswith("import cycle core.runner -> core.steps -> core.runner:")
    assert "core.steps (line 1: `import core.runner`)" in module_cycles[0]

    package_cycles = cycle_problems(package_edges(modules, imports))
    assert [p.split(":")[0] for p in package_cycles] == ["import cycle core -> data -> core"]

    upward = layer_problems(modules, imports)
    assert len(upward) == 1
    assert upward[0].startswith("data.store (line 4: `from core.runner import Runner`) imports core.runner: "
                                "data is below core")

    gradio = gradio_problems(modules, imports)
    assert len(gradio) == 1 and gradio[0].startswith("common.types (line 2: `import gradio`)")
    assert "only ui/ (and bench/, above it) may import gradio" in gradio[0]

    assert room_problems(modules, imports) == []

    outside = stdlib_problems(modules, imports)
    assert [p.split(",")[0] for p in outside] == ["common.types (line 1: `import numpy`) imports numpy",
                                                  "common.types (line 2: `import gradio`) imports gradio"]


def test_a_cycle_names_every_module_caught_in_it(tmp_path):
    tree = CLEAN | {"core/a.py": "import core.b\nimport core.c\n", "core/b.py": "import core.a\n",
                    "core/c.py": "from core import b\n"}
    modules, imports = all_imports(write_tree(tmp_path, tree))
    [problem] = cycle_problems(module_edges(modules, imports))
    assert problem.startswith("import cycle core.a -> core.b -> core.a: core.a (line 1: `import core.b`); "
                              "core.b (line 1: `import core.a`) (one of the cycles among core.a, core.b, core.c)")


def test_a_module_importing_itself_is_a_cycle(tmp_path):
    modules, imports = all_imports(write_tree(tmp_path, CLEAN | {"core/steps.py": "from core import steps\n"}))
    assert [p.split(":")[0] for p in cycle_problems(module_edges(modules, imports))] == [
        "import cycle core.steps -> core.steps"]


def test_each_room_rule_catches_its_break(tmp_path):
    broken = CLEAN | {
        "core/text/prompts.py": "from . import tokens\nfrom core.steps import x\n",
        "core/retrieval/search.py": "from core.text import tokens\n\ndef later():\n    from core.methods import rat\n",
        "core/article/markdown.py": "from core.retrieval.search import x\n",
        "core/methods/rat.py": "",
    }
    problems = room_problems(*all_imports(write_tree(tmp_path, broken)))
    assert [p.split(":")[0] for p in problems] == [
        "core.article.markdown (line 1",
        "core.retrieval.search (line 4",
        "core.text.prompts (line 2",
    ]
    assert "core.article builds the article from a run's events" in problems[0]
    assert "imports core.methods.rat: core.retrieval finds sources" in problems[1]
    assert "imports core.steps: core.text (prompts, guards, fencing, tokens)" in problems[2]


def test_annotation_has_its_three_rooms_and_the_annotators_side_knows_no_admin_work(project, tmp_path):
    """Issue 42, item 1: annotation/ by whom it serves; the rule proves it can fail."""
    modules, _ = project
    assert {"annotation.voting.arena", "annotation.voting.checks", "annotation.voting.limits",
            "annotation.voting.shown", "annotation.results.results", "annotation.admin.admin"} <= set(modules)
    broken = CLEAN | {
        "annotation/voting/__init__.py": "",
        "annotation/voting/arena.py": "from annotation.admin import dataset\n",
        "annotation/results/__init__.py": "",
        "annotation/results/board.py": "def later():\n    import annotation.admin.judge\n",
        "annotation/admin/__init__.py": "",
        "annotation/admin/dataset.py": "from annotation.voting import arena\nfrom annotation.results import board\n",
        "annotation/admin/judge.py": "",
    }
    problems = room_problems(*all_imports(write_tree(tmp_path, broken)))
    assert [p.split(":")[0] for p in problems] == ["annotation.results.board (line 2",
                                                   "annotation.voting.arena (line 1"]
    assert "annotation.voting is the annotator's side" in problems[1]


# -- README's Layout, drawn from the tree -----------------------------------------------------------
def layout_problems(readme: str, root: Path = ROOT) -> list[str]:
    """Where README.md's "## Layout" block and the tree disagree: each package (a folder with an
    ``__init__.py``) of PACKAGES has its row (``name/`` at the start of a line, indented two spaces
    per level below its top package), and each row names a folder that is there."""
    section = readme.split("\n## Layout", 1)[-1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1] if section.count("```") >= 2 else ""
    rows, stack = set(), []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        word = line.strip().split(" ", 1)[0]
        if word.endswith("/") and indent % 2 == 0 and indent < 2 * 4:  # a row, not a description's line
            stack[indent // 2:] = [word.rstrip("/")]
            rows.add("/".join(stack))
    packages = {str(p.parent.relative_to(root)) for top in PACKAGES for p in (root / top).rglob("__init__.py")}
    problems = [f"README's Layout has no row for {package}/" for package in sorted(packages) if package not in rows]
    problems += [f"README's Layout names {row}/, which is not in the tree" for row in sorted(rows)
                 if not (root / row).is_dir()]
    return problems


def test_readmes_layout_has_a_row_for_each_package_and_none_for_a_missing_one():
    assert layout_problems((ROOT / "README.md").read_text(encoding="utf-8")) == []


def test_the_layout_rule_catches_its_break(tmp_path):
    for folder in ("core", "core/text", "ui"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    readme = "## Layout\n\n```\ncore/         text\n  text/       words\n  gone/       was here\n```\n## Next\n"
    assert layout_problems(readme, tmp_path) == ["README's Layout has no row for ui/",
                                                 "README's Layout names core/gone/, which is not in the tree"]


def test_a_problem_quotes_its_statement_as_written_across_lines_and_after_a_form_feed(tmp_path):
    """The text a report quotes is the statement's own (ast's lines and UTF-8 offsets), also for
    a statement over several lines, one after a form feed and one after non-ASCII text."""
    source = ("x = 'é'; from core.steps import (a,\n    b)  # two lines\n\f\n"
              "y = 'ü'; from core.runner import Runner  # after a form feed\n")
    _, imports = all_imports(write_tree(tmp_path, CLEAN | {"core/text/prompts.py": source}))
    assert [(i.line, i.text) for i in imports if i.module == "core.text.prompts"] == [
        (1, "from core.steps import (a, b)"), (1, "from core.steps import (a, b)"),  # (one per name)
        (4, "from core.runner import Runner")]
