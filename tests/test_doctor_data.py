"""`hosttune doctor --data PATH`: a path that is not data on storage (a device, a FIFO, a socket, a file of /proc or
/sys) is bad usage, one line and exit 2, before anything is measured; reading such a path never ends (/dev/zero) or
blocks (a FIFO with no writer), and it is neither an hdd nor short of free space."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest


def hosttune(*args: str) -> "subprocess.CompletedProcess[str]":
    # the generous timeout only turns a hang (a FIFO opened for reading) into a failure instead of a stuck run
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def assert_refused(path: str, kind: str) -> None:
    done = hosttune("doctor", "--only", "storage", "--data", path)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"--data: {path} is {kind}" in done.stderr, done.stderr
    assert done.stdout == "", done.stdout  # refused before any check ran


def test_a_character_device_is_bad_usage() -> None:
    assert_refused("/dev/zero", "a character device")


def test_a_fifo_is_bad_usage_and_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_refused(str(fifo), "a FIFO")


def test_a_socket_is_bad_usage(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.bind(str(path))
        except OSError as exc:  # a tmp path longer than sun_path allows
            pytest.skip(f"cannot bind a unix socket here: {exc}")
        assert_refused(str(path), "a socket")


@pytest.mark.parametrize("path", ["/proc/self/status", "/sys/kernel/mm/transparent_hugepage/enabled"])
def test_a_kernel_filesystem_file_is_bad_usage(path: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    assert_refused(path, "on ")


def test_ordinary_data_is_still_measured(tmp_path: Path) -> None:
    data = tmp_path / "shard-0.bin"
    data.write_bytes(b"x" * 4096)
    args: List[str] = ["doctor", "--json", "--only", "storage", "--data", str(data), "--data", str(tmp_path)]
    done = hosttune(*args)
    assert done.returncode != 2, done.stderr
    by = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
    assert str(data) in by["storage.data"]["actual"] and str(tmp_path) in by["storage.free_space"]["actual"]
