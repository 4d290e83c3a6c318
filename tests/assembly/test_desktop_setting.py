"""``+setting=desktop``: composes, validates and builds without starting a display; a short loop runs (slow)."""

import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_desktop_smoke_config_builds_without_a_display(tmp_path: Path) -> None:
    from rlanything_core.assembly import build_run
    from rlanything_core.settings.desktop import desktop_env_task

    cfg = _cfg("+setting=desktop", "+profile=smoke", f"run_dir={tmp_path}")
    roots = validate(cfg).environment.roots()
    assert len(roots) == cfg.setting.train_games == 2 and all(r.kind == "desktop" for r in roots)
    task = desktop_env_task(roots[0])
    assert task.task_id == roots[0].task_id and task.instruction == roots[0].data["instruction"]
    run = build_run(cfg)
    splits = run.loop.evaluator.splits
    assert [s.name for s in splits] == list(cfg.setting.eval_split_names)
    assert len(splits[0].tasks) == cfg.eval.games and "Hint:" in splits[1].tasks[0].instruction
    with pytest.raises(ConfigError, match="env_workers"):
        build_run(_cfg("+setting=desktop", "setting.env_workers=2", f"run_dir={tmp_path / 'b'}"))


def test_gpu_vl_model_config_composes() -> None:
    cfg = _cfg("+setting=desktop", "model=qwen3-vl-8b", "scale=gpu")
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    assert resolved["model"]["policy"]["_target_"] == "transformers.AutoModelForImageTextToText.from_pretrained"
    assert "Qwen3-VL" in str(resolved["model"]["judge"]["pretrained_model_name_or_path"])


@pytest.mark.slow
def test_desktop_loop_runs_one_iteration(tmp_path: Path) -> None:
    if any(shutil.which(n) is None for n in ("Xvfb", "soffice", "xdotool", "openbox")):
        pytest.skip("the desktop apps are not installed (make setup installs them as root)")
    from rlanything_core.assembly import build_run

    cfg = _cfg(
        "+setting=desktop",
        "+profile=smoke",
        "arm=policy",
        "iterations=1",
        "tasks_per_iteration=1",
        "setting.max_steps=2",
        "setting.eval_max_steps=2",
        "eval.games=1",
        f"run_dir={tmp_path}",
    )
    run = build_run(cfg)
    pool = run.loop.driver.collector.runner.env_factory.pool
    try:
        run.loop.run()
    finally:
        envs = list(pool._all)
        pool.close()  # also registered at exit; closed here so that no display outlives the test
    assert envs and not any(e.display.alive or e.office.pids() for e in envs)
    assert run.loop.completed == 1
    final = run.loop.evaluations[-1]
    assert {"eval/calc/success_rate", "eval/calc_hint/success_rate"} <= set(final)
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()
