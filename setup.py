"""Builds the Cython kernels: every .pyx under bpe_fast/. Everything else is in pyproject.toml."""
import sys
from pathlib import Path

import setuptools

# pyproject.toml writes the license as an SPDX expression (PEP 639), which older setuptools
# reject with a page of schema; pip builds in an isolated environment that has a new one.
if int(setuptools.__version__.split(".")[0]) < 77:
    sys.exit(f"bpe_fast needs setuptools>=77 to build in place (this one is {setuptools.__version__}): "
             "pip install -U 'setuptools>=77'")

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup


def extension(pyx: Path) -> Extension:
    module = ".".join(pyx.with_suffix("").parts)
    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
    if "linetrace=True" in pyx.read_text(encoding="utf-8").split("\n", 1)[0]:
        # Kernels that opt in to line_profiler (the profiling ladder) need the tracing hooks.
        macros += [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]
    return Extension(module, [str(pyx)], include_dirs=[np.get_include()], language="c++",
                     extra_compile_args=["-O3", "-std=c++17"], define_macros=macros)


EXTENSIONS = [extension(p) for p in sorted(Path("bpe_fast").rglob("*.pyx"))]

setup(ext_modules=cythonize(EXTENSIONS, compiler_directives={"language_level": "3"}))
