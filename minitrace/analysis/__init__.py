"""Analyses of stored results (they read files through storage, never a live run):
``gev`` (GEV estimators), ``emma`` (expected maxima), ``projection`` (a variability run
projected to more ranks), ``partitioned_model`` (Algorithm 1), and one figure module each
(``gev_plot``, ``partitioned_plot``) over the shared ``plotting`` helpers."""
