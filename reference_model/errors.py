"""Errors of the reference model: misuse by the caller, never an expected broker outcome."""

from __future__ import annotations


class ModelMisuse(ValueError):
    """The caller asked the model for something that cannot be meant (unknown name, bad parameter).

    Expected broker outcomes (address full, ring replaced, SYSTEM_BUSY, e$max_file_exceeded) are
    return values; this exception means the program driving the model is wrong.
    """


class Unsupported(ModelMisuse):
    """The selected profile has no such feature (for example ring queues under `hornetq`)."""
