"""Picky BPE lives in variants/picky.py; its names stay importable from here."""
from .variants.picky import (REMOVED, check_events, check_tau, events_for, learned_after, removals, token_bytes,
                             token_ids)

__all__ = ["REMOVED", "check_events", "check_tau", "events_for", "learned_after", "removals", "token_bytes",
           "token_ids"]
