"""Pins for hosttune/policy/dirs.py (issue 21, practice round HTOP8): each directory with its variable unset, empty,
relative and absolute, as one table; the user's cache from XDG_CACHE_HOME, else HOME, else none."""

from hosttune.policy import dirs


def test_every_directory_and_its_variable() -> None:
    table = [(dirs.runtime_dir, "HOSTTUNE_RUNTIME_DIR", "/run/hosttune"),
             (dirs.state_dir, "HOSTTUNE_STATE_DIR", "/var/lib/hosttune"),
             (dirs.log_dir, "HOSTTUNE_LOG_DIR", "/var/log/hosttune"),
             (dirs.etc_dir, "HOSTTUNE_ETC_DIR", "/etc/hosttune")]
    got = [(fn({}), fn({var: ""}), fn({var: "rel/dir"}), fn({var: "/abs/x"}), fn({"OTHER": "/abs/x"}))
           for fn, var, _ in table]
    assert got == [(default, default, default, "/abs/x", default) for _, _, default in table]


def test_user_cache_dir() -> None:
    assert dirs.user_cache_dir({"XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"}) == "/x/cache/hosttune"
    assert dirs.user_cache_dir({"XDG_CACHE_HOME": "cache", "HOME": "/home/u"}) == "/home/u/.cache/hosttune"
    assert dirs.user_cache_dir({"HOME": "/home/u"}) == "/home/u/.cache/hosttune"
    assert dirs.user_cache_dir({"HOME": "home/u"}) is None
    assert dirs.user_cache_dir({}) is None
