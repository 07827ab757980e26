"""One state machine per spec area."""
