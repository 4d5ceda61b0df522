"""The detector: one probe module per source; `collect(root)` builds Facts."""
