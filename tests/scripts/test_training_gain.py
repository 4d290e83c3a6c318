"""Training success against a frozen run on the same draws (scripts/training_gain.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.training_gain import paired_blocks, read_run, render

REPO = Path(__file__).resolve().parents[2]


def _run(root: Path, name: str, seed: int, success: list[float], accepted_at: int | None = None) -> Path:
    """A run folder as train.py leaves it: config.yaml's seed, one metrics.csv row per iteration (steps 20 + 10 x
    success, so that a run that wins differently also walks differently)."""
    run = root / name
    (run / "logs").mkdir(parents=True)
    (run / "config.yaml").write_text(f"seed: {seed}\nrun_dir: {run}\n")
    lines = ["step,rollout/success_rate,rollout/steps,rollout/env/accepted_total"]
    for i, s in enumerate(success):
        accepted = 1 if accepted_at is not None and i >= accepted_at else 0
        lines.append(f"{i},{s},{20 + 10 * s},{accepted}")
    (run / "logs" / "metrics.csv").write_text("\n".join(lines) + "\n")
    return run


def test_the_difference_is_paired_by_seed_and_iteration_in_blocks(tmp_path: Path) -> None:
    frozen = {s: read_run(_run(tmp_path, f"frozen{s}", s, [0.5, 0.25, 0.75, 0.5])) for s in (0, 1)}
    arm = [read_run(_run(tmp_path, f"arm{s}", s, [0.5, 0.5, 1.0, 0.75])) for s in (0, 1)]
    (first, d1, n1), (second, d2, n2), (whole, d, n) = paired_blocks(arm, frozen, block=2, samples=2000)
    assert (first, second, whole) == ("1-2", "3-4", "1-4")
    assert d1.estimate == pytest.approx(12.5) and d1.units == 4 and n1 == 2  # (0 + 25) / 2 points, both seeds
    assert d2.estimate == pytest.approx(25.0) and d.estimate == pytest.approx(18.75) and d.units == 8
    assert d2.low == d2.high == 25.0  # every pair moved the same: no spread to resample


def test_one_block_is_not_repeated_as_the_whole(tmp_path: Path) -> None:
    frozen = {0: read_run(_run(tmp_path, "frozen", 0, [0.5, 0.25]))}
    blocks = paired_blocks([read_run(_run(tmp_path, "arm", 0, [0.5, 0.5]))], frozen, block=12, samples=200)
    assert [span for span, _, _ in blocks] == ["1-2"]


def test_a_first_iteration_that_differs_is_not_the_same_draw(tmp_path: Path) -> None:
    frozen = {0: read_run(_run(tmp_path, "frozen", 0, [0.5, 0.25]))}
    other = read_run(_run(tmp_path, "arm", 0, [0.75, 0.25]))
    with pytest.raises(ValueError, match="seed 0: the first iteration differs .* not the same tasks and episodes"):
        paired_blocks([other], frozen, block=2)


def test_every_seed_needs_its_frozen_run(tmp_path: Path) -> None:
    frozen = {0: read_run(_run(tmp_path, "frozen", 0, [0.5]))}
    with pytest.raises(ValueError, match="seed 3: no frozen run"):
        paired_blocks([read_run(_run(tmp_path, "arm", 3, [0.5]))], frozen, block=2)


def test_iterations_after_an_accepted_rewrite_are_left_out(tmp_path: Path) -> None:
    frozen = {0: read_run(_run(tmp_path, "frozen", 0, [0.5, 0.5, 0.5, 0.5]))}
    adapted = read_run(_run(tmp_path, "full", 0, [0.5, 0.75, 0.0, 0.0], accepted_at=1))
    assert adapted.paired_iterations == 2  # iteration 2's rewrite changes the draws from iteration 3 on
    ((span, d, _),) = paired_blocks([adapted], frozen, block=12, samples=200)
    assert span == "1-2" and d.estimate == pytest.approx(12.5)
    assert "| full | (left out after a rewrite) | 2 iterations |" in render("full", [adapted], frozen, 12)


def test_the_command_prints_the_table_and_names_a_bad_folder(tmp_path: Path) -> None:
    frozen = _run(tmp_path, "frozen", 0, [0.5, 0.25])
    arm = _run(tmp_path, "arm", 0, [0.5, 0.5])
    script = [sys.executable, "-m", "scripts.training_gain"]
    ok = subprocess.run([*script, "--frozen", str(frozen), "--arm", "oo", str(arm)], cwd=REPO, capture_output=True,
                        text=True)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "| oo | 1-2 | +12.5 [" in ok.stdout
    bad = subprocess.run([*script, "--frozen", str(frozen), "--arm", "oo", str(tmp_path / "nowhere")], cwd=REPO,
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "nowhere: no config.yaml" in bad.stderr and "Traceback" not in bad.stderr
