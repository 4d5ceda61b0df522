"""`hosttune doctor --deep`: measure the hardware instead of inferring it.

Layout: probe_torch (the one self-contained script that measures, inside the training interpreter), runner (a
probe process under a deadline: tree killed, what hung named), session (DeepRun: the interpreter, the time budget,
one process per group of measurements, NVML sampled meanwhile), findings (raw numbers + policy -> Finding, pure),
host (CPU clock, container, NVIDIA Container Toolkit), checks (DEEP_CHECKS: the catalogue entries).
"""

from hosttune.doctor.deep.checks import DEEP_CHECKS
from hosttune.doctor.deep.session import DeepOptions, DeepRun

__all__ = ["DEEP_CHECKS", "DeepOptions", "DeepRun"]
