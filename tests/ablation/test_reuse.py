"""ablation.reuse: a finished run is copied only when its config, mapped to this folder, is the expected one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlanything_core.ablation.reuse import reuse_file, reuse_run


def _run(root: Path, name: str, config: str) -> Path:
    run = root / "runs" / name
    (run / "logs").mkdir(parents=True)
    (run / "config.yaml").write_text(config)
    (run / "logs" / "metrics.csv").write_text("iteration,success\n0,0.5\n")
    return run


def test_a_run_is_reused_only_with_the_same_config_and_its_paths_are_mapped(tmp_path: Path) -> None:
    a, b = tmp_path / "default", tmp_path / "full"
    source = _run(a, "full_seed0", f"run_dir: {a}/runs/full_seed0\nlr: 0.1\n")
    target = b / "runs" / "full_seed0"
    assert not reuse_run(source, target, f"run_dir: {b}/runs/full_seed0\nlr: 0.2\n", a, b)  # another lr
    assert not target.exists()
    target.mkdir(parents=True)
    (target / "stale.txt").write_text("an unfinished attempt")
    assert reuse_run(source, target, f"run_dir: {b}/runs/full_seed0\nlr: 0.1\n", a, b)
    assert (target / "config.yaml").read_text() == f"run_dir: {b}/runs/full_seed0\nlr: 0.1\n"
    assert (target / "logs" / "metrics.csv").read_text() == (source / "logs" / "metrics.csv").read_text()
    assert not (target / "stale.txt").exists() and not list(target.parent.glob("*.reusing"))
    assert not reuse_run(a / "runs" / "missing", b / "runs" / "x", "", a, b)


def test_a_file_is_reused_only_when_it_was_made_the_same_way(tmp_path: Path) -> None:
    source, target = tmp_path / "a" / "policy.pt", tmp_path / "b" / "init" / "policy.pt"
    source.parent.mkdir()
    source.write_bytes(b"weights")
    assert not reuse_file(source, target, '["--epochs", "2"]', '["--epochs", "3"]')
    assert not target.exists()
    assert reuse_file(source, target, '["--epochs", "2"]', '["--epochs", "2"]')
    assert target.read_bytes() == b"weights"
    assert not reuse_file(tmp_path / "none.pt", target, "", "")


def test_seed_workers_reusing_the_same_file_at_once_all_succeed(tmp_path: Path) -> None:
    # the ablation's seed workers reuse the shared probe set at the same moment (step_only, as measured on 2026-11-28:
    # with one shared ".reusing" name the second worker's rename found the file already moved and the worker died)
    source, target = tmp_path / "full" / "probe.json", tmp_path / "step_only" / "init" / "probe.json"
    source.parent.mkdir()
    source.write_bytes(b"x" * 1_000_000)
    target.parent.mkdir(parents=True)
    target.with_name(target.name + ".reusing").mkdir()  # what a crashed worker of the old scheme could leave behind
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda _: reuse_file(source, target, "made", "made"), range(32)))
    assert all(done) and target.read_bytes() == source.read_bytes()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_run_is_reused_when_only_the_key_order_of_its_config_differs(tmp_path: Path) -> None:
    # the order of config groups (train.yaml's defaults) changes the order of keys, not the configuration
    a, b = tmp_path / "default", tmp_path / "full"
    source = _run(a, "full_seed0", f"run_dir: {a}/runs/full_seed0\nsetting:\n  max_steps: 20\n  name: alfworld\n")
    target = b / "runs" / "full_seed0"
    reordered = f"run_dir: {b}/runs/full_seed0\nsetting:\n  name: alfworld\n  max_steps: 20\n"
    assert reuse_run(source, target, reordered, a, b)


def test_the_judge_probe_is_copied_only_for_the_same_starting_weights(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from rlanything_core.ablation.runs import judge_probe_file

    source, out = tmp_path / "default", tmp_path / "full"
    (source / "init").mkdir(parents=True)
    (source / "init" / "policy_seed0.pt").write_bytes(b"weights")
    (source / "init" / "judge_probe_policy_seed0.json").write_text("{}")
    (out / "init").mkdir(parents=True)
    init = out / "init" / "policy_seed0.pt"
    cfg = OmegaConf.create({"reuse_from": "default"})

    init.write_bytes(b"other weights")  # another starting policy plays other probe episodes: label them anew
    assert not judge_probe_file(cfg, out, init).exists()
    init.write_bytes(b"weights")
    assert judge_probe_file(cfg, out, init).read_text() == "{}"
