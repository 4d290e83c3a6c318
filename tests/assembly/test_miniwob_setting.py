"""+setting=miniwob: configs compose and are checked before any work; the smoke profile trains on real pages."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlanything_core.conf import CONF_DIR

REPO = Path(__file__).resolve().parents[2]

from rlanything_core.adaptation.rewriters.protocol import TaskSpec  # noqa: E402
from rlanything_core.assembly.checks import validate  # noqa: E402
from rlanything_core.assembly.setting import load_setting  # noqa: E402
from rlanything_core.config import ConfigError  # noqa: E402
from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec  # noqa: E402

ARMS = sorted(p.stem for p in (CONF_DIR / "arm").glob("*.yaml"))


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=["+setting=miniwob", *overrides])


def miniwob_tasks(cfg) -> tuple[list[TaskSpec], dict[str, list[MiniwobTaskSpec]]]:  # type: ignore[no-untyped-def]
    """The pool's roots and the split specs of ``cfg``'s MiniWoB++ setting (``rlanything_core/settings/miniwob.py``)."""
    return load_setting(cfg).environment.specs()  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _browser() -> None:
    """Skip (naming the apt packages) where Debian's Chromium is not installed."""
    from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries

    pytest.importorskip("miniwob", reason="PyPI miniwob==1.1.0 is not installed (pip install -e '.[gui]')")
    try:
        browser_binaries()
    except BrowserStartError as err:
        pytest.skip(f"apt packages chromium and chromium-driver are not installed: {err}")


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_composes_and_validates(arm: str) -> None:
    cfg = _cfg(f"arm={arm}")
    OmegaConf.to_container(cfg, resolve=True)
    validate(cfg)


@pytest.mark.parametrize(
    ("override", "key", "text"),
    [
        ("setting.train_families=[click,typing]", "setting.train_families", "unknown task family 'typing'"),
        ("setting.ood_families=[click]", "setting.ood_families", "also training pages"),
        ("setting.ood_tasks=[click-tab-2-easy]", "setting.ood_tasks", "['click-tab-2-easy'] are also training pages"),
        ("setting.train_tasks=[book-flihgt]", "setting.train_tasks", "close names: book-flight"),
        ("setting.pages_dir=/nonexistent/pages", "setting.pages_dir", "is not a folder"),
        ("setting.wait_s=60", "setting.wait_s", "expected 0..10 seconds"),
        ("setting.rewriter=magic", "setting.rewriter", "unknown 'magic'"),
    ],
)
def test_bad_keys_are_refused_naming_them(override: str, key: str, text: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(text)) as err:
        validate(_cfg(override))
    assert err.value.key == key


def test_missing_browser_is_refused_naming_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIWOB_CHROMEDRIVER", "/nonexistent/chromedriver")
    with pytest.raises(ConfigError, match="apt-get install -y chromium chromium-driver"):
        validate(_cfg())


def test_pool_and_splits_follow_the_families() -> None:
    from rlanything_core.envs.miniwob.tasks import CURATED_TASKS

    cfg = _cfg("setting.train_games=3", "setting.seeds_per_task=2", "eval.games=4")
    roots, splits = miniwob_tasks(cfg)
    assert [r.task_id for r in roots] == ["click-button#s0", "click-button#s1", "click-link#s0", "click-link#s1",
                                          "click-dialog#s0", "click-dialog#s1"]  # fmt: skip
    train_fams, ood_fams = set(cfg.setting.train_families), set(cfg.setting.ood_families)
    assert {CURATED_TASKS[s.name].family for s in splits["in_domain"]} <= train_fams
    assert {CURATED_TASKS[s.name].family for s in splits["out_of_domain"]} == ood_fams
    assert len(splits["in_domain"]) == len(splits["out_of_domain"]) == 4
    assert all(s.seed >= 100_000 for split in splits.values() for s in split)  # problems the pool never holds


def test_task_lists_take_names_families_and_own_pages(tmp_path: Path) -> None:
    from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec

    page = (Path(__file__).resolve().parents[2] / "rlanything_core/envs/miniwob/pages/rla-login-form.html").read_text()
    (tmp_path / "my-login.html").write_text(page)
    (tmp_path / "tasks.json").write_text('{"my-login": {"family": "mine"}}')
    cfg = _cfg("setting.train_families=[click]", "setting.train_tasks=[book-flight,social]", "setting.ood_families=[]",
               "setting.ood_tasks=[mine,enter-date]", f"setting.pages_dir={tmp_path}", "setting.seeds_per_task=1",
               "eval.games=2")  # fmt: skip
    validate(cfg)
    roots, splits = miniwob_tasks(cfg)
    assert [r.task_id for r in roots] == ["click-button#s0", "click-link#s0", "click-dialog#s0", "click-test#s0",
                                          "book-flight#s0", "social-media#s0", "social-media-all#s0",
                                          "social-media-some#s0"]  # fmt: skip
    assert [(s.name, s.pages_dir) for s in splits["out_of_domain"]] == [("my-login", str(tmp_path)),
                                                                         ("enter-date", None)]  # fmt: skip
    assert MiniwobTaskSpec.from_data(roots[4].data).name == "book-flight" and "pages_dir" not in roots[4].data


@pytest.mark.slow
def test_smoke_profile_trains_on_real_pages(tmp_path: Path) -> None:
    from rlanything_core.envs.miniwob.browser import tagged_browser_pids

    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.train", "+setting=miniwob", "+profile=smoke", f"run_dir={tmp_path}"],
        cwd=REPO, capture_output=True, text=True, timeout=900,
        env={**__import__("os").environ, "RLANYTHING_BROWSER_TAG": f"smoke-{tmp_path.name}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    m = re.match(r"iterations=(\d+) policy_updates=(\d+) judge_updates=(\d+) accepted_tasks=(\d+)", last)
    assert m, last
    assert int(m.group(1)) == 2 and int(m.group(2)) >= 1 and int(m.group(3)) >= 1
    print(f"miniwob smoke: {time.monotonic() - start:.0f} s, {last}")
    assert tagged_browser_pids(f"smoke-{tmp_path.name}") == [], "the run left browsers behind"
