"""Rendering: the compliance matrix (:mod:`.matrix`) built from a PipelineResult, and the report formats
written from it (HTML with counterexample timelines, JUnit XML, JSON, Markdown, the version matrix)."""
