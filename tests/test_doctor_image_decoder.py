"""doctor's torch.image_decoder (hosttune/doctor/checks/torch.py, the probe in hosttune/detect/torchenv.py): which
fast JPEG decoder the TRAINING python has, asked of that interpreter (never imported into hosttune), with the
apt/dnf + pip fix when it has none or a broken one.

The probe really runs: against fake interpreters answering it (tests/fakes/python-images-*, the table rows), and
against this python with stand-in PIL/turbojpeg modules put first on its path through PYTHONPATH (what the probe
searches, as it does for torch), so every outcome is reached whatever this machine has installed."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from _doctorhelp import R, cpu_host, run_one, same, table_test
from conftest import checkout_env

from hosttune.doctor import Context
from hosttune.doctor.checks.torch import image_decoder_finding

FAKES = Path(__file__).resolve().parent / "fakes"

# (check id, host builder, change, context kwargs, expected status, text in actual/fix/expected): the table shape
# of tests/test_doctor_<group>.py, for test_doctor_catalogue's every-check-has-a-pass-and-a-problem-case.
CASES = [
    ("torch.image_decoder", cpu_host, same, {"python": str(FAKES / "python-images-turbo")}, "pass",
     "PyTurboJPEG 1.8.3 + libturbojpeg; Pillow 11.0.0 (libjpeg-turbo)"),
    ("torch.image_decoder", cpu_host, same, {"python": str(FAKES / "python-images-libjpeg")}, "warn",
     "apt-get install -y libturbojpeg0"),
    ("torch.image_decoder", cpu_host, same, {"live": False}, "skip", "captured host"),
]

test_check = table_test(CASES)


def rhel(f: Any) -> Any:
    return R(f, distro=R(f.distro, id="rocky", version="9.4", family="rhel"))


@pytest.mark.parametrize("family,data,status,needles", [
    ("debian", {"pillow": {"version": "11.0.0", "libjpeg_turbo": True}, "turbojpeg": None}, "pass",
     ["Pillow 11.0.0 (libjpeg-turbo)"]),
    ("debian", {"pillow": {"version": "9.0.0.post1", "libjpeg_turbo": False, "simd": True}}, "pass",
     ["pillow-simd 9.0.0.post1"]),
    ("debian", {"pillow": {"version": "9.0.1", "libjpeg_turbo": False}}, "warn",
     ["libjpeg, not libjpeg-turbo", "apt-get install -y libturbojpeg0", "pip install 'PyTurboJPEG<2' Pillow"]),
    ("rhel", {"pillow": {"version": "9.0.1", "libjpeg_turbo": False}}, "warn", ["dnf install -y turbojpeg"]),
    ("rhel", {"pillow": None, "turbojpeg": {"version": "2.0.0", "library": False,
                                            "error": "PyTurboJPEG 2.0 requires libjpeg-turbo 3.0 or later."}},
     "warn", ["image_decoder=turbojpeg fails", "dnf install -y turbojpeg", "pip install 'PyTurboJPEG<2'"]),
    ("debian", {"turbojpeg": {"version": "1.8.3", "library": False, "error": "Unable to locate turbojpeg library"}},
     "warn", ["no usable libturbojpeg (Unable to locate", "apt-get install -y libturbojpeg0",
              "pip install PyTurboJPEG"]),
    ("debian", {"pillow": None, "turbojpeg": None}, "skip", ["no Pillow, no PyTurboJPEG", "libturbojpeg0"]),
    ("debian", {"error": "probe: timed out after 10 s"}, "warn", ["probe failed: probe: timed out"]),
])
def test_each_probe_answer_gives_its_finding(family: str, data: Dict[str, Any], status: str, needles: Any) -> None:
    facts = cpu_host() if family == "debian" else rhel(cpu_host())
    f = image_decoder_finding(Context(facts=facts, env={}), "/opt/train/bin/python", data)
    assert f.status == status, f
    for needle in needles:
        assert needle in f.actual + "\n" + f.fix, (needle, f)


# ---- the real probe in this python, with stand-in modules first on its path -----------------------------------------
FAKE_PIL = {
    "PIL/__init__.py": "__version__ = '10.4.0'\n",
    "PIL/features.py": "def check_feature(name):\n    return False\n",
}
MISSING = {
    "PIL/__init__.py": "raise ImportError('No module named PIL (stand-in)')\n",
    "turbojpeg.py": "raise ImportError('No module named turbojpeg (stand-in)')\n",
}


def turbo_module(init: str) -> str:
    return f"__version__ = '2.0.0'\nTJPF_RGB = 0\nclass TurboJPEG:\n    def __init__(self):\n        {init}\n"


def stand_ins(tmp_path: Path, files: Dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "site"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(root))


def live(**ctx: Any) -> Any:
    return run_one("torch.image_decoder", cpu_host(), python=sys.executable, **ctx)


def test_a_python_with_neither_library_is_a_skip_that_says_how(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    stand_ins(tmp_path, MISSING, monkeypatch)
    f = live()
    assert f.status == "skip" and "no Pillow, no PyTurboJPEG" in f.actual and sys.executable in f.actual, f
    assert "apt-get install -y libturbojpeg0" in f.fix, f


def test_pyturbojpeg_2_over_an_old_libjpeg_turbo_warns_with_the_pin(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    raise_old = "raise RuntimeError('PyTurboJPEG 2.0 requires libjpeg-turbo 3.0 or later.\\nPlease upgrade.')"
    stand_ins(tmp_path, {**FAKE_PIL, "turbojpeg.py": turbo_module(raise_old)}, monkeypatch)
    f = live()
    assert f.status == "warn", f
    assert "PyTurboJPEG 2.0.0 + no usable libturbojpeg (PyTurboJPEG 2.0 requires libjpeg-turbo 3.0 or later.)" \
        in f.actual, f
    assert "Pillow 10.4.0 (libjpeg, not libjpeg-turbo)" in f.actual, f
    assert "pip install 'PyTurboJPEG<2'" in f.fix and "Please upgrade" not in f.actual, f


def test_a_loadable_pyturbojpeg_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_ins(tmp_path, {**FAKE_PIL, "turbojpeg.py": turbo_module("pass")}, monkeypatch)
    f = live()
    assert f.status == "pass" and "PyTurboJPEG 2.0.0 + libturbojpeg" in f.actual, f


def test_a_missing_interpreter_is_a_warn_naming_the_probe() -> None:
    f = run_one("torch.image_decoder", cpu_host(), python="/nonexistent/bin/python")
    assert f.status == "warn" and "image decoder probe failed" in f.actual, f


CHILD = r'''
import json, sys
from hosttune.doctor.checks.torch import check_image_decoder
from hosttune.doctor import Context
sys.path.insert(0, sys.argv[1])
from _doctorhelp import cpu_host
f = check_image_decoder(Context(facts=cpu_host(), env={}, python=sys.executable))
print(json.dumps({"status": f.status, "actual": f.actual, "imported": sorted(
    m for m in ("PIL", "turbojpeg", "numpy") if m in sys.modules)}))
'''


def test_the_check_never_imports_the_decoders_into_hosttune(tmp_path: Path) -> None:
    """In a fresh process (this one may hold PIL from other tests): the check's answer comes from the training
    python's process; hosttune's own never imports PIL, turbojpeg or numpy for it."""
    r = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).resolve().parent)], capture_output=True,
                       text=True, timeout=120, env=checkout_env(), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] in ("pass", "warn", "skip") and out["actual"], out
    assert out["imported"] == [], out
