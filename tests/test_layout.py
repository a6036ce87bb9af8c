"""The code layout rules the project keeps (DESIGN §11, docs/working/architecture.md): short functions, short
modules, no import cycles, one module that sends Celery messages, no private name used across modules, and the
packages that run outside Django free of it. Read from the source with ``ast``; only the last rule imports, in
fresh interpreters."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Our code: everything but tests, migrations and virtual environments.
#: Top-level folders that are not our code: walked not at all, since var/ can hold a container root file system whose
#: /proc entries vanish under the walk (a base image build beside the suite failed its collection).
_NOT_OURS = {"tests", "migrations", ".venv", ".venv-metaworld", ".venv-libero", ".venv-lerobot", "var", "site",
             "node_modules", "screenshots"}
SOURCES = sorted(
    p for top in ROOT.iterdir() if top.name not in _NOT_OURS and not top.name.startswith(".")
    for p in ([top] if top.is_file() and top.suffix == ".py" else top.rglob("*.py") if top.is_dir() else [])
    if not any(part in _NOT_OURS or part.startswith(".") for part in p.relative_to(ROOT).parts)
)
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 450
#: The one module that calls ``.delay``/``.apply_async`` (and ``delay_on_commit``).
DISPATCH_MODULE = "evaluations/dispatch.py"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def long_functions() -> list[str]:
    """``path:line name (N lines)`` for every function longer than MAX_FUNCTION_LINES (decorators excluded)."""
    out = []
    for path in SOURCES:
        for fn in _functions(ast.parse(path.read_text())):
            length = fn.end_lineno - fn.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} ({length} lines)")
    return out


def long_modules() -> list[str]:
    out = []
    for path in SOURCES:
        n = len(path.read_text().splitlines())
        if n > MAX_MODULE_LINES:
            out.append(f"{path.relative_to(ROOT)} ({n} lines)")
    return out


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports anywhere in its body (function-level imports included)."""
    names = {_module_name(p): p for p in SOURCES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                # The longest project module the import names (``pkg.mod.func`` → ``pkg.mod``).
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def import_cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted.

    A package's ``__init__`` importing its own submodules is not a cycle worth reporting, so edges from a
    package to its children are left out."""
    graph = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in import_graph().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def message_senders() -> list[str]:
    """Modules that call ``.delay(``, ``.delay_on_commit(`` or ``.apply_async(``."""
    out = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "delay", "delay_on_commit", "apply_async"
            ):
                out.append(str(path.relative_to(ROOT)))
                break
    return out


def unresolved_imports() -> list[str]:
    """``path:line module`` for every import of a project module (relative, or absolute under one of our top-level
    packages) that names no module or package in this checkout. An installed copy of the project elsewhere can
    satisfy such an import at run time and hide it; a fresh clone cannot."""
    ours = {p.relative_to(ROOT).parts[0] for p in SOURCES if len(p.relative_to(ROOT).parts) > 1} | {"tests"}
    files = SOURCES + sorted(p for p in (ROOT / "tests").rglob("*.py"))
    out = []
    for path in files:
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ours:
                base = node.module
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in ours and not _exists(alias.name):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
                continue
            else:
                continue
            if not _exists(base):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {base}")
            elif (ROOT.joinpath(*base.split(".")) / "__init__.py").is_file():
                # ``from package import name``: a submodule, or a name the package's __init__ defines (a module
                # moved into a folder of its own left ``from . import libero_env`` naming nothing).
                for alias in node.names:
                    if alias.name != "*" and not _exists(f"{base}.{alias.name}") and alias.name not in _names(base):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {base}.{alias.name}")
    return out


def _names(module: str) -> set[str]:
    """Top-level names a project module defines or imports, following its ``from .x import *`` one level per step."""
    path = ROOT.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" and isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                    names |= _names(f"{package}.{node.module}")
                elif alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_import_of_our_code_names_a_module_in_this_checkout():
    assert unresolved_imports() == []


def test_it_keeps_functions_short():
    assert long_functions() == []


def test_it_keeps_modules_short():
    assert long_modules() == []


def test_it_has_no_import_cycles():
    assert import_cycles() == []


def test_it_sends_celery_messages_from_one_module():
    assert message_senders() == [DISPATCH_MODULE]


if __name__ == "__main__":
    print("long functions:", *long_functions(), sep="\n  ")
    print("long modules:", *long_modules(), sep="\n  ")
    print("import cycles:", *import_cycles(), sep="\n  ")
    print("message senders:", *message_senders(), sep="\n  ")
    print("unresolved imports:", *unresolved_imports(), sep="\n  ")


#: The read side's one home (DESIGN §11): scores, agent rollups, comparisons, regressions and charts.
READ_SIDE = "evaluations.reports"
READ_MODULES = {"scores", "agents", "comparisons", "regressions", "charts"}


def test_the_read_side_has_one_home():
    graph = import_graph()
    package = {name.rpartition(".")[2] for name in graph if name.startswith(READ_SIDE + ".")}
    assert READ_MODULES <= package
    loose = {"reports", "agent_reports", "comparisons", "regressions", "charts"} & {
        name.rpartition(".")[2] for name in graph if name.count(".") == 1 and name.startswith("evaluations.")}
    assert not loose - {"reports"}, f"read-side modules at the app root: {sorted(loose)}"
    # api/ and views/ both read through the package (neither keeps a copy of its own).
    for side in ("evaluations.api", "evaluations.views"):
        users = {name for name, edges in graph.items() if name.startswith(side) and any(e.startswith(READ_SIDE) for e in edges)}
        assert users, f"{side} does not import {READ_SIDE}"


#: Benchmarks of the prebuilt catalog with more than one module: each lives in a folder of its own
#: (``evaluations/prebuilt/<benchmark>/``), so a newcomer finds its env, episodes, policies and checks in one place.
PREBUILT = ROOT / "evaluations" / "prebuilt"
BENCHMARK_FOLDERS = {"libero", "metaworld", "miniwob", "shop"}


def loose_benchmark_modules() -> list[str]:
    """Modules directly under ``evaluations/prebuilt/`` named after a benchmark that has a folder (``libero_env.py``,
    ``smolvla.py``: SmolVLA is served on LIBERO), or a benchmark folder missing."""
    out = [f"{name}/ missing" for name in sorted(BENCHMARK_FOLDERS) if not (PREBUILT / name / "__init__.py").is_file()]
    for path in sorted(PREBUILT.glob("*.py")):
        stem = path.stem
        if stem == "smolvla" or any(stem == name or stem.startswith(name + "_") for name in BENCHMARK_FOLDERS):
            out.append(str(path.relative_to(ROOT)))
    return out


def test_each_benchmark_has_a_folder_of_its_own():
    assert loose_benchmark_modules() == []


def private_names_across_modules(files: list[Path] | None = None) -> list[str]:
    """``path:line module._name`` for every private name (one leading underscore) of one of our modules used from
    another: ``from our.module import _name``, or ``alias._name`` where ``alias`` is one of our modules imported.
    A private name is its module's own; a name another module needs is public."""
    ours = {"evaluations", "rlmesh_site"}
    out = []
    for path in files or SOURCES:
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        modules: set[str] = set()  # local names bound to our modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                if base.split(".")[0] not in ours:
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {base}.{alias.name}")
                    elif _exists(f"{base}.{alias.name}"):
                        modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                modules |= {a.asname for a in node.names if a.asname and a.name.split(".")[0] in ours}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    return out


def test_no_private_name_crosses_a_module():
    assert private_names_across_modules() == []


def test_the_experts_tests_use_public_names_only():
    """The LIBERO expert's tests import what they test: its modules' public names, none through a re-export."""
    files = sorted((ROOT / "tests").glob("**/test_libero_expert*.py"))
    assert files and private_names_across_modules(files) == []
    expert = ROOT / "evaluations" / "prebuilt" / "libero" / "expert"
    assert ast.get_docstring(ast.parse((expert / "__init__.py").read_text()))
    assert [n for n in ast.parse((expert / "__init__.py").read_text()).body if not isinstance(n, ast.Expr)] == []


#: Packages and modules that run outside Django (the env and policy servers ``rlmesh.serve`` starts, the LIBERO
#: zygote, the pure domain rules): importing one must not load Django (docs/working/architecture.md).
OUTSIDE_DJANGO = (
    "evaluations.domain", "evaluations.prebuilt.envs", "evaluations.prebuilt.models", "evaluations.prebuilt.policies",
    "evaluations.prebuilt.robotics", "evaluations.prebuilt.browser", "evaluations.prebuilt.libero",
    "evaluations.prebuilt.libero.zygote", "evaluations.prebuilt.libero.adopt", "evaluations.prebuilt.libero.expert",
    "evaluations.prebuilt.lerobot", "evaluations.prebuilt.openpi", "evaluations.prebuilt.metaworld",
    "evaluations.prebuilt.miniwob",
    "evaluations.prebuilt.shop", "evaluations.agents.bridge", "evaluations.runtime.forkchild",
)


def _outside_django_modules() -> list[str]:
    """Every module of :data:`OUTSIDE_DJANGO` (a package: each of its modules) that imports in this interpreter (the
    LIBERO env and the LeRobot policies' heavy imports happen inside their functions)."""
    names = set()
    for entry in OUTSIDE_DJANGO:
        path = ROOT.joinpath(*entry.split("."))
        if path.is_dir():
            names |= {_module_name(p) for p in path.rglob("*.py")}
        else:
            names.add(entry)
    return sorted(names)


def test_the_packages_that_run_outside_django_do_not_load_it():
    """Each in a fresh interpreter without ``DJANGO_SETTINGS_MODULE``: a module that loads Django (``domain/outcomes``
    once did, through ``choices``) fails here with the chain that brought it in."""
    import os
    import subprocess
    import sys

    probe = ("import importlib, sys\nfor name in sys.argv[1:]:\n"
             "    importlib.import_module(name)\n"
             "    if 'django' in sys.modules:\n        print('DJANGO', name)\n        break\n")
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    # LIBERO's env needs its own venv's packages (robosuite): the modules that import them at their top are left out.
    needs_libero = {"evaluations.prebuilt.libero.env", "evaluations.prebuilt.libero.reset",
                    "evaluations.prebuilt.libero.stepping"}
    modules = [m for m in _outside_django_modules() if m not in needs_libero]
    assert len(modules) > 40
    for entry in OUTSIDE_DJANGO:  # one interpreter per entry: one loading Django does not hide another
        group = [m for m in modules if m == entry or m.startswith(entry + ".")]
        proc = subprocess.run([sys.executable, "-c", probe, *group], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0 and "DJANGO" not in proc.stdout, (entry, proc.stdout, proc.stderr[-2000:])
