"""The judge probe set: planner labels checked against the steps, a JSON round trip, a clear error for a bad file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rlanything_core.files import CorruptFileError
from rlanything_core.loop.judge_probe import JudgeProbe, label_probe, load_probes, probe_accuracy, save_probes
from rlanything_core.records import AgentStep, Episode, JudgeSample


def _episode(task: str, actions: list[str], votes: list[int]) -> Episode:
    steps = [
        AgentStep(observation=f"obs {i}", admissible_actions=[a, "look"], prompt_token_ids=[1, 2], token_ids=[0],
                  logprobs=[-0.5], response=a, action=a, judge=[JudgeSample(vote=v, text="")])
        for i, (a, v) in enumerate(zip(actions, votes))
    ]  # fmt: skip
    return Episode(task_id=task, group_id=0, goal="put a mug in the sink", steps=steps, won=False)


def _oracle(task: str, actions: list[str]) -> list[int]:
    return [1 if a.startswith("go") else -1 for a in actions]


def test_labels_come_from_the_oracle_and_votes_are_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    episodes = [_episode("g1", ["go to sink 1", "look"], [1, 1]), _episode("g2", [], [])]
    episodes.append(_episode("g3", ["look"], [-1]))
    probe = label_probe("in_distribution", episodes, lambda task_id: task_id, _oracle)
    assert capsys.readouterr().out == ""  # silent unless asked: the minutes of a cold label store are announced
    assert label_probe("in_distribution", episodes, lambda task_id: task_id, _oracle, progress=True) == probe
    lines = [x.split("] ", 1)[1] for x in capsys.readouterr().out.splitlines()]
    assert lines[0] == "in_distribution: the planner labels 3 probe steps: started"
    assert lines[-1].startswith("in_distribution: the planner labels 3 probe steps: done in ")
    assert [e.task_id for e in probe.episodes] == ["g1", "g3"]  # an episode without steps has nothing to label
    assert probe.labels == [[1, -1], [-1]]
    assert all(not s.judge for e in probe.episodes for s in e.steps)
    assert episodes[0].steps[0].judge  # the caller's episodes are left alone

    for e, votes in zip(probe.episodes, ([1, 1], [-1])):  # a judge votes: +1 on g1's two steps, -1 on g3's
        for step, v in zip(e.steps, votes):
            step.judge = [JudgeSample(vote=v, text="")] * 3
    metrics = probe_accuracy(probe)
    assert metrics["in_distribution/judge_process_acc"] == pytest.approx(2 / 3)
    assert metrics["in_distribution/judge_process_bacc"] == pytest.approx((1 / 2 + 1) / 2)
    assert metrics["in_distribution/oracle_progress_rate"] == pytest.approx(1 / 3)
    # mean votes 1, 1, -1 vs labels +, -, -: the progress step ties one other step (half) and beats the third
    assert metrics["in_distribution/judge_process_auc"] == pytest.approx(0.75)

    path = save_probes(tmp_path / "probe.json", [probe])
    loaded = load_probes(path)["in_distribution"]
    assert loaded.labels == probe.labels
    assert [[s.action for s in e.steps] for e in loaded.episodes] == [["go to sink 1", "look"], ["look"]]
    assert all(not s.judge for e in loaded.episodes for s in e.steps)  # votes are never persisted


def _judged(votes_per_step: list[list[int]], labels: list[int]) -> JudgeProbe:
    episode = _episode("g1", [f"step {i}" for i in range(len(labels))], [0] * len(labels))
    for step, votes in zip(episode.steps, votes_per_step):
        step.judge = [JudgeSample(vote=v, text="") for v in votes]
    return JudgeProbe("in_distribution", [episode], [labels])


def test_the_auc_sees_a_ranking_that_the_majority_vote_hides() -> None:
    # every step's majority is +1 (balanced accuracy 0.5), but progress steps get more +1 votes: the reward's judge
    # term ranks them first (AUC 1); a format failure (vote 0) is left out of the mean, as in the reward
    probe = _judged([[1, 1, 1], [1, 1, -1], [1, 0, 1], [1, -1, 1]], [1, -1, 1, -1])
    metrics = probe_accuracy(probe)
    assert metrics["in_distribution/judge_process_bacc"] == pytest.approx(0.5)
    assert metrics["in_distribution/judge_process_auc"] == pytest.approx(1.0)
    reversed_ = probe_accuracy(_judged([[1, 1, 1], [1, 1, -1]], [-1, 1]))
    assert reversed_["in_distribution/judge_process_auc"] == pytest.approx(0.0)


def test_the_auc_is_absent_when_the_probe_has_one_class() -> None:
    metrics = probe_accuracy(_judged([[1, 1, 1], [-1, -1, 0]], [-1, -1]))
    assert "in_distribution/judge_process_auc" not in metrics
    assert metrics["in_distribution/judge_process_bacc"] == pytest.approx(0.5)


def test_a_label_per_step_is_required() -> None:
    with pytest.raises(ValueError, match="one \\+1/-1 label per step"):
        JudgeProbe("in_distribution", [_episode("g1", ["look", "look"], [1, 1])], [[1]])
    with pytest.raises(ValueError, match="one \\+1/-1 label per step"):
        JudgeProbe("in_distribution", [_episode("g1", ["look"], [1])], [[0]])


def test_a_bad_file_is_named_in_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "probe.json"
    bad.write_text('{"format": 2, "probes": [{"split": "x", "labels": [[1]], "episodes": [{"nope": 1}]}]}')
    with pytest.raises(CorruptFileError, match="probe.json: malformed judge probe file"):
        load_probes(bad)
    bad.write_text('{"format": 99, "probes": []}')
    with pytest.raises(CorruptFileError, match="not a judge probe file"):
        load_probes(bad)


def test_a_file_labelled_under_other_settings_is_refused_by_name(tmp_path: Path) -> None:
    probe = label_probe("in_distribution", [_episode("g1", ["look"], [1])], lambda task_id: task_id, _oracle)
    path = save_probes(tmp_path / "probe.json", [probe], {"seed": 1, "max_steps": 30})
    assert load_probes(path, {"seed": 1, "max_steps": 30})["in_distribution"].labels == probe.labels
    with pytest.raises(ValueError, match="probe.json: .*max_steps: file 30 vs now 20\\); delete it"):
        load_probes(path, {"seed": 1, "max_steps": 20})


def _slow_kitchen(task: str, actions: list[str]) -> list[int]:
    if task.startswith("kitchen"):
        time.sleep(30)
    return _oracle(task, actions)


def test_episodes_past_the_planner_deadline_are_left_out_and_named(tmp_path: Path) -> None:
    episodes = [_episode("g1", ["go to sink 1"], [1]), _episode("kitchen-7", ["look"], [1]),
                _episode("g2", ["look", "go to desk 1"], [1, 1])]  # fmt: skip
    started = time.monotonic()
    probe = label_probe("in_distribution", episodes, lambda task_id: task_id, _slow_kitchen, deadline_s=2.0)
    assert time.monotonic() - started < 20
    assert [e.task_id for e in probe.episodes] == ["g1", "g2"] and probe.labels == [[1], [-1, 1]]
    assert probe.left_out == ["kitchen-7"]
    loaded = load_probes(save_probes(tmp_path / "probe.json", [probe]))["in_distribution"]
    assert loaded.left_out == ["kitchen-7"] and loaded.labels == probe.labels
    # a file written before the deadline existed has no left_out: it reads as none left out
    data = json.loads((tmp_path / "probe.json").read_text())
    del data["probes"][0]["left_out"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert load_probes(tmp_path / "old.json")["in_distribution"].left_out == []
