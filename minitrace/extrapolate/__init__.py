"""Extrapolate a trace to a scale that was not recorded, from runs at three or more smaller
scales (docs/EXTRAPOLATE.md)."""
