"""Exploring: the machines, the driver that steps model and adapter together, the runner, shrinking,
replay, corpora, lockstep and the Hypothesis settings: what generates and carries out the examples."""
