"""Calibrate a machine and predict a trace's run time on it.

:mod:`.measure` is the MPI job that measures the machine (``minitrace calibrate`` runs it),
:mod:`.calibration` the calibration file, the fit of its runs and their plot, and
:mod:`.prediction` the replay with a calibration and its self-check against the recording.
"""
__all__ = ["MAX_LOST_SHARE", "PARTS", "Prediction", "predict", "report"]


def __getattr__(name: str):
    """The names of :mod:`.prediction` (the replay: pandas, SimGrid), loaded when first used:
    ``minitrace calibrate`` needs only :mod:`.measure`."""
    if name in __all__:
        from . import prediction
        return getattr(prediction, name)
    raise AttributeError(f"module 'minitrace.predict' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy names too (tab completion), beside what is loaded."""
    return sorted(set(globals()) | set(__all__))
