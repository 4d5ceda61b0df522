"""Pin for mutation round 4 (issue 21) in hosttune/doctor/model.py: a check skipped for a missing prerequisite
still shows what it expects (the table's and --json's "expected")."""

from hosttune.doctor.context import DATA
from hosttune.doctor.model import Need


def test_a_skipped_check_keeps_its_expected_value() -> None:
    f = DATA.skip(None)  # type: ignore[arg-type]  # a fixed reason reads nothing of the context
    assert (f.status, f.actual, f.expected) == ("skip", "no --data PATH given", "local nvme/ssd")
    need = Need("live", lambda ctx: False, lambda ctx: "a captured host", "governor performance")
    f = need.skip(None)  # type: ignore[arg-type]
    assert (f.status, f.actual, f.expected) == ("skip", "a captured host", "governor performance")
