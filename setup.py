"""The one native part of inart, the INA host stack's batched UDP I/O (C API, no other deps),
and the checkout's files a wheel must carry.

``pip install -e .`` (./dev.sh setup) builds the extension in place; ``python setup.py
build_ext --inplace`` rebuilds it after a change to the C source.  ``python -m build`` makes
an sdist and a wheel: the wheel also carries the committed P4 builds (p4src/build/, tna/
included) and the PTF suite (tests/ptf/) under control_plane/data/, where
control_plane/repo.py finds them when there is no checkout (MANIFEST.in puts them in the
sdist).  Everything else is in pyproject.toml.
"""

import runpy
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# checkout path -> name under control_plane/data/, from the one place that names locations
PACKAGE_DATA = runpy.run_path(str(HERE / "control_plane" / "repo.py"))["PACKAGE_DATA"]


class BuildPyWithData(build_py):
    """build_py, then the checkout's data directories copied into the built package."""

    def run(self) -> None:
        super().run()
        data = Path(self.build_lib) / "control_plane" / "data"
        for source, name in PACKAGE_DATA.items():
            src = HERE / source
            if not src.is_dir():
                raise SystemExit(f"setup.py: {src} is missing: a wheel needs it "
                                 f"(control_plane/repo.py PACKAGE_DATA)")
            shutil.rmtree(data / name, ignore_errors=True)
            shutil.copytree(src, data / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.log"))


setup(cmdclass={"build_py": BuildPyWithData},
      ext_modules=[Extension("host_stack.ina._batchio", ["host_stack/ina/_batchio.c"],
                             extra_compile_args=["-O3", "-Wall", "-Wextra",
                                                 "-Wno-unused-parameter"])])
