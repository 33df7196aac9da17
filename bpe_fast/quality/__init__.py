"""The quality report (report.py, with its native measuring: _measure.pyx): bytes per token,
fertility and unused tokens, to compare tokenizers."""
