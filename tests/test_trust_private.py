"""The two meanings of "mine", each decided once in hosttune/trust.py: `private_to_me` (nobody else may read, write or
enter it: hosttune's own runtime/cache directories and their entries) and `written_by_me_alone` (nobody else could
have changed it: what is trusted for its contents, such as a `facts --capture` destination the user made)."""

import os
import stat
from pathlib import Path

import pytest
from conftest import OtherUser

from hosttune import capture, trust
from hosttune.errors import UserError


def _made(path: Path, mode: int) -> os.stat_result:
    path.mkdir()
    os.chmod(path, mode)  # whatever the umask
    return os.lstat(path)


@pytest.mark.parametrize("mode,private,written", [
    (0o700, True, True), (0o600, True, True),
    (0o750, False, True), (0o705, False, True), (0o710, False, True), (0o755, False, True),
    (0o770, False, False), (0o702, False, False), (0o777, False, False), (0o1777, False, False),
])
def test_the_two_meanings_by_mode(mode: int, private: bool, written: bool, tmp_path: Path) -> None:
    st = _made(tmp_path / "d", mode)
    assert trust.private_to_me(st) is private
    assert trust.written_by_me_alone(st) is written


def test_neither_holds_for_what_another_user_owns(other_user: OtherUser) -> None:
    d = other_user.home / "theirs"
    assert other_user.run(["mkdir", "-m", "700", str(d)]).returncode == 0
    st = os.lstat(d)
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert not trust.private_to_me(st) and not trust.written_by_me_alone(st)


def test_private_dir_wants_private_to_me(tmp_path: Path) -> None:
    d = tmp_path / "run"
    _made(d, 0o750)  # writable by me alone, but readable by the group: not private
    with pytest.raises(trust.Untrusted, match="expected owned by .* with mode 700"):
        trust.private_dir(d)
    os.chmod(d, 0o700)
    assert trust.private_dir(d) == str(d)


def test_capture_takes_an_empty_directory_only_i_could_write_and_makes_it_private(tmp_path: Path) -> None:
    mine = tmp_path / "out"
    _made(mine, 0o755)  # `mkdir out` with the usual umask
    capture._new_dir(mine)
    assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o700
    shared = tmp_path / "shared"
    _made(shared, 0o777)
    with pytest.raises(UserError, match="not a directory of yours that only you can write"):
        capture._new_dir(shared)
    assert stat.S_IMODE(os.lstat(shared).st_mode) == 0o777


def test_capture_never_writes_into_an_empty_directory_another_user_made(other_user: OtherUser) -> None:
    d = other_user.home / "out"
    assert other_user.run(["mkdir", "-m", "755", str(d)]).returncode == 0
    with pytest.raises(UserError, match="not a directory of yours that only you can write"):
        capture._new_dir(d)
    assert os.listdir(d) == [] and stat.S_IMODE(os.lstat(d).st_mode) == 0o755
