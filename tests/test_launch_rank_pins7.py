"""Pins for hosttune.launch.rank._ask_planner (issue 21, session 9 practice rounds): the launcher's planner gets the
request on stdin and answers one JSON document; an answer longer than REPLAN_LIMIT is not the planner's (it is cut
there, so it does not parse), and no JSON is an error that quotes the planner's last stderr line, else its exit
status. The planner here is this interpreter running a few lines (through the program gateway, as for real).
And _planner_argv: as root the planner's hosttune named in the handoff, its directory and its __init__.py, must be
root's alone; what it gives is the gateway's own argv for hosttune.launch.replan on that package."""

import os
import sys
from pathlib import Path

import pytest

from hosttune import programs, trust
from hosttune.errors import UserError
from hosttune.launch import rank
from hosttune.launch.rank import REPLAN_LIMIT, _ask_planner, _planner_argv

ECHO = "import json, sys; print(json.dumps({'asked': json.load(sys.stdin)}))"


def _planner(code: str) -> list:
    return [sys.executable, "-c", code]


def test_the_request_goes_in_and_the_answer_comes_back() -> None:
    request = {"local_rank": 1, "world": 2, "environ": {"A": "b"}}
    assert _ask_planner(_planner(ECHO), request, {}, "1/2") == {"asked": request}


def test_an_answer_longer_than_the_limit_is_refused() -> None:
    assert REPLAN_LIMIT == rank.REPLAN_LIMIT == 4 << 20
    big = f"import sys; sys.stdout.write('[' + '0,' * {REPLAN_LIMIT // 2} + '0]')"
    with pytest.raises(UserError) as err:
        _ask_planner(_planner(big), {}, {}, "0/1")
    assert str(err.value) == "re-planning rank 0/1 failed: exit status 0"
    fits = f"import sys; sys.stdout.write('[' + '0,' * {REPLAN_LIMIT // 2 - 2} + '0]')"
    assert len(_ask_planner(_planner(fits), {}, {}, "0/1")) == REPLAN_LIMIT // 2 - 1


def test_no_json_quotes_the_last_stderr_line_else_the_exit_status() -> None:
    said = "import sys; sys.stderr.write('first\\nthe planner broke\\n'); sys.exit(3)"
    with pytest.raises(UserError) as err:
        _ask_planner(_planner(said), {}, {}, "2/4")
    assert str(err.value) == "re-planning rank 2/4 failed: the planner broke"
    with pytest.raises(UserError) as err:
        _ask_planner(_planner("import sys; sys.exit(3)"), {}, {}, "2/4")
    assert str(err.value) == "re-planning rank 2/4 failed: exit status 3"


@pytest.mark.skipif(os.geteuid() != 0, reason="the planner's package is checked as root only")
def test_as_root_the_planners_package_and_its_init_must_be_roots_alone(tmp_path: Path) -> None:
    pkg = tmp_path / "hosttune"
    pkg.mkdir(mode=0o755)
    init = pkg / "__init__.py"
    init.write_text("")
    os.chmod(tmp_path, 0o755)
    os.chmod(init, 0o644)
    data = {"planner": {"python": sys.executable, "root": str(tmp_path)}}
    assert _planner_argv(data) == programs.own_argv("hosttune.launch.replan", python=sys.executable, pkg=str(pkg))
    os.chmod(init, 0o666)  # anyone may rewrite the planner's code
    with pytest.raises(trust.Untrusted) as err:
        _planner_argv(data)
    assert str(init) in str(err.value)
    os.chmod(init, 0o644)
    os.chmod(pkg, 0o777)
    with pytest.raises(trust.Untrusted) as err:
        _planner_argv(data)
    assert str(pkg) in str(err.value)
