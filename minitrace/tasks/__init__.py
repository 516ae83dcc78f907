"""OpenMP task graphs (docs/TASKS.md): the OMPT recorder's raw files into a ``TaskGraph``
(graph.py), its ``/tasks`` group (taskfile.py), checks (validate.py), NUMA platforms from hwloc
(numa_platform.py) and the SimGrid simulation of a graph on N threads (simulate.py)."""
