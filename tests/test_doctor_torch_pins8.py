"""Pins for hosttune.doctor.checks.torch (issue 21, practice round HDOC8): PYTORCH_CUDA_ALLOC_CONF parsed whole, each
value kind at and past its edge, and the check's whole finding."""

import types
from typing import List

import pytest

from hosttune.doctor.checks import torch as T
from hosttune.doctor.model import Finding


@pytest.mark.parametrize("text,errors,unknown", [
    # a bracketed list must close: "[256:1,>:22" minus its last character would read as a valid list
    ("roundup_power2_divisions:[256:1,>:22", ["roundup_power2_divisions:[256:1,>:22 (divisions)"], []),
    ("roundup_power2_divisions:[256:1,512:2,>:4]", [], []),
    ("roundup_power2_divisions:[256:1,x:2]", ["roundup_power2_divisions:[256:1,x:2] (divisions)"], []),
    ("roundup_power2_divisions:8", [], []),
    ("roundup_power2_divisions:6", ["roundup_power2_divisions:6 (divisions)"], []),
    ("max_split_size_mb:20,max_split_size_mb:21,expandable_segments:yes,pinned_num_register_threads:256,"
     "pinned_num_register_threads:64,garbage_collection_threshold:1.0,per_process_memory_fraction:1.0,"
     "backend:cudaMallocAsync,backend:other,foo:1,bare,,max_split_size_mb:-30",
     ["max_split_size_mb:20 (int>20)", "expandable_segments:yes (bool)", "pinned_num_register_threads:256 (pow2<=128)",
      "garbage_collection_threshold:1.0 (fraction)", "backend:other (one of native,cudaMallocAsync)",
      "'bare' is not key:value", "max_split_size_mb:-30 (int>20)"], ["foo"]),
])
def test_parse_alloc_conf_whole(text: str, errors: List[str], unknown: List[str]) -> None:
    assert T.parse_alloc_conf(text) == (errors, unknown)


def test_alloc_conf_findings_whole() -> None:
    def run(**env: str) -> Finding:
        return T.check_alloc_conf(types.SimpleNamespace(env=env))  # type: ignore[arg-type]

    assert run() == Finding(status="pass", actual="unset", expected="unset or valid")
    assert run(PYTORCH_CUDA_ALLOC_CONF="roundup_power2_divisions:[256:1,>:22") == Finding(
        status="fail", actual="PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[256:1,>:22 -> "
        "PYTORCH_CUDA_ALLOC_CONF: roundup_power2_divisions:[256:1,>:22 (divisions)",
        expected="key:value,... with known keys",
        fix="fix or unset it, e.g. export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert run(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True", PYTORCH_ALLOC_CONF="foo:1") == Finding(
        status="warn", actual="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; PYTORCH_ALLOC_CONF=foo:1 -> "
        "unknown key PYTORCH_ALLOC_CONF: foo", expected="known keys",
        fix="check the spelling against https://pytorch.org/docs/stable/notes/cuda.html "
            "(optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    assert run(PYTORCH_ALLOC_CONF="roundup_power2_divisions:[>:2]") == Finding(
        status="pass", actual="PYTORCH_ALLOC_CONF=roundup_power2_divisions:[>:2]", expected="valid")


@pytest.mark.parametrize("raw,want", [
    ("MIG-abc", Finding(status="pass", actual="CUDA_VISIBLE_DEVICES=MIG-abc (0 GPUs and 1 MIG instance(s) not known "
                        "here); MIG-abc: MIG instance of a GPU not known here", expected="existing GPUs")),
    ("1,MIG-x,0,0", Finding(status="fail", actual="CUDA_VISIBLE_DEVICES=1,MIG-x,0,0: no GPU 0 (names a GPU twice; CUDA "
                            "stops there and sees 2 of 2 GPUs and 1 MIG instance(s) not known here); MIG-x: MIG "
                            "instance of a GPU not known here", expected="entries among 0,1 or unique GPU UUID "
                            "prefixes", fix="export CUDA_VISIBLE_DEVICES=0,1")),
    ("1,1", Finding(status="fail", actual="CUDA_VISIBLE_DEVICES=1,1: no GPU 1 (names a GPU twice; CUDA stops there "
                    "and sees 1 of 2 GPUs)", expected="entries among 0,1 or unique GPU UUID prefixes",
                    fix="export CUDA_VISIBLE_DEVICES=0,1")),
    ("1,0", Finding(status="pass", actual="CUDA_VISIBLE_DEVICES=1,0 (2 GPUs)", expected="existing GPUs")),
])
def test_cuda_visible_whole_with_its_notes(raw: str, want: Finding) -> None:
    from _doctorhelp import gpu_host

    from hosttune.doctor.context import Context

    assert T.check_cuda_visible(Context(facts=gpu_host(), env={"CUDA_VISIBLE_DEVICES": raw})) == want
