"""A rank that does nothing: launch-overhead measurements."""
