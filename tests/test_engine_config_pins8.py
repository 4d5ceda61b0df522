"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/config.py: an unknown key is refused
whatever its value (null included: `foo:` in a YAML file, `--set foo=null`), with its source and a suggestion."""

from pathlib import Path

import pytest

pytest.importorskip("torch")

from hosttune.engine.config import ConfigError, load_config  # noqa: E402


def test_an_unknown_key_with_a_null_value_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("steps: 5\nmicro_batch_sise:\n")
    with pytest.raises(ConfigError) as e:
        load_config(config_file=str(f))
    assert str(e.value) == f"{f}: unknown key 'micro_batch_sise' (did you mean 'micro_batch_size'?)"
    with pytest.raises(ConfigError) as e:
        load_config(sets=["warmup_step=null"])
    assert str(e.value) == "--set: unknown key 'warmup_step' (did you mean 'warmup_steps'?)"
    with pytest.raises(ConfigError) as e:
        load_config(overrides={"zzz": None})
    assert str(e.value) == "option: unknown key 'zzz'"


def test_a_known_key_with_null_goes_through_to_its_type_check() -> None:
    assert load_config(sets=["num_workers=null"]).num_workers is None
    with pytest.raises(ConfigError) as e:
        load_config(sets=["steps=null"])
    assert str(e.value) == "steps must be an integer, got None"
