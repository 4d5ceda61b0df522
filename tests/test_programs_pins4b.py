"""Pin for mutation round 4 (issue 21) in hosttune/programs.py: `execve` (the gateway that replaces hosttune with
the job, `exec`'s last step) resolves argv[0] with the trust check as root, as `run` and `popen` do: a program named
by its path in a directory another user owns is refused before anything is exec'd (a bare name is looked up on
root's trusted PATH directories either way). os.execve is replaced by a recorder, so a
regression shows as a failed assertion, not as this worker turned into the planted program."""

import os
from typing import Any, List

import pytest
from test_programs import marker_of, plant_interpreter

from hosttune import programs, trust


def test_as_root_execve_never_runs_another_users_program_named_by_its_path(
        other_user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = plant_interpreter(other_user, "bin/hosttune-test-tool")
    called: List[Any] = []
    monkeypatch.setattr(os, "execve", lambda *a: called.append(a))
    with pytest.raises(programs.NotFound, match="command not found in a PATH directory only root can write"):
        programs.execve(["hosttune-test-tool", "--x"], {"PATH": str(theirs.parent)}, "tool")
    with pytest.raises(trust.Untrusted):
        programs.execve([str(theirs), "--x"], {"PATH": "/usr/bin:/bin"}, "tool")
    assert called == [] and not marker_of(other_user).exists()
