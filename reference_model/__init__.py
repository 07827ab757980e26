"""The executable reference model: exact queue semantics on a logical clock (see spec/)."""
