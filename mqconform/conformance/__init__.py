"""The conformance suite: stateful Hypothesis machines that drive the model and an adapter."""
