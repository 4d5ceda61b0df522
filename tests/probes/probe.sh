#!/bin/sh
# A non-Python rank command (torchrun --no-python): the shim must bind it like any other.
exec "${PROBE_PYTHON:-python3}" "$(dirname "$0")/probe.py" "$@"
