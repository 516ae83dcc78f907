"""pytest-mpi tests: run alone under mpiexec -n 2 and -n 4 by scripts/test.sh (the serial run leaves this folder out)."""
