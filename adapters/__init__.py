"""Adapters: the contract every implementation meets, and the built-in adapters."""
