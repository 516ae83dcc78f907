"""Analyses of stored results: they read minitrace files, never a live run.  One module per
analysis (``gev`` estimators, ``emma`` expected maxima, ``projection`` of a variability run to
more ranks, ``partitioned_model``...), its figure in another (``*_plot.py``, over the shared
``plotting`` helpers)."""
