"""Only here for cffi: the PMPI shim is compiled at install time (see c_shim/build_shim.py)."""
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
shim = os.path.join("c_shim", "build_shim.py")
setup(cffi_modules=[shim + ":ffibuilder"] if os.path.exists(os.path.join(here, shim)) else [])
