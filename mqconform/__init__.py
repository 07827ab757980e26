"""mqconform: a property-based conformance suite for message-queue semantics."""
