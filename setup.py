"""Builds the Cython kernels. Everything else is declared in pyproject.toml."""
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

EXTENSIONS = [
    Extension(
        f"bpe_fast.{name}",
        [f"bpe_fast/{name}.pyx"],
        include_dirs=[np.get_include()],
        language="c++",
        extra_compile_args=["-O3", "-std=c++17"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in ("_kernel", "_encode")
]

setup(ext_modules=cythonize(EXTENSIONS, compiler_directives={"language_level": "3"}))
