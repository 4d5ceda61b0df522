"""hosttune: detect, check, tune, launch and monitor PyTorch training hosts."""

__version__ = "0.1.0"
