"""Pins of mutation round 7 (issue 21) on hosttune.detect.hostio: a program the detector finds but cannot start is
noted with the short reason (as `_why` words it), never Python's "[Errno N] ...: 'PATH'" text."""

import os
from pathlib import Path

import pytest

from hosttune.detect.hostio import HostIO

ENV = {"PATH": "/usr/bin:/bin"}  # nothing a root run would drop (and note)


@pytest.mark.parametrize("content, why", [
    (b"\x00\x01\x02 not a program", "Exec format error"),  # ENOEXEC: no ELF header, no #! line
    (b"#!/hosttune-pins7b-no-such-interpreter\n", "not found"),  # ENOENT from the kernel: the interpreter
])
def test_a_program_that_cannot_start_is_noted_with_the_short_reason(tmp_path: Path, content: bytes,
                                                                    why: str) -> None:
    prog = tmp_path / "tool"
    prog.write_bytes(content)
    prog.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    io = HostIO(Path("/"))
    assert io.run([str(prog), "--version"], env=ENV, timeout=600) is None  # 600 s: a hang guard
    assert io.last_error == f"cannot run {prog}: {why}"
    assert io.missing == [f"tool: cannot run {prog}: {why}"]
    assert "Errno" not in io.last_error
