"""The distribution as a user installs it: one import package ``stichtag``, no top-level ``app``.

``python -m build`` makes the wheel and the sdist from this checkout (no build isolation:
the machine may be offline apart from the registries, and setuptools is already in the
development environment). The wheel goes into a fresh virtual environment created for the
test, without the repository on ``sys.path``; the third-party dependencies are lent from
the development environment by a ``.pth`` line, because downloading them again would only
test the registry. The development environment's own editable hook for ``stichtag`` is a
``.pth`` file inside that directory, and ``.pth`` files of a directory added that way are
not executed, so the only ``stichtag`` the fresh environment can import is the wheel's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # build copies the tree to a temporary directory for the sdist, then builds the wheel
    # from that sdist: what a user gets from either is the same.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                    str(REPO)], check=True, capture_output=True, text=True, timeout=600)
    return out


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_the_wheel_holds_one_package_named_stichtag(dist: Path) -> None:
    names = zipfile.ZipFile(_one(dist, "stichtag-*.whl")).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"stichtag", next(t for t in tops if t.endswith(".dist-info"))}, tops
    # what the server needs at run time travels with the package, not beside the checkout
    assert any(n.startswith("stichtag/migrations/0001_") for n in names)
    assert any(n.startswith("stichtag/store/queries/") and n.endswith(".sql") for n in names)
    assert any(n.startswith("stichtag/console/static/") for n in names)
    assert any(n.startswith("stichtag/demo/corpus/") for n in names)
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "stichtag = stichtag.cli:main" in zipfile.ZipFile(
        _one(dist, "stichtag-*.whl")).read(entry).decode()


def test_the_sdist_rebuilds_the_same_package(dist: Path) -> None:
    with tarfile.open(_one(dist, "stichtag-*.tar.gz")) as sdist:
        names = sdist.getnames()
    # the checkout's layout: app/ as the source root, migrations/ at the top
    assert any(n.endswith("/app/stichtag/__init__.py") for n in names), names[:10]
    assert any(n.endswith("/migrations/0001_core.sql") and "/app/" not in n for n in names)
    assert any(n.endswith("/setup.py") for n in names)


def test_a_clean_environment_runs_the_command_and_imports_the_client(
        dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", "--no-index", str(_one(dist, "stichtag-*.whl"))],
                   check=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], check=True, capture_output=True, text=True)
    Path(site.stdout.strip(), "borrowed-dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), check=False, cwd=outside, env=env,
                              capture_output=True, text=True, timeout=120)

    helped = run(str(venv / "bin" / "stichtag"), "--help")
    assert helped.returncode == 0, helped.stderr
    assert "usage: stichtag" in helped.stdout
    imported = run(str(python), "-c", "import stichtag, stichtag.client; "
                   "print(stichtag.__file__); print(stichtag.client.Client.__name__)")
    assert imported.returncode == 0, imported.stderr
    where, name = imported.stdout.split()
    assert Path(where).is_relative_to(venv), where  # the wheel's copy, not the checkout
    assert name == "Client"
    no_app = run(str(python), "-c", "import app")
    assert no_app.returncode != 0 and "No module named 'app'" in no_app.stderr
    migrations = run(str(python), "-c", "from stichtag.store.migrate import discover; "
                     "print(len(discover()))")
    assert migrations.returncode == 0, migrations.stderr
    assert int(migrations.stdout) == len(list(
        (REPO / "migrations").glob("*.sql")))
