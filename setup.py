"""The one native part of inart: the INA host stack's batched UDP I/O (C API, no other deps).

``pip install -e .`` (./dev.sh setup) builds it in place; ``python setup.py build_ext
--inplace`` rebuilds it after a change to the C source.  Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("host_stack.ina._batchio", ["host_stack/ina/_batchio.c"],
                             extra_compile_args=["-O2", "-Wall", "-Wextra",
                                                 "-Wno-unused-parameter"])])
