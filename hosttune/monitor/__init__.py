"""The monitor: samples (pure parsing), sinks (JSONL, Prometheus textfile; textfile: where it is published), the
daemon, and `monitor report` (logread: bounded no-follow reading, summary: pure aggregation, draw: text/SVG/PNG,
report: the command's API and its one file write)."""
