"""Stage 3, training: the kernel (_kernel.pyx and its .pxd files) learns merges from a word
table; trainer.py runs the pipeline, options.py checks its settings, continued.py trains on
from a base, reference.py is the plain-Python oracle; variants/ holds the research variants."""
