"""The house plan as a test: which room may import what (docs/architecture.md, "Rooms").

- app/stichtag/domain: the standard library, blake3 and stichtag.domain only (pure rules, no I/O).
- app/stichtag/services: stichtag.domain, stichtag.ports, stichtag.services and stichtag.audit
  (signing, verifying) only; never a database driver, the index engine, the web framework,
  the models or an adapter room. Use cases see ports.
- app/stichtag/ports/: stichtag.domain, numpy typing, the standard library and each other.
- app/stichtag/cli: the services through stichtag.bootstrap, the domain, settings and logging; never
  the store, the index, the API (``serve`` alone starts the app) or a database driver,
  and no command reaches past the services to ``.store``.
- app/stichtag/client: the API's bodies (stichtag.api.schemas), the log verifier
  (stichtag.audit), the domain, httpx and msgspec; never the server's controllers, so that
  importing the client loads no web framework, database driver, index or model runtime
  (checked on the modules a fresh interpreter loads, too). app/stichtag/api/schemas: msgspec.
- no import cycles between modules of stichtag/.

Each rule is also run against a planted violation, so a checker that silently stopped
finding anything would fail here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app" / "stichtag"
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

DOMAIN_ALLOWED = ("stichtag.domain", "blake3")
SERVICES_ALLOWED = ("stichtag.domain", "stichtag.ports", "stichtag.services", "stichtag.audit",
                    "numpy", "structlog")
PORTS_ALLOWED = ("stichtag.domain", "stichtag.ports", "numpy")
CLI_ALLOWED = ("stichtag.cli", "stichtag.bootstrap", "stichtag.config", "stichtag.logging",
               # the remote commands (--url): the typed client, its transport, its decoder
               "stichtag.client", "httpx", "msgspec",
               # the types the typed client speaks (a check request read from a file)
               "stichtag.api.schemas",
               # ``stichtag mcp``: the MCP server, itself a client of the API, on anyio
               "stichtag.assistant", "anyio",
               "stichtag.domain", "stichtag.services", "stichtag.audit", "stichtag.models.build",
               "rich",
               # offline commands: building and training models needs no services
               "stichtag.training.cli")
SERVE_ALLOWED = (*CLI_ALLOWED, "stichtag.api.app", "uvicorn")
CLIENT_ALLOWED = ("stichtag.client", "stichtag.api.schemas", "stichtag.audit",
                  "stichtag.domain", "httpx", "msgspec")
SCHEMAS_ALLOWED = ("stichtag.api.schemas", "msgspec")
SERVER_ONLY = ("litestar", "uvicorn", "psycopg", "psycopg_pool", "tantivy", "onnxruntime",
               "tokenizers", "numpy", "pgvector")


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a file (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(APP.parent).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # ``from pkg import module`` imports the module (``from stichtag.api import
            # schemas`` is not the API package's controllers)
            base = APP.parent.joinpath(*module.split("."))
            for alias in node.names:
                yield node.lineno, (f"{module}.{alias.name}" if _is_module(base / alias.name)
                                    else module)


def _allowed(module: str, allowed: tuple[str, ...]) -> bool:
    top = module.split(".", maxsplit=1)[0]
    return top in STDLIB or any(module == a or module.startswith(a + ".") for a in allowed)


def violations(files: list[Path], allowed: tuple[str, ...]) -> list[str]:
    """Every import of ``files`` outside ``allowed`` (and the standard library)."""
    return [f"{f.relative_to(APP.parent)}:{line}: imports {module}"
            for f in files for line, module in imports(f) if not _allowed(module, allowed)]


def _room(name: str) -> list[Path]:
    return sorted((APP / name).rglob("*.py"))


def test_the_domain_imports_only_the_standard_library_and_blake3() -> None:
    assert violations(_room("domain"), DOMAIN_ALLOWED) == []


def test_services_see_ports_and_the_domain_only() -> None:
    assert violations(_room("services"), SERVICES_ALLOWED) == []


def test_ports_name_domain_types_only() -> None:
    assert violations(_room("ports"), PORTS_ALLOWED) == []


def test_the_cli_calls_services_only() -> None:
    serve = APP / "cli" / "serve.py"
    commands = [f for f in _room("cli") if f != serve]
    assert violations(commands, CLI_ALLOWED) == []
    assert violations([serve], SERVE_ALLOWED) == []
    assert store_reaches(_room("cli")) == []


def test_the_client_imports_no_server_code() -> None:
    assert violations(_room("client"), CLIENT_ALLOWED) == []
    assert violations(_room("api/schemas"), SCHEMAS_ALLOWED) == []
    assert loaded_server_packages("stichtag.client") == []


def loaded_server_packages(module: str) -> list[str]:
    """The server-only packages a fresh interpreter has loaded after importing ``module``
    (the transitive check the per-file rules cannot make)."""
    probe = ("import importlib, json, sys; importlib.import_module(sys.argv[1]); "
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "sys.argv[2].split(','))))")
    done = subprocess.run([sys.executable, "-c", probe, module, ",".join(SERVER_ONLY)],
                          capture_output=True, text=True, check=True, cwd=APP.parent)
    return sorted({m.split(".")[0] for m in json.loads(done.stdout)})


def test_the_loaded_package_check_finds_the_server() -> None:
    assert {"litestar", "psycopg"} <= set(loaded_server_packages("stichtag.api.app"))


def store_reaches(files: list[Path]) -> list[str]:
    """Every ``<something>.store`` attribute: a command that bypasses the services."""
    return [f"{f.name}:{node.lineno}: .store"
            for f in files for node in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr == "store"]


def test_a_planted_store_reach_is_found(tmp_path: Path) -> None:
    bad = tmp_path / "planted.py"
    bad.write_text("def f(svc):\n    return svc.store.tenancy\n", encoding="utf-8")
    assert len(store_reaches([bad])) == 1


@pytest.mark.parametrize(("room", "allowed", "planted"), [
    ("domain", DOMAIN_ALLOWED, "import psycopg\n"),
    ("domain", DOMAIN_ALLOWED, "from stichtag.store.pg import PgStore\n"),
    ("services", SERVICES_ALLOWED, "from psycopg.rows import dict_row\n"),
    ("services", SERVICES_ALLOWED, "import tantivy\n"),
    ("services", SERVICES_ALLOWED, "from litestar import get\n"),
    ("services", SERVICES_ALLOWED, "from stichtag.store.sqlfiles import query\n"),
    ("services", SERVICES_ALLOWED, "from ..store import pg\n"),
    ("cli", CLI_ALLOWED, "from stichtag.store.pg import PgStore\n"),
    ("cli", CLI_ALLOWED, "from stichtag.api.changes import changes_response\n"),
    ("cli", CLI_ALLOWED, "import psycopg\n"),
    ("client", CLIENT_ALLOWED, "from stichtag.api.log import CheckpointOut\n"),
    ("client", CLIENT_ALLOWED, "import litestar\n"),
])
def test_a_planted_violation_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      room: str, allowed: tuple[str, ...],
                                      planted: str) -> None:
    fake_app = tmp_path / "stichtag"
    (fake_app / room).mkdir(parents=True)
    bad = fake_app / room / "planted.py"
    bad.write_text(f'"""A planted violation."""\n{planted}', encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "APP", fake_app)
    found = violations([bad], allowed)
    assert len(found) == 1 and "planted.py:2" in found[0], found


def module_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the app modules it imports at module level (not inside functions)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps: set[str] = set()
        for node in tree.body:  # top level only: imports inside functions break cycles
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module.startswith(root.name):
                    # ``from pkg import module`` depends on the module, not on pkg itself
                    base = root.parent.joinpath(*node.module.split("."))
                    deps.update(f"{node.module}.{a.name}" if _is_module(base / a.name)
                                else node.module for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith(root.name))
        graph[name] = deps
    return graph


def _is_module(path: Path) -> bool:
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles (each as a path that returns to its start)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            if state.get(dep) == 1:
                found.append([*path[path.index(dep):], dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_no_import_cycles_in_app() -> None:
    assert cycles(module_graph(APP)) == []


def test_a_planted_cycle_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "stichtag"
    pkg.mkdir()
    (pkg / "a.py").write_text("from stichtag.b import x\n", encoding="utf-8")
    (pkg / "b.py").write_text("from stichtag.a import y\n", encoding="utf-8")
    assert cycles(module_graph(pkg)) == [["stichtag.a", "stichtag.b", "stichtag.a"]]
