"""The engine's one error for a setting or input this run cannot honour: the CLI prints it as one line, exit 2."""


class EngineError(Exception):
    """A setting this host cannot honour (e.g. amp=fp16 without CUDA): one line, exit 2."""
