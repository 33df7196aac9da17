"""Stage 1, pre-tokenization: the patterns (patterns.py) and the Splitter that cuts text into
chunks (splitter.py), with its native scanners (_pretok.pyx, _scan.pxd, _split.pxd)."""
