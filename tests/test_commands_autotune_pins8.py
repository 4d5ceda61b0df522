"""Pins for hosttune/commands/autotune.py (issue 21, practice round HTOP8): the metric spec each option set makes,
the budget reader, and `hosttune train` as a job (which options it refuses, and in which words)."""

import re

import pytest

from hosttune.autotune import metric
from hosttune.autotune.metric import MetricSpec
from hosttune.commands import autotune as autotune_cmd
from hosttune.errors import UserError


@pytest.mark.parametrize("args,want", [
    ((None, True, False, None, 0.0), MetricSpec(re.compile(metric.ENGINE_REGEX), False, 0, 0.0)),
    ((None, True, True, 3, 2.5), MetricSpec(re.compile(metric.ENGINE_REGEX), True, 3, 2.5)),
    (("step ([0-9.]+) s", False, True, None, 5.0), MetricSpec(re.compile("step ([0-9.]+) s"), True, 1, 5.0)),
    (("([0-9]+) samples/s", False, False, 0, 0.0), MetricSpec(re.compile("([0-9]+) samples/s"), False, 0, 0.0)),
])
def test_spec_of_each_option_set(args: tuple, want: MetricSpec) -> None:
    assert autotune_cmd._spec(*args) == want


@pytest.mark.parametrize("args,error", [
    (("x ([0-9]+)", True, False, None, 0.0), "--metric and --engine: give one (--engine reads the engine's samples/s)"),
    ((None, False, False, None, 0.0), "give --metric REGEX (the job's throughput in its output) or --engine"),
    (("", False, False, None, 0.0), "give --metric REGEX (the job's throughput in its output) or --engine"),
])
def test_spec_refusals(args: tuple, error: str) -> None:
    with pytest.raises(UserError) as info:
        autotune_cmd._spec(*args)
    assert str(info.value) == error


def test_budget() -> None:
    assert [autotune_cmd._budget(t) for t in ("600", "90s", "10m", "1h")] == [600.0, 90.0, 600.0, 3600.0]
    with pytest.raises(UserError) as info:
        autotune_cmd._budget("soon")
    assert str(info.value) == "--budget 'soon': a duration such as 600, 90s, 10m or 1h"


def test_a_job_that_is_not_hosttune_train_is_tried_as_given() -> None:
    for command in (("python3", "train.py", "--x"), ("hosttune",), ("hosttune", "exec", "--", "x"),
                    ("/opt/bin/hosttune-train", "train"), ("/opt/bin/my-hosttune", "train")):
        assert autotune_cmd.train_job(command) == (list(command), None)


@pytest.mark.parametrize("command,error", [
    (("hosttune", "train", "--profile", "p.yaml", "--preset", "gpt-tiny"),
     "autotune: leave --profile and --dry-run out of `hosttune train`: each trial runs the job under one candidate "
     "profile"),
    (("/usr/local/bin/hosttune", "train", "--dry-run"),
     "autotune: leave --profile and --dry-run out of `hosttune train`: each trial runs the job under one candidate "
     "profile"),
    (("hosttune", "train", "--help"), "autotune: hosttune train --help is not a job"),
])
def test_hosttune_train_refusals(command: tuple, error: str) -> None:
    with pytest.raises(UserError) as info:
        autotune_cmd.train_job(command)
    assert str(info.value) == error


def test_a_bad_train_option_is_clicks_message_after_autotunes_prefix() -> None:
    with pytest.raises(UserError) as info:
        autotune_cmd.train_job(("hosttune", "train", "--nproc", "0"))
    msg = str(info.value)  # click's own words differ between click 7 and 8
    assert msg.startswith("autotune: hosttune train: Invalid value for '--nproc': 0 ") and "\n" not in msg
