from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.metrics import (
    acceptance_rate,
    accepted_per_iteration,
    difficulty_before_after,
    plot_accepted_growth,
    plot_difficulty_shift,
    rejection_reasons,
    summarize,
)
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec


def _roots(n: int = 5) -> list[TaskSpec]:
    return [TaskSpec(task_id=f"r{i}", kind="dummy", root_id=f"r{i}", data={"i": i}) for i in range(n)]


def _cand(parent: TaskSpec, tag: str, direction: str = "harder", valid: bool = True) -> Candidate:
    task = TaskSpec(f"{parent.root_id}@v{parent.version + 1}-{tag}", "dummy", parent.root_id, parent.version + 1)
    return Candidate(task, parent.task_id, parent.root_id, direction, "test", valid=valid,
                     reason=None if valid else RejectReason.UNSOLVABLE)


def test_sampling_is_deterministic(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(10))
    a = [t.task_id for t in pool.sample(4, seed=1, iteration=3)]
    assert a == [t.task_id for t in pool.sample(4, seed=1, iteration=3)]
    assert a != [t.task_id for t in pool.sample(4, seed=1, iteration=4)] or a != [
        t.task_id for t in pool.sample(4, seed=2, iteration=3)]
    assert len(pool.sample(50, seed=0, iteration=0)) == 10 and len(set(a)) == 4
    with pytest.raises(ValueError, match="k"):
        pool.sample(-1, seed=0, iteration=0)


def test_requests_candidates_and_acceptance_rule(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(3))
    reqs = pool.requests({"r0": 1.0, "r1": 0.5, "r2": 0.1})
    assert [(t.task_id, d) for t, d, _ in reqs] == [("r0", Direction.HARDER), ("r2", Direction.EASIER)]
    r0, r2 = pool.tasks["r0"], pool.tasks["r2"]
    chosen = pool.add_candidates([_cand(r0, "bad", valid=False), _cand(r0, "a"), _cand(r0, "b")], parent_acc=1.0,
                                 iteration=0)
    assert chosen == "r0@v1-a" and len(pool.pending) == 1
    pool.add_candidates([_cand(r2, "e", "easier")], parent_acc=0.1, iteration=0)
    assert pool.requests({"r0": 1.0}) == []  # slot busy
    assert [t.task_id for t in pool.pending_tasks()] == ["r0@v1-a", "r2@v1-e"]
    d = pool.resolve("r0@v1-a", 0.5, iteration=1)
    assert d.accepted and pool.slots["r0"].active_id == "r0@v1-a" and pool.slots["r0"].version == 1
    d2 = pool.resolve("r2@v1-e", 0.0, iteration=1)  # acc' == 0 never accepted
    assert not d2.accepted and pool.slots["r2"].active_id == "r2" and "r2@v1-e" not in pool.tasks
    with pytest.raises(ValueError, match="not pending"):
        pool.resolve("r2@v1-e", 0.5, iteration=1)
    pool.record_rates({"r0@v1-a": 0.5, "r1": 0.5, "r2": 0.1}, iteration=1)
    pool.save()
    again = TaskPool.load(tmp_path, writer=False)
    assert again.accepted_ids() == ["r0@v1-a"] and again.slots == pool.slots and again.events == pool.events
    with pytest.raises(RuntimeError, match="writer"):
        again.save()


def test_harder_rewrite_below_band_is_rejected(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(1))
    pool.add_candidates([_cand(pool.tasks["r0"], "x")], parent_acc=0.9, iteration=0)
    assert not pool.resolve("r0@v1-x", 0.125, iteration=1).accepted  # below the band's low end


def test_single_writer_lock_and_resume(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(2))
    pool.save()
    with pytest.raises(RuntimeError, match="writer lock"):
        TaskPool.load(tmp_path)
    pool.close()
    resumed = TaskPool.load(tmp_path)
    assert resumed.generation == 1 and set(resumed.slots) == {"r0", "r1"}
    state = json.loads((tmp_path / "pool" / "state.json").read_text())
    assert all((tmp_path / "pool" / "tasks" / name).is_file() for name in state["task_files"].values())


def test_load_rejects_inconsistent_state(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(2))
    pool.save()
    pool.close()
    path = tmp_path / "pool" / "state.json"
    state = json.loads(path.read_text())
    state["slots"][0]["active_id"] = "ghost"
    state["task_files"].pop("r0")
    path.write_text(json.dumps(state))
    with pytest.raises(ValueError, match="unknown"):
        TaskPool.load(tmp_path, writer=False)


def test_metrics_and_plots(tmp_path: Path) -> None:
    pool = TaskPool.create(tmp_path, _roots(4))
    pool.record_rates({"r0": 1.0, "r1": 0.0, "r2": 0.5, "r3": 0.9}, iteration=0)
    for it in range(3):
        for slot in ("r0", "r3"):
            active = pool.tasks[pool.slots[slot].active_id]
            pool.add_candidates([_cand(active, f"i{it}"), _cand(active, "z", valid=False)], parent_acc=0.95,
                                iteration=it)
    # resolve in a second pass
        for tid in list(pool.pending):
            pool.resolve(tid, 0.5 if it < 2 else 0.0, iteration=it)
    pool.record_rates({pool.slots[s].active_id: 0.5 for s in pool.slots}, iteration=2)
    assert accepted_per_iteration(pool.events) == [2, 4, 4]
    assert acceptance_rate(pool.events) == pytest.approx(4 / 6)
    assert rejection_reasons(pool.events) == {"valid": 6, "unsolvable": 6}
    before, after = difficulty_before_after(pool.events)
    assert sorted(before) == [0.0, 0.5, 0.9, 1.0] and after == [0.5] * 4
    s = summarize(pool.events)
    assert s["accepted"] == 4 and s["in_band_before"] == 0.25 and s["in_band_after"] == 1.0
    assert s["accepted_mean_acc"] == 0.5
    fig = plot_accepted_growth(pool.events)
    fig2 = plot_difficulty_shift(before, after)
    fig.savefig(tmp_path / "a.png")
    fig2.savefig(tmp_path / "b.png")
    assert (tmp_path / "a.png").stat().st_size > 1000
