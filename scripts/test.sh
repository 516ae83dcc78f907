#!/usr/bin/env bash
# Set up (idempotent, see setup.sh) and run the whole test suite: the pytest-mpi tests
# (tests/mpi/, alone) under mpiexec -n 2 and -n 4, then the serial pytest run (which leaves
# tests/mpi/ out and itself launches real MPI jobs) last, so that its final line, how many
# third-party cross-checks ran, ends the output.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
status=0
for n in 2 4; do
  echo "== pytest-mpi under mpiexec -n $n"
  # pytest-timeout cannot interrupt a rank blocked inside MPI: timeout(1) bounds the whole job.
  timeout -k 10 600 mpiexec -n "$n" python -m pytest -q -p no:cacheprovider --with-mpi -m mpi \
      tests/mpi || status=$?
done
echo "== pytest"
python -m pytest -q -p no:cacheprovider "$@" || status=$?
exit $status
