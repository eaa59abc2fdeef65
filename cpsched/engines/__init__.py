"""Exact engines: model builders behind one front door per backend (solve -> Schedule)."""
