"""CLI subcommands: each module here defines ``register(subparsers)``; :data:`COMMANDS` names
them with the line ``minitrace --help`` shows for each.

The table lets ``minitrace --help`` list the subcommands without importing a module (each
loads what its work needs: pandas, scipy, SimGrid; all of them took ~1.6 s of CPU), and
``minitrace SUB`` import one module only.  Subcommand ``foo-bar`` is module ``foo_bar`` (a
trailing ``_`` avoids a keyword: ``import_``); each module passes its line as its parser's
``help``, imports at its top what its parser needs and in its functions what only running it
needs (pandas, the trace reader), so that ``minitrace SUB --help`` stays quick
(tests/test_cli_imports.py)."""

#: Subcommand name -> its one line in ``minitrace --help`` (in the order listed).
COMMANDS = {
    "bench": "benchmark suites: list them, their options and stored results",
    "calibrate": "measure this machine's network, compute and reduction rates",
    "compress": "compress a trace (loop grammars, rank-relative)",
    "convert": "convert between formats: OTF2/TAU/TI -> minitrace, "
               "minitrace -> OTF2/TI/CSV/Perfetto",
    "demo": "run the main job end to end on bundled inputs",
    "diff": "compare the provenance of two minitrace files",
    "expand": "write a compressed trace back uncompressed",
    "export": "write a trace as OTF2, SimGrid TI text, CSV or a Perfetto timeline "
              "(the older spelling of convert --to)",
    "extrapolate": "predict a trace at more ranks from 3+ smaller runs",
    "gev": "fit GEVs to per-iteration maxima and project them to more ranks",
    "import": "import a SimGrid time-independent text trace (the older spelling of "
              "convert --from ti)",
    "import-tasks": "import a StarPU/TiKKi tasks.rec task trace",
    "info": "summarize a minitrace file",
    "merge": "merge raw per-rank files of the recorder into a trace",
    "numa-platform": "SimGrid platform of a NUMA machine from hwloc (lstopo XML)",
    "pack": "copy a trace written in parts into one file",
    "partitioned-model": "model the gain of MPI partitioned communication under thread "
                         "variability",
    "predict": "predict a trace's run time from a calibration (and check it)",
    "record": "trace an MPI program (compiled or Python)",
    "regress": "append benchmark runs to a history and test them for regressions",
    "replay": "predict the run time of a trace on a SimGrid platform",
    "shim": "build or locate the PMPI shim for an MPI library",
    "shim-path": "print the path of the PMPI shim library",
    "simulate-tasks": "predict an OpenMP task program's time on N threads (SimGrid)",
    "validate": "check a trace's consistency",
}
