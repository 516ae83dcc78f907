"""Only here for cffi: the PMPI shim (c_shim/build_shim.py) and the benchmark kernels
(minitrace/bench/native/build.py) are compiled at install time."""
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
builders = [os.path.join("c_shim", "build_shim.py"),
            os.path.join("minitrace", "bench", "native", "build.py")]
setup(cffi_modules=[b + ":ffibuilder" for b in builders if os.path.exists(os.path.join(here, b))])
