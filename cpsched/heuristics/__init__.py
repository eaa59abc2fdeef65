"""Heuristics: fast schedules without optimality proofs, checked by the validator."""
