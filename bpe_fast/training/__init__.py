"""Stage 3, training: trainer.py holds the entry points (train, train_from_iterator,
train_from_table, train_parity), which check their options (options.py) and pick the variant
once; pipeline.py holds the plain stages (count, learn with the kernel, cut to sizes), which
know no variant; the kernel (_kernel.pyx and its .pxd files) learns merges from a word table;
continued.py trains on from a base; reference.py is the plain-Python oracle; variants/ holds the
research variants, each with its kernel and oracle beside it."""
