"""The monitor: samples (pure parsing), sinks (JSONL, Prometheus textfile), the daemon."""
