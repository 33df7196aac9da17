"""The small shared native core: CPU features and prefetching (_cpu.pxd), the pair and key
hash tables (_pairmap.pxd, _hash.pxd) and reading a str as UTF-8 (_text.pxd), cimported by
the stages' kernels. Headers only: nothing here is a Python module."""
