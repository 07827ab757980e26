"""Judging: which rules each check verifies, what a run can cover, the known-deviation registry and
the verdict: what decides the outcome of the examples explored."""
