"""BoundlessBPE lives in variants/boundless.py; its names stay importable from here."""
from .variants.boundless import eligibility, interleaved, learn, run_layout, units

__all__ = ["eligibility", "units", "run_layout", "learn", "interleaved"]
