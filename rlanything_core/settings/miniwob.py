"""MiniWoB++'s parts: real pages in Debian's Chromium, the pool and the splits chosen by family and by name.

:class:`MiniwobTasks` is what ``rlanything_core/conf/setting/miniwob.yaml`` names (``setting.parts.environment``). The
training pool holds the curated pages (``rlanything_core.envs.miniwob.tasks``) of ``train_families`` plus
``train_tasks``, any of the wheel's 130 pages or of one's own page folder (``pages_dir``), named by task or by family;
each with ``seeds_per_task`` problem seeds. The evaluation splits are ``in_domain`` (the training pages, unseen seeds)
and ``out_of_domain`` (the curated pages of ``ood_families`` plus ``ood_tasks``, never trained on). The policy scores
the DOM-derived candidate actions like ALFWorld's admissible commands; the browsers live in worker processes, one pool
for training and evaluation (:attr:`~rlanything_core.settings.protocol.Runner.BROWSERS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries
from rlanything_core.envs.miniwob.env import MiniwobEnvFactory
from rlanything_core.envs.miniwob.page_folder import PageFolderError, load_page_folder
from rlanything_core.envs.miniwob.tasks import (
    CURATED_TASKS,
    MiniwobTaskSpec,
    UnknownTaskError,
    resolve_task,
    select_tasks,
)
from rlanything_core.loop.evaluation import EvalSplit
from rlanything_core.settings.protocol import Runner, SettingError

__all__ = ["EVAL_SEED_BASE", "MiniwobTasks", "miniwob_env_task"]

EVAL_SEED_BASE = 100_000
"""Seeds of the evaluation problems (no training task uses them)."""


@dataclass(frozen=True)
class MiniwobTasks:
    """MiniWoB++ as a setting (:class:`~rlanything_core.settings.protocol.AgentTasks`).

    Attributes:
        train_families: curated families whose pages are trained on.
        ood_families: curated families held out (the ``out_of_domain`` split).
        train_tasks: other training pages, by task name or family.
        ood_tasks: other held-out pages, by task name or family.
        pages_dir: a folder of one's own MiniWoB-style pages (``None``: the wheel's and the curated ones only).
        train_games: the first N training pages (``None``: all of them).
        seeds_per_task: problem seeds per page in the pool.
        eval_games: problems per evaluation split.
        screenshots: keep screenshots in the observations.
        offer_done: list ``DONE`` among the candidate actions.
        offer_wait: list ``wait`` among the candidate actions.
        wait_s: seconds one ``wait`` lets the page run.
        max_clicks: elements per candidate page.
    """

    runner: ClassVar[Runner] = Runner.BROWSERS

    train_families: Sequence[str] = ()
    ood_families: Sequence[str] = ()
    train_tasks: Sequence[str] = ()
    ood_tasks: Sequence[str] = ()
    pages_dir: str | None = None
    train_games: int | None = None
    seeds_per_task: int = 2
    eval_games: int = 8
    screenshots: bool = True
    offer_done: bool = False
    offer_wait: bool = False
    wait_s: float = 1.0
    max_clicks: int = 60

    def check(self) -> None:
        """Refuse unknown families or tasks, a bad page folder, overlapping pools and a missing browser.

        Raises:
            SettingError: naming the parameter (``setting`` for the browser) and the fix.
        """
        families = sorted({t.family for t in CURATED_TASKS.values()})
        for param, fams in (("train_families", self.train_families), ("ood_families", self.ood_families)):
            for fam in fams:
                if str(fam) not in families:
                    fix = f"use some of {families}, or name any page or family in setting.{param.split('_')[0]}_tasks"
                    raise SettingError(param, f"unknown task family {fam!r}", fix)
        train, ood = self.pages()
        if not train:
            raise SettingError("train_families", "no training page", "name families or setting.train_tasks")
        overlap = sorted(set(train) & set(ood))
        if overlap:
            raise SettingError("ood_families" if not self.ood_tasks else "ood_tasks",
                               f"{overlap} are also training pages",
                               "keep the held-out pages disjoint from the training pages")  # fmt: skip
        if not 0 <= float(self.wait_s) <= 10:
            raise SettingError("wait_s", f"expected 0..10 seconds, got {self.wait_s}", "set a short wait")
        if int(self.max_clicks) < 1:
            raise SettingError("max_clicks", f"expected >= 1, got {self.max_clicks}", "set e.g. 60")
        try:
            browser_binaries()
        except BrowserStartError as err:
            raise SettingError("setting", str(err), "apt-get install -y chromium chromium-driver") from err

    def pages(self) -> tuple[list[str], list[str]]:
        """``(training pages, held-out pages)``: the curated pages of the families, then the named tasks and families.

        Raises:
            SettingError: ``pages_dir`` is not a valid page folder, or a task list names an unknown page.
        """
        if self.pages_dir is not None:
            try:
                load_page_folder(self.pages_dir)
            except PageFolderError as err:
                raise SettingError("pages_dir", str(err), "fix the folder (see docs/api/miniwob.md)") from err
        out = []
        for fams, param, named in (
            (self.train_families, "train_tasks", self.train_tasks),
            (self.ood_families, "ood_tasks", self.ood_tasks),
        ):
            curated = [t.name for t in CURATED_TASKS.values() if t.family in set(map(str, fams))]
            try:
                picked = select_tasks(list(map(str, named)), pages_dir=self.pages_dir, key=f"setting.{param}")
            except UnknownTaskError as err:
                raise SettingError(param, str(err), "name pages or families of all_tasks()") from err
            out.append(list(dict.fromkeys([*curated, *picked])))
        return out[0], out[1]

    def specs(self) -> tuple[list[TaskSpec], dict[str, list[MiniwobTaskSpec]]]:
        """``(training root TaskSpecs, {split: [MiniwobTaskSpec]})``: curated pages first (easy first), then named."""
        in_domain, ood_pages = self.pages()
        train_pages = in_domain if self.train_games is None else in_domain[: int(self.train_games)]
        roots = []
        for name in train_pages:
            for k in range(int(self.seeds_per_task)):
                spec = self._spec(name, k)
                task_id = f"{name}#s{k}"
                roots.append(TaskSpec(task_id=task_id, kind="miniwob", root_id=task_id, data=spec.to_data()))
        splits: dict[str, list[MiniwobTaskSpec]] = {}
        for split, pages in (("in_domain", in_domain), ("out_of_domain", ood_pages)):
            n = int(self.eval_games)
            picked = [pages[(i * len(pages)) // n] for i in range(n)] if n <= len(pages) else pages * (n // len(pages))
            splits[split] = [self._spec(p, EVAL_SEED_BASE + i) for i, p in enumerate(picked)]
        return roots, splits

    def roots(self) -> list[TaskSpec]:
        """``seeds_per_task`` problems of every training page."""
        return self.specs()[0]

    def splits(self) -> list[EvalSplit]:
        """``in_domain`` and ``out_of_domain``, their problems named ``<page>#s<seed>``."""
        return [
            EvalSplit(name, tuple(specs), tuple(f"{s.name}#s{s.seed}" for s in specs))
            for name, specs in self.specs()[1].items()
        ]

    def env_factory(self, max_steps: int) -> MiniwobEnvFactory:
        """Pages in Chromium, ``max_steps`` actions per episode."""
        return MiniwobEnvFactory(
            max_steps=max_steps, screenshots=bool(self.screenshots), offer_done=bool(self.offer_done),
            offer_wait=bool(self.offer_wait), wait_s=float(self.wait_s), max_clicks=int(self.max_clicks),
        )  # fmt: skip

    def to_env_task(self, task: TaskSpec) -> MiniwobTaskSpec:
        """See :func:`miniwob_env_task`."""
        return miniwob_env_task(task)

    def step_oracle(self) -> None:
        """MiniWoB++ has no step oracle."""
        return None

    def _spec(self, name: str, seed: int) -> MiniwobTaskSpec:
        """The spec of page ``name``: a page of ``pages_dir`` carries the folder (workers and reloads find it)."""
        own = self.pages_dir is not None and resolve_task(name, pages_dir=self.pages_dir).folder is not None
        return MiniwobTaskSpec(name, seed=seed, pages_dir=self.pages_dir if own else None)


def miniwob_env_task(task: TaskSpec) -> MiniwobTaskSpec:
    """What a MiniWoB++ environment is built from: the page spec of the pool task."""
    return MiniwobTaskSpec.from_data(task.data)
