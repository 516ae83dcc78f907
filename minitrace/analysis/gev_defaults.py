"""The GEV analysis' defaults, apart from its estimators so that ``minitrace gev --help`` can
name them without loading scipy, pandas and tqdm."""

TYPE_TOLERANCE = 0.05           # |shape| <= this counts as Gumbel (type I)
DEFAULT_REPLICAS = 200          # parametric: joint replicas (each refits every group)
DEFAULT_NONPARAM_REPLICAS = 1000
