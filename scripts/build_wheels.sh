#!/usr/bin/env bash
# Build the release artefacts into dist/ and verify them:
#   * the sdist;
#   * one abi3 wheel per Linux platform (CPython 3.11 and later), manylinux_2_28, built by maturin
#     with zig as the linker so the extension needs no newer glibc than 2.28. x86_64 always;
#     aarch64 when its Rust standard library is installed (rustup target add aarch64-unknown-linux-gnu);
#   * prints their sizes and contents, runs `auditwheel show` on each wheel.
#
# Usage: scripts/build_wheels.sh [--verify] [--sdist-build]
#   --verify       then run the wheel test suite (tests/wheel): installs the wheel into a fresh venv
#                  per CPython found under pyenv, with no Rust on PATH, and runs the tests there.
#   --sdist-build  also build a wheel from the unpacked sdist alone, in a temporary folder (slow: a
#                  full release build from scratch), to prove the sdist is complete.
# $MINDCORE_WHEEL_TARGETS (space separated Rust targets) builds only those wheels.
# The build tools (maturin, ziglang, auditwheel) live in their own venv, .venv-build (or
# $MINDCORE_BUILD_VENV); the verification runs under the Python on PATH, which needs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

verify=0
sdist_build=0
for arg in "$@"; do
    case "$arg" in
        --verify) verify=1 ;;
        --sdist-build) sdist_build=1 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

# The Python on PATH runs the verification (it has pytest); the build tools come first on PATH below.
test_python=$(command -v python3)
tools=${MINDCORE_BUILD_VENV:-$PWD/.venv-build}
if ! "$tools/bin/python" -c "import maturin, ziglang, auditwheel" 2>/dev/null; then
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2" "ziglang>=0.13" "auditwheel>=6"
fi
export PATH="$tools/bin:$PATH"

rm -rf dist
mkdir -p dist
seconds() { date +%s; }

echo "== sdist"
maturin sdist --out dist

# $MINDCORE_WHEEL_TARGETS (space separated Rust targets) narrows the list, e.g. to the host alone.
if [ -n "${MINDCORE_WHEEL_TARGETS:-}" ]; then
    read -r -a targets <<< "$MINDCORE_WHEEL_TARGETS"
else
    targets=(x86_64-unknown-linux-gnu)
    if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
        targets+=(aarch64-unknown-linux-gnu)
    else
        echo "(aarch64: skipped, its Rust standard library is not installed: rustup target add aarch64-unknown-linux-gnu)"
    fi
fi
for target in "${targets[@]}"; do
    echo "== wheel for $target"
    start=$(seconds)
    maturin build --release --zig --compatibility manylinux_2_28 --target "$target" --out dist
    echo "built in $(( $(seconds) - start )) s"
done

echo "== sizes"
ls -l dist | awk 'NR > 1 { printf "%10.2f MB  %s\n", $5 / 1e6, $9 }'

echo "== contents"
for wheel in dist/*.whl; do
    python3 - "$wheel" <<'EOF'
import re, sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
infos = wheel.infolist()
print(f"{sys.argv[1]}: {len(infos)} files, {sum(i.file_size for i in infos) / 1e6:.2f} MB unpacked")
for info in sorted(infos, key=lambda i: -i.compress_size)[:5]:
    print(f"  {info.compress_size / 1e6:6.2f} MB  {info.filename} ({info.file_size / 1e6:.2f} MB unpacked)")
names = {i.filename for i in infos}
missing = {"mindcore/py.typed", "mindcore/_core.pyi"} - names
strays = [n for n in names if re.search(r"(^|/)(tests?|benches)/|(^|/)(test|bench)_[^/]*\.py$", n)]
if missing or strays:
    sys.exit(f"bad wheel: missing {sorted(missing)}, test or bench files {strays}")
print("  py.typed and _core.pyi present; no test or bench files")
EOF
    auditwheel show "$wheel"
done

if [ "$sdist_build" = 1 ]; then
    echo "== a wheel from the sdist alone"
    scratch=$(mktemp -d)
    tar -xzf dist/mindcore-*.tar.gz -C "$scratch"
    start=$(seconds)
    (cd "$scratch"/mindcore-* && CARGO_TARGET_DIR="$scratch/target" maturin build --release --out "$scratch/wheels")
    echo "built from the sdist in $(( $(seconds) - start )) s: $(ls "$scratch/wheels")"
    rm -rf "$scratch"
fi

if [ "$verify" = 1 ]; then
    echo "== verification (tests/wheel)"
    MINDCORE_DIST=dist MINDCORE_BUILD_VENV="$tools" "$test_python" -m pytest -q -p no:cacheprovider -m wheel tests/wheel
    echo "cold-venv timings (ms):"
    cat dist/wheel-timings.json
fi
