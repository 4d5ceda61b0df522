"""probe.py's rank, held after its report until a file exists: the test reads every rank from /proc while all of
them are alive (a phase it waits for), then creates the file, and the ranks exit as probe.py's would.

Usage: probe_held.py --hold FILE [probe.py's options]. A rank still held after 600 s gives up and exits 3, so a
test that died without releasing its ranks leaves nothing running for long.
"""

import os
import sys
import time

import probe  # tests/probes/probe.py, next to this file (the script's directory is first on sys.path)

HOLD_LIMIT_S = 600


def main(argv):
    i = argv.index("--hold")
    hold, rest = argv[i + 1], argv[:i] + argv[i + 2:]
    code = probe.main(rest)
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not os.path.exists(hold):
        if time.monotonic() > deadline:
            return 3
        time.sleep(0.05)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
