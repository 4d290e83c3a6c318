"""``pip install -e ".[gpu]"`` on a GPU image whose torch is not the project's CPU pin (torch 2.11 here).

torch and vLLM are the two packages that pin each other: each CUDA vLLM release requires one exact torch. The
resolution of the pair is done here from recorded wheel metadata (no network in CI): for a given torch, the
``[gpu]`` extra must admit it and admit a vLLM release built against it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
# Requires-Dist torch of CUDA vLLM releases, read on 2026-12-01 with
# `pip install --dry-run --no-deps --ignore-installed --report out.json vllm==<version>` (PyPI's wheel metadata)
VLLM_TORCH = {
    "0.24.0": "==2.11.0",
    "0.25.1": "==2.11.0",
    "0.26.0": "==2.11.0",
    "0.27.1": "==2.13.0",
    "0.30.0": "==2.13.0",
    "0.31.0": "==2.13.0",
    "0.32.0": "==2.13.0",
    "0.33.0": "==2.14.0",
}


def _extra(name: str) -> list[Requirement]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    out: list[Requirement] = []
    for raw in project["optional-dependencies"][name]:
        req = Requirement(raw)
        if canonicalize_name(req.name) == canonicalize_name(project["name"]):
            for inner in sorted(req.extras):
                out.extend(_extra(inner))
        else:
            out.append(req)
    return out


def _gpu_install() -> list[Requirement]:
    """What ``pip install -e ".[gpu]"`` asks for: the core dependencies and the ``gpu`` extra's."""
    with open(REPO / "pyproject.toml", "rb") as fh:
        core = [Requirement(raw) for raw in tomllib.load(fh)["project"]["dependencies"]]
    return core + _extra("gpu")


def resolve_vllm(reqs: list[Requirement], torch_version: str) -> str | None:
    """The vLLM pip would pick beside ``torch_version``: the newest recorded release the requirements admit whose
    torch requirement ``torch_version`` meets (a local build label such as ``+cu128`` included); ``None`` if none."""
    torch_specs = [r.specifier for r in reqs if canonicalize_name(r.name) == "torch"]
    if not all(spec.contains(torch_version) for spec in torch_specs):
        return None
    vllm_specs = [r.specifier for r in reqs if canonicalize_name(r.name) == "vllm"]
    fits = [
        v
        for v, need in VLLM_TORCH.items()
        if all(spec.contains(v) for spec in vllm_specs) and SpecifierSet(need).contains(torch_version)
    ]
    return max(fits, key=Version) if fits else None


@pytest.mark.parametrize(("torch_version", "vllm"), [("2.11.0", "0.26.0"), ("2.11.0+cu128", "0.26.0"),
                                                      ("2.13.0", "0.32.0"), ("2.13.0+cu128", "0.32.0")])  # fmt: skip
def test_the_gpu_extra_resolves_against_the_images_torch(torch_version: str, vllm: str) -> None:
    assert resolve_vllm(_gpu_install(), torch_version) == vllm


def test_a_torch_no_recorded_vllm_is_built_for_is_not_admitted() -> None:
    gpu = _gpu_install()
    assert resolve_vllm(gpu, "2.14.0") is None  # vLLM 0.33 would need it: outside the tested range
    assert resolve_vllm(gpu, "2.10.0") is None
    assert resolve_vllm([Requirement("vllm==0.32.0")], "2.11.0") is None  # the former exact pin: no resolution


def test_the_tested_pairs_are_documented() -> None:
    text = (REPO / "docs" / "scaling.md").read_text()
    assert "torch 2.13.0 with vLLM 0.32.0" in text and "torch 2.11" in text
