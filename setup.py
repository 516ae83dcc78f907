"""Only here for cffi: the PMPI shim (c_shim/build_shim.py), the benchmark kernels
(minitrace/bench/native/build.py), the OTF2 event reader (converters/native/build_otf2.py) and,
where LLVM's omp-tools.h is installed, the OMPT tool (minitrace/tasks/native/build_ompt.py) are
compiled at install time."""
import glob
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
builders = [os.path.join("c_shim", "build_shim.py"),
            os.path.join("minitrace", "bench", "native", "build.py"),
            os.path.join("converters", "native", "build_otf2.py")]
if glob.glob("/usr/lib/llvm-*/lib/clang/*/include/omp-tools.h") or os.environ.get("OMPT_HEADER"):
    builders.append(os.path.join("minitrace", "tasks", "native", "build_ompt.py"))
setup(cffi_modules=[b + ":ffibuilder" for b in builders if os.path.exists(os.path.join(here, b))])
