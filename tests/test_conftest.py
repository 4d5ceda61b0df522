"""tests/conftest.py's autouse environment: every test has hosttune directories of its own (issue 21: no test reads
or writes the host's /etc/hosttune, /run/hosttune, /var/lib/hosttune, /var/log/hosttune or the user's cache; two test
runs at once on one machine, or a real hosttune in use there, never meet)."""

import os
import stat
from pathlib import Path
from typing import Dict, Optional

import pytest

from hosttune import execcache, trust
from hosttune.launch import handoff
from hosttune.policy import dirs, names


def test_hosttunes_directories_are_the_tests_own(tmp_path: Path) -> None:
    for d in (dirs.runtime_dir(), dirs.state_dir(), dirs.log_dir(), dirs.etc_dir(), dirs.user_cache_dir()):
        assert d is not None and tmp_path in Path(d).parents, d
    assert {os.environ[n] for n in (names.RUNTIME_DIR, names.STATE_DIR, names.LOG_DIR, names.ETC_DIR)} == {
        dirs.runtime_dir(), dirs.state_dir(), dirs.log_dir(), dirs.etc_dir()}
    assert tmp_path in Path(execcache.cache_dir() or "/").parents
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if os.geteuid() == 0:
        assert xdg is None  # root's handoffs go to its runtime directory, as under sudo
    else:
        assert xdg is not None and tmp_path in Path(xdg).parents
        st = os.stat(xdg)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_the_per_test_directories_pass_the_trust_rule(tmp_path: Path) -> None:
    """As root the runtime directory is used only when it and every directory above it pass the rule: pytest's
    tmp_path (0700, under a sticky /tmp) does, so the tests exercise the real path, not a fallback."""
    _, why = trust.problem(tmp_path, kind="dir")
    assert why is None, why
    path = Path(handoff.write_shared({"version": handoff.VERSION, "plans": {}}))
    base = Path(execcache.cache_dir() or "").parent if os.geteuid() == 0 else Path(os.environ["XDG_RUNTIME_DIR"])
    assert path.parent.parent == base
    assert trust.problem(path, kind="file")[1] is None


@pytest.fixture(scope="module")
def module_env() -> Dict[str, Optional[str]]:
    """What a module-scoped fixture (set up before any test's own directories) sees."""
    return {"runtime": dirs.runtime_dir(), "state": dirs.state_dir(), "log": dirs.log_dir(), "etc": dirs.etc_dir(),
            "cache": dirs.user_cache_dir(), "home": os.environ.get("HOME"),
            "inherited": " ".join(sorted(k for k in os.environ if k.startswith(("HOSTTUNE_", "OMP_")) and
                                         k not in (names.RUNTIME_DIR, names.STATE_DIR, names.LOG_DIR, names.ETC_DIR)))}


def test_module_fixtures_get_directories_of_the_sessions_own(module_env: Dict[str, Optional[str]],
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """A module's shared training run or capture runs hosttune before any test's _scrub_env: the session-wide scrub
    gives it the session's own directories and none of the shell's HOSTTUNE_*/OMP_* settings (`HOSTTUNE_NUM_WORKERS=3
    pytest ...` changed what the engine integration tests' shared run did, not what they compared it with)."""
    base = tmp_path_factory.getbasetemp()
    for key in ("runtime", "state", "log", "etc", "cache", "home"):
        assert base in Path(module_env[key] or "/").parents, (key, module_env[key])
    assert module_env["inherited"] == ""


def test_a_test_that_changes_its_process_by_hand_fails_and_the_process_is_put_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest's process_kept (every test runs in it): a variable set or removed by hand, a chdir, a umask, an
    affinity left narrowed: each is named, put back, and fails the test; monkeypatch's own changes are not its."""
    from conftest import process_kept

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    cwd, cpus, had = os.getcwd(), os.sched_getaffinity(0), os.environ["HOME"]
    with pytest.raises(pytest.fail.Exception) as failed:
        with process_kept():
            os.environ["HOSTTUNE_LEFT_BEHIND"] = "1"
            del os.environ["HOME"]
            os.chdir(tmp_path)
            os.umask(0o077)
            os.sched_setaffinity(0, {min(cpus)})
    said = str(failed.value)
    assert said == (f"the test left its process changed (use monkeypatch): HOME HOSTTUNE_LEFT_BEHIND "
                    f"the working directory {tmp_path} umask 0077" + (" the CPU affinity" if len(cpus) > 1 else ""))
    assert "HOSTTUNE_LEFT_BEHIND" not in os.environ and os.environ["HOME"] == had
    assert os.getcwd() == cwd and os.sched_getaffinity(0) == cpus
    mask = os.umask(0o022)
    os.umask(mask)
    assert mask != 0o077
    with process_kept():
        os.environ["HOSTTUNE_PUT_BACK"] = "1"
        del os.environ["HOSTTUNE_PUT_BACK"]
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path)  # a library's own, on first use: put back quietly
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
