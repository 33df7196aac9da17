"""Stage 4, encoding: the native encoder (_encode.pyx and its .pxd files), encoding whole
corpora (corpus.py), tiktoken's surface (tiktoken_surface.py) and token views (visualize.py)."""
