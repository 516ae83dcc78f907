"""Only here for compiled parts.  cffi: the PMPI shim (c_shim/build_shim.py), the benchmark
kernels (minitrace/bench/native/build.py), the OTF2 event reader
(converters/native/build_otf2.py), the adaptive context coder of bounded files
(minitrace/compress/native/build.py) and, where LLVM's omp-tools.h is installed, the OMPT tool
(minitrace/tasks/native/build_ompt.py) are compiled at install time.  The native SMPI replayer
(minitrace/replay/native/replay.cpp) is compiled too, into the package
(``minitrace/replay/bin/``), when SimGrid's headers are found
(``replayer_build.headers_for_install``: ``MINITRACE_SIMGRID_INCLUDE``, or set-up's cache);
without them the replay uses SimGrid's Python bindings, and ``python -m
minitrace.replay.replayer_build`` builds it later (README)."""
import glob
import importlib
import os
import sys
import types

from setuptools import setup
from setuptools.command.build_ext import build_ext

here = os.path.dirname(os.path.abspath(__file__))
builders = [os.path.join("c_shim", "build_shim.py"),
            os.path.join("minitrace", "bench", "native", "build.py"),
            os.path.join("converters", "native", "build_otf2.py"),
            os.path.join("minitrace", "compress", "native", "build.py")]
if glob.glob("/usr/lib/llvm-*/lib/clang/*/include/omp-tools.h") or os.environ.get("OMPT_HEADER"):
    builders.append(os.path.join("minitrace", "tasks", "native", "build_ompt.py"))


def _replayer_build():
    """minitrace/replay/replayer_build.py (and the libsimgrid.py it imports), loaded from the
    source as a package of their own: they need only the standard library, while importing
    minitrace would need its dependencies, not installed yet."""
    pkg = types.ModuleType("_minitrace_replay")
    pkg.__path__ = [os.path.join(here, "minitrace", "replay")]
    sys.modules[pkg.__name__] = pkg
    return importlib.import_module("_minitrace_replay.replayer_build")


class BuildExtAndReplayer(build_ext):
    """The cffi modules, then the native replayer when SimGrid's headers are found."""

    def run(self):
        super().run()
        rb = _replayer_build()
        include = rb.headers_for_install()
        root = here if self.inplace else self.build_lib
        out = rb.Path(root) / "minitrace" / "replay" / "bin" / "minitrace-replay"
        if include is None:
            print("minitrace: SimGrid's headers not found (MINITRACE_SIMGRID_INCLUDE): the "
                  "native replayer is not built", file=sys.stderr)
            return
        try:
            rb.build(include, out)
        except (RuntimeError, OSError, rb.subprocess.CalledProcessError) as e:
            print(f"minitrace: the native replayer is not built: {e}", file=sys.stderr)


setup(cffi_modules=[b + ":ffibuilder" for b in builders if os.path.exists(os.path.join(here, b))],
      cmdclass={"build_ext": BuildExtAndReplayer})
