"""Calibrate a machine and predict a trace's run time on it.

:mod:`.measure` is the MPI job that measures the machine (``minitrace calibrate`` runs it),
:mod:`.calibration` the calibration file, the fit of its runs and their plot, and
:mod:`.prediction` the replay with a calibration and its self-check against the recording.
"""
from .prediction import MAX_LOST_SHARE, PARTS, Prediction, predict, report

__all__ = ["MAX_LOST_SHARE", "PARTS", "Prediction", "predict", "report"]
