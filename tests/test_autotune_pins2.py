"""Pins (issue 21, second mutation round) for hosttune/autotune: with two finalists both the sign test's level and
each confirmation interval are split between them (what one finalist alone wins, one of two may not), and the
user's own measured overlay wins over the system's (profile/measured.py's lookup order)."""

from pathlib import Path

from hosttune.autotune import search, stats
from hosttune.profile import measured


def _result(confirm: dict) -> search.Result:
    return search.Result(list(confirm), ratios={n: list(r) for n, r in confirm.items()}, confirm=confirm,
                         finalists=list(confirm))


def test_the_sign_test_is_split_between_two_finalists() -> None:
    seven = [1.2] * 7  # 7 of 7 rounds above: p = 1/128, under 1% for one finalist, not under 0.5% for each of two
    alone = _result({"a": seven}).winner(0.01)
    assert alone is not None and alone.name == "a"
    assert _result({"a": seven, "b": [1.0] * 7}).winner(0.01) is None


def test_two_finalists_each_get_a_wider_interval_than_one_alone() -> None:
    noisy = [1.0 + 0.01 * ((i * 7) % 16) for i in range(16)]  # 16 rounds from x1.00 to x1.15
    (one,) = _result({"a": noisy}).confirmed()
    two = {s.name: s for s in _result({"a": noisy, "b": [1.0] * 16}).confirmed()}["a"]
    assert two.median == one.median
    assert two.lo <= one.lo and two.hi >= one.hi and (two.lo, two.hi) != (one.lo, one.hi)


def test_the_users_overlay_wins_over_the_systems(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOSTTUNE_ETC_DIR": str(tmp_path / "etc")}
    command = ["torchrun", "--nproc-per-node", "2", "train.py"]
    user_dir, system_dir = measured.dirs(env)
    name = f"{measured.job_key(command)}.yaml"
    (system_dir).mkdir(parents=True)
    (system_dir / name).write_text("name: system\n")
    assert measured.find(command, env) == system_dir / name
    user_dir.mkdir(parents=True)
    (user_dir / name).write_text("name: mine\n")
    assert measured.find(command, env) == user_dir / name


class _Steady:
    """Every trial takes 10 s; c1 is x1.3 the default, the others x1.0 (no noise: the schedule alone decides)."""

    def __init__(self) -> None:
        self.count = 0

    def run(self, name: str) -> search.Trial:
        self.count += 1
        return search.Trial(name, 130.0 if name == "c1" else 100.0, 10.0)


def test_the_rungs_leave_the_confirmation_rounds_their_budget() -> None:
    """A budget that holds the first rung and the finalists' confirmation rounds, not every rung: the rungs stop
    early (and say so) so that the confirmation rounds still run and can name the winner."""
    names = [f"c{i}" for i in range(8)]
    first_rung = 1 + 2 * len(names)
    confirmation = search.CONFIRM * 2 * 2
    runner = _Steady()
    res = search.search(names, runner, 10.0 * (first_rung + confirmation), 10.0)
    assert res.stopped == "the budget ran out during the halving rungs"
    assert len(res.confirm["c1"]) == search.CONFIRM
    w = res.winner(0.01)
    assert w is not None and w.name == "c1" and res.spent <= 10.0 * (first_rung + confirmation)


def test_an_interval_is_a_function_of_its_ratios() -> None:
    """The bootstrap is seeded: the same ratios give the same interval on every call, in every process (a report and
    its JSON, a rerun of the same trials). 40 distinct ratios: an unseeded bootstrap would move the ends."""
    ratios = [1.0 + 0.0037 * ((i * 17) % 40) for i in range(40)]
    first = stats.bootstrap_ci(ratios)
    assert all(stats.bootstrap_ci(list(ratios)) == first for _ in range(4))
    assert first == stats.bootstrap_ci(ratios, seed=stats.SEED)
