"""Only here for cffi: the PMPI shim (c_shim/build_shim.py) and the benchmark kernels
(c_shim/build_native.py) are compiled at install time."""
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
builders = [os.path.join("c_shim", b) for b in ("build_shim.py", "build_native.py")]
setup(cffi_modules=[b + ":ffibuilder" for b in builders if os.path.exists(os.path.join(here, b))])
