#!/usr/bin/env bash
# Set up (idempotent, see setup.sh; here with the second, Open MPI environment) and run the test
# suite: the pytest-mpi tests (tests/mpi/, alone) under mpiexec -n 2 and -n 4, the recorder,
# provenance, calibrate, predict and parallel-merge tests again under Open MPI, then the serial pytest run (which
# leaves tests/mpi/ out and itself launches real MPI jobs) last, so that its final line, how
# many third-party cross-checks ran, ends the output.
set -euo pipefail
export MINITRACE_OPENMPI=1
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# Both environments, for the tests that put one MPI's shim under the other's program.
export MINITRACE_MPICH_VENV="${MINITRACE_VENV:-$ROOT/.venv}"
export MINITRACE_OPENMPI_VENV="${MINITRACE_OPENMPI_VENV:-$ROOT/.venv-openmpi}"
status=0
for n in 2 4; do
  echo "== pytest-mpi under mpiexec -n $n"
  # pytest-timeout cannot interrupt a rank blocked inside MPI: timeout(1) bounds the whole job.
  timeout -k 10 600 mpiexec -n "$n" python -m pytest -q -p no:cacheprovider --with-mpi -m mpi \
      tests/mpi || status=$?
done
echo "== pytest under Open MPI (recorder, provenance, calibrate, predict, parallel merge, MPI+OpenMP)"
# minitrace is installed (not editable) in that environment: the checkout must not shadow it,
# neither as the current directory (PYTHONSAFEPATH, also for the Python children the tests
# start) nor as the tests' root (appended to sys.path, not prepended).  Calibrate runs in
# test_predict.py's fixture (test_calibrate.py's two calibrations would double the time).
PYTHONSAFEPATH=1 "$MINITRACE_OPENMPI_VENV/bin/python" -m pytest -q -p no:cacheprovider \
    --import-mode=append -m "not slow" tests/test_record.py tests/test_record_launch.py \
    tests/test_record_mpi4py_objects.py tests/test_provenance.py tests/test_predict.py \
    tests/test_parallel_merge.py tests/test_tasks_hybrid.py \
    || status=$?
echo "== lint-imports (the layers of docs/ARCHITECTURE.md, contracts in pyproject.toml)"
python "$ROOT/scripts/lint_imports.py" || status=$?
echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@" || status=$?
exit $status
