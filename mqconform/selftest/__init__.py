"""Deliberately broken implementations (mutants) that prove the suite can fail."""
