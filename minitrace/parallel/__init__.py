"""Steps that read a large trace, run by the ranks of an MPI job (mpi4py): ``mpiexec -n K
minitrace merge RAWDIR -o OUT.h5`` shares the trace's ranks among K workers, each writing its
part; OUT.h5 is HDF5 virtual datasets over the parts (docs/PARALLEL.md).

``world`` finds the job and exchanges errors, ``shares`` balances contiguous rank ranges,
``parts`` writes parts, assembles and packs, ``merge`` is the parallel merge."""
