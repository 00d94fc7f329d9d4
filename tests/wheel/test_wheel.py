"""The built wheel, as a user gets it: what is in it, which platforms it claims, and that it installs
and works on every CPython the machine has, in a fresh venv with no Rust toolchain on ``PATH``.

Marked ``wheel`` and run on its own, against the wheels ``scripts/build_wheels.sh`` put in ``dist/``::

    MINDCORE_DIST=dist pytest -m wheel tests/wheel

Without ``MINDCORE_DIST`` the module is skipped (the main suite tests the source tree). The tests
import the *installed* package: each interpreter gets its own venv with the wheel pip-installed,
and a copy of ``tests/`` runs from a temporary folder, away from the checkout's ``python/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[2]
DIST = os.environ.get("MINDCORE_DIST")
if not DIST:
    pytest.skip("set MINDCORE_DIST to the folder scripts/build_wheels.sh built into", allow_module_level=True)
DIST_DIR = (ROOT / DIST).resolve()

# The test files run against each installed wheel: the kernels, the stubs, the package face and
# every README example (which runs the bundled embedder, the store and every capability).
# $MINDCORE_WHEEL_SUITE (space separated file names under tests/) replaces the list.
SUITE = tuple(os.environ.get("MINDCORE_WHEEL_SUITE", "").split()) or (
    "test_kernels.py", "test_tokens.py", "test_bm25.py", "test_secrets.py", "test_dedupe.py",
    "test_scoring.py", "test_packing.py", "test_hashing.py", "test_validation.py", "test_package.py",
    "test_stubs.py", "test_readme.py", "test_mind.py", "test_working.py",
    # docker/Dockerfile's command, run from this venv (installed with the `server` extra, as the image is).
    "test_docker_recipe.py",
)
# The extras the wheel is installed with: the server (the Docker recipe's command) and the frameworks
# the README's examples use, resolved from the wheel's own metadata.
EXTRAS = ("server", "langgraph", "langchain", "openai-agents", "pydantic-ai")
# What those files import beyond the wheel's own dependencies and those extras.
SUITE_DEPS = ("pytest>=8", "hypothesis>=6.100", "tiktoken>=0.9", "pydantic>=2", "mypy>=1.10")
# The oldest glibc the Linux wheels may need (manylinux_2_28 = glibc 2.28, RHEL 8 and Debian 10 on).
MAX_GLIBC = (2, 28)

TIMINGS = DIST_DIR / "wheel-timings.json"
"""Per interpreter: ``import mindcore`` and first-recall times in a cold venv (the script prints them)."""


def _cargo_version() -> str:
    return str(tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"])


def _wheels() -> list[Path]:
    found = sorted(DIST_DIR.glob("mindcore-*.whl"))
    if not found:
        pytest.fail(f"no mindcore wheel in {DIST_DIR}: run scripts/build_wheels.sh first")
    return found


def _host_wheel() -> Path:
    machine = os.uname().machine
    for wheel in _wheels():
        if wheel.name.endswith(f"_{machine}.whl"):
            return wheel
    pytest.fail(f"no wheel for this machine ({machine}) in {DIST_DIR}")


def _pythons() -> list[Path]:
    """Every CPython 3.11+ that pyenv has (or ``$MINDCORE_WHEEL_PYTHONS``, space separated)."""
    given = os.environ.get("MINDCORE_WHEEL_PYTHONS")
    if given:
        return [Path(p) for p in given.split()]
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = []
    for version in sorted(root.glob("3.*"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)]):
        if re.fullmatch(r"3\.(1[1-9]|[2-9]\d)\.\d+", version.name) and (version / "bin" / "python3").exists():
            found.append(version / "bin" / "python3")
    return found or [Path(sys.executable)]


def _no_rust_path() -> str:
    """``PATH`` without any folder that holds cargo or rustc (nor the checkout's venvs)."""
    keep = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or any((Path(folder) / tool).exists() for tool in ("cargo", "rustc", "maturin")):
            continue
        keep.append(folder)
    return os.pathsep.join(keep)


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


# --- the archive -------------------------------------------------------------------------------


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda w: w.name)
def test_wheel_holds_the_package_its_stubs_and_no_tests(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "mindcore/py.typed" in names
    assert "mindcore/_core.pyi" in names
    assert "mindcore/_core.abi3.so" in names, [n for n in names if n.startswith("mindcore/_core")]
    assert "mindcore/__init__.py" in names and "mindcore/embed/data/tokenizer.json" in names
    strays = [n for n in names if re.search(r"(^|/)(tests?|benches)/|(^|/)(test|bench)_[^/]*\.py$|conftest\.py$", n)]
    assert not strays, f"test or bench files in the wheel: {strays}"
    # No stale per-version build of the extension rides along with the abi3 one.
    assert not [n for n in names if re.search(r"_core\.cpython-.*\.so$", n)]


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda w: w.name)
def test_wheel_is_abi3_manylinux_and_carries_the_workspace_version(wheel: Path) -> None:
    # mindcore-<version>-cp311-abi3-manylinux_2_28_x86_64.whl (possibly with more platform tags)
    _, version, python_tag, abi_tag, platform = wheel.stem.split("-")
    assert version == _cargo_version()
    assert (python_tag, abi_tag) == ("cp311", "abi3")
    glibcs = [tuple(map(int, m)) for m in re.findall(r"manylinux_(\d+)_(\d+)_", platform)]
    assert glibcs and min(glibcs) <= MAX_GLIBC, platform
    metadata = zipfile.ZipFile(wheel).read(f"mindcore-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "\nRequires-Python: >=3.11\n" in metadata


def _auditwheel() -> str:
    venv = Path(os.environ.get("MINDCORE_BUILD_VENV", ROOT / ".venv-build"))
    for candidate in (venv / "bin" / "auditwheel", shutil.which("auditwheel")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    pytest.fail("auditwheel not found: scripts/build_wheels.sh installs it into .venv-build")


@pytest.mark.parametrize("wheel", _wheels(), ids=lambda w: w.name)
def test_auditwheel_finds_no_external_libraries(wheel: Path) -> None:
    done = subprocess.run([_auditwheel(), "show", str(wheel)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    tag = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_\w+"', text)
    assert tag and (int(tag[1]), int(tag[2])) <= MAX_GLIBC, text
    # Only the manylinux allow-list (libc, libm, libgcc_s, ...) may be needed from the system.
    assert "external shared libraries are required" not in text, text


# --- installed into a fresh venv per Python -----------------------------------------------------


@dataclass(frozen=True)
class Installed:
    python: Path
    venv: Path
    env: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def run(self, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def run_python(self, code: str, cwd: Path) -> str:
        """What the venv's Python prints running ``code`` (which must succeed)."""
        done = self.run(str(self.bin / "python"), "-c", code, cwd=cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(scope="module", params=_pythons(), ids=lambda p: p.parent.parent.name)
def installed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    python = request.param
    venv = tmp_path_factory.mktemp("venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), _no_rust_path()])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--only-binary", ":all:",
         f"{_host_wheel()}[{','.join(EXTRAS)}]", *SUITE_DEPS],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, f"pip install of the wheel failed:\n{done.stdout}\n{done.stderr}"
    yield Installed(python, venv, env)


def test_no_rust_toolchain_is_reachable(installed: Installed, tmp_path: Path) -> None:
    found = installed.run_python("import shutil; print([t for t in ('cargo', 'rustc') if shutil.which(t)])", tmp_path)
    assert found.strip() == "[]"


def test_installed_package_is_the_wheel_and_its_version(installed: Installed, tmp_path: Path) -> None:
    code = (
        "import importlib.metadata as m, json, pathlib, mindcore\n"
        "root = pathlib.Path(mindcore.__file__).parent\n"
        "print(json.dumps({'file': mindcore.__file__, 'version': mindcore.__version__,\n"
        "    'dist': m.version('mindcore'), 'typed': (root / 'py.typed').is_file(),\n"
        "    'stubs': (root / '_core.pyi').is_file(), 'core': mindcore._core.__file__}))"
    )
    got = json.loads(installed.run_python(code, tmp_path))
    assert Path(got["file"]).is_relative_to(installed.venv), got["file"]
    assert got["core"].endswith("_core.abi3.so")
    assert got["version"] == got["dist"] == _wheel_version(_host_wheel()) == _cargo_version()
    assert got["typed"] and got["stubs"]


def test_import_and_first_recall_times(installed: Installed, tmp_path: Path) -> None:
    """The first process after install: ``import mindcore``, then open a store, remember one fact
    with the bundled embedder and recall it."""
    code = (
        "import time\n"
        "start = time.perf_counter()\n"
        "import mindcore\n"
        "imported = time.perf_counter()\n"
        "ltm = mindcore.LongTermMemory.create(mindcore.open('store'), user_id='u', enabled=True)\n"
        "ltm.remember('Drinks green tea, never coffee', kind='preference')\n"
        "hits = ltm.recall('what does the user drink?', k=1)\n"
        "recalled = time.perf_counter()\n"
        "assert [m.text for m in hits] == ['Drinks green tea, never coffee'], hits\n"
        "ltm.close()\n"
        "print((imported - start) * 1e3, (recalled - start) * 1e3)"
    )
    import_ms, recall_ms = map(float, installed.run_python(code, tmp_path).split())
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings[installed.python.parent.parent.name] = {"import_ms": round(import_ms, 1), "first_recall_ms": round(recall_ms, 1)}
    TIMINGS.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")


def test_mindcore_demo_runs(installed: Installed, tmp_path: Path) -> None:
    done = installed.run(str(installed.bin / "mindcore"), "demo", cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert done.stdout.strip().endswith("ok")


def _tests_copy(tmp: Path) -> Path:
    """``tests/`` (without this folder), the README its examples test and the Docker recipe, away
    from the checkout."""
    root = tmp / "suite"
    shutil.copytree(ROOT / "tests", root / "tests", ignore=shutil.ignore_patterns("wheel", "__pycache__"))
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copytree(ROOT / "docker", root / "docker")
    # An empty config: the checkout's pyproject points pytest at python/ (doctests), which is not here.
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def test_suite_passes_against_the_installed_package(installed: Installed, tmp_path: Path) -> None:
    root = _tests_copy(tmp_path)
    env = dict(installed.env)
    # The evaluation data (LoCoMo, the secret-rule cases) sits beside the checkout, not in the wheel;
    # without it the tests that read it skip (or fail under $MINDCORE_REQUIRE_DATA, as in CI).
    beside = ROOT.parent / "shared" / "data"
    if beside.is_dir():
        env.setdefault("MINDCORE_DATA_DIR", str(beside))
    files = [f"tests/{name}" for name in SUITE]
    done = subprocess.run(
        [str(installed.bin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root),
         "-x", *files],
        cwd=root, env=env, capture_output=True, text=True, timeout=1800,
    )
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, f"{tail}\n{done.stderr[-3000:]}"
    assert re.search(r"\d+ passed", tail), tail
    assert "mindcore" not in {p.name for p in root.iterdir()}  # nothing shadowed the installed package
