"""The per-seed and per-type breakdown of an ablation's episodes.csv (rlanything_core.analysis.breakdown)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlanything_core.analysis.breakdown import by_seed_and_split, by_task_type, read_episodes, render

HEADER = "arm,seed,split,game,run,episode_seed,success,steps\n"


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "episodes.csv"
    path.write_text(HEADER + "".join(f"{line}\n" for line in lines))
    return path


def test_differences_are_per_seed_and_split_and_types_are_game_prefixes(tmp_path: Path) -> None:
    rows = read_episodes(_write(tmp_path, [
        "full,0,in,pick_clean-a/t1,0,7,1,5", "full,0,in,pick_cool-b/t2,0,7,1,9",
        "outcome_only,0,in,pick_clean-a/t1,0,7,0,30", "outcome_only,0,in,pick_cool-b/t2,0,7,1,12",
        "full,1,in,pick_clean-a/t1,0,8,0,30", "outcome_only,1,in,pick_clean-a/t1,0,8,1,4",
    ]))
    head, seed0, seed1 = by_seed_and_split(rows)
    assert head == ["seed", "split", "outcome_only", "full", "full - outcome_only"]  # the table's arm order
    assert seed0 == ["0", "in", "50.0", "100.0", "+50.0"]
    assert seed1 == ["1", "in", "100.0", "0.0", "-100.0"]
    types = {line[0]: line[1:] for line in by_task_type(rows)[1:]}
    assert types == {"pick_clean": ["50.0", "50.0", "2"], "pick_cool": ["100.0", "100.0", "1"]}
    assert render(by_task_type(rows)).splitlines()[1] == "|---|---|---|---|"


def test_a_file_without_the_episode_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "episodes.csv"
    path.write_text("arm,seed,success\nfull,0,1\n")
    with pytest.raises(ValueError, match="missing \\['game', 'split'\\]"):
        read_episodes(path)


def test_runs_as_a_module_on_a_results_folder(tmp_path: Path) -> None:
    _write(tmp_path, ["full,0,in,pick_clean-a/t1,0,7,1,5", "outcome_only,0,in,pick_clean-a/t1,0,7,0,30"])
    cmd = [sys.executable, "-m", "rlanything_core.analysis.breakdown", str(tmp_path)]
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=True)
    assert "| 0 | in | 0.0 | 100.0 | +100.0 |" in out.stdout


def test_paired_differences_from_another_arm_match_a_hand_count(tmp_path: Path) -> None:
    from rlanything_core.analysis.breakdown import paired_differences

    rows = read_episodes(_write(tmp_path, [
        "full,0,in,g-a/t,0,7,1,5", "full,0,in,g-b/t,0,7,1,5", "policy_judge,0,in,g-a/t,0,7,0,30",
        "policy_judge,0,in,g-b/t,0,7,1,9", "outcome_only,0,in,g-a/t,0,7,0,30", "outcome_only,0,in,g-b/t,0,7,0,30",
    ]))
    head, outcome_only, full = paired_differences(rows, "policy_judge")
    assert head[1] == "minus policy_judge, points [95% CI]"
    assert outcome_only[0] == "outcome_only" and outcome_only[1].startswith("-50.0 [") and outcome_only[3] == "2"
    assert full[0] == "full" and full[1].startswith("+50.0 [")
    with pytest.raises(ValueError, match="reference: expected one of the arms"):
        paired_differences(rows, "step_only")


def test_a_named_folders_arms_are_renamed_and_paired_with_anothers(tmp_path: Path) -> None:
    from rlanything_core.analysis.breakdown import paired_differences, read_folders

    profile, variant = tmp_path / "profile", tmp_path / "lr=3e-4"  # a folder's path may hold '=': the name cannot
    profile.mkdir(), variant.mkdir()
    _write(profile, ["outcome_only,0,in,g-a/t,0,7,0,30", "outcome_only,0,in,g-b/t,0,7,0,30",
                     "full,0,in,g-a/t,0,7,0,30", "full,0,in,g-b/t,0,7,1,9"])  # fmt: skip
    _write(variant, ["full,0,in,g-a/t,0,7,1,5", "full,0,in,g-b/t,0,7,1,5"])
    rows = read_folders([str(profile), f"lr3e-4={variant}"])
    assert sorted({r["arm"] for r in rows}) == ["full", "full (lr3e-4)", "outcome_only"]
    lines = {line[0]: line[1] for line in paired_differences(rows, "outcome_only")[1:]}
    assert lines["full"].startswith("+50.0 [") and lines["full (lr3e-4)"].startswith("+100.0 [")


def test_a_variant_on_fewer_seeds_is_paired_on_the_seeds_it_has(tmp_path: Path) -> None:
    from rlanything_core.analysis.breakdown import paired_differences

    rows = read_episodes(_write(tmp_path, [
        "before,0,in,g-a/t,0,7,0,30", "before,0,in,g-b/t,0,7,1,9", "before,1,in,g-a/t,0,8,1,5",
        "before,1,in,g-b/t,0,8,1,5", "variant,0,in,g-a/t,0,7,1,5", "variant,0,in,g-b/t,0,7,1,5",
    ]))
    head, variant = paired_differences(rows, "before")
    assert head[4] == "seeds" and variant[4] == "0"  # seed 1's before episodes (both won) are not in the difference
    assert variant[1].startswith("+50.0 [") and variant[3] == "2"
    rows += read_episodes(_write(tmp_path, ["other,5,in,g-a/t,0,9,1,5"]))
    with pytest.raises(ValueError, match="arm 'other': no seed in common with 'before'"):
        paired_differences(rows, "before")


def test_the_measured_mdd_grows_with_the_seeds_spread(tmp_path: Path) -> None:
    """Two seeds, four games each: seeds that agree (the same mean difference) give the units-only MDD
    (2.80 x 0.577 / sqrt(8) = 57.2 points); seeds that disagree (+0 and +100 points) add their spread."""
    from rlanything_core.analysis.breakdown import paired_differences

    def episodes(arm: str, seed: int, wins: str) -> list[str]:
        return [f"{arm},{seed},in,g-{i}/t,0,7,{w},5" for i, w in enumerate(wins)]

    agree = episodes("before", 0, "0000") + episodes("before", 1, "0000")
    agree += episodes("full", 0, "1100") + episodes("full", 1, "0011")
    disagree = episodes("before", 0, "0000") + episodes("before", 1, "0000")
    disagree += episodes("full", 0, "0000") + episodes("full", 1, "1111")
    _, same = paired_differences(read_episodes(_write(tmp_path, agree)), "before")
    _, spread = paired_differences(read_episodes(_write(tmp_path, disagree)), "before")
    assert same[2] == "57.2"
    assert spread[2] == "140.1"  # within-seed noise 0, seed spread 70.7 points: 2.80 x 70.7 / sqrt(2)


def test_group_differences_are_the_hand_counted_means_within_each_group(tmp_path: Path) -> None:
    from rlanything_core.analysis.breakdown import paired_by_group, paired_differences

    rows = read_episodes(_write(tmp_path, [
        # clean/cool/heat: policy loses both (-100 points); look: policy wins one of two (+50); pick-two: equal
        "policy,0,in,pick_clean_then_place_in_recep-a/t,0,7,0,30",
        "outcome_only,0,in,pick_clean_then_place_in_recep-a/t,0,7,1,5",
        "policy,0,out,pick_heat_then_place_in_recep-b/t,0,8,0,30",
        "outcome_only,0,out,pick_heat_then_place_in_recep-b/t,0,8,1,5",
        "policy,0,in,look_at_obj_in_light-c/t,0,7,1,5", "outcome_only,0,in,look_at_obj_in_light-c/t,0,7,0,30",
        "policy,0,in,pick_and_place_simple-d/t,0,7,1,5", "outcome_only,0,in,pick_and_place_simple-d/t,0,7,1,5",
        "policy,0,in,pick_two_obj_and_place-e/t,0,7,1,5", "outcome_only,0,in,pick_two_obj_and_place-e/t,0,7,1,5",
    ]))  # fmt: skip
    head, *lines = paired_by_group(rows, "outcome_only")
    assert head[:3] == ["arm", "task types", "minus outcome_only, points [95% CI]"]
    got = {line[1]: (line[2].split(" [")[0], line[4]) for line in lines}
    # one seed: the seed-level bootstrap's estimate is the plain mean of the paired differences
    assert got == {"All": ("-20.0", "5"), "clean/cool/heat": ("-100.0", "2"), "look + pick-and-place": ("+50.0", "2"),
                   "pick-two": ("+0.0", "1")}  # fmt: skip
    assert lines[0][2:] == paired_differences(rows, "outcome_only")[1][1:]  # "All" is the pooled difference


def test_a_group_without_episodes_is_named(tmp_path: Path) -> None:
    from rlanything_core.analysis.breakdown import paired_by_group

    rows = read_episodes(_write(tmp_path, ["policy,0,in,look_at_obj_in_light-c/t,0,7,1,5",
                                           "outcome_only,0,in,look_at_obj_in_light-c/t,0,7,0,30"]))  # fmt: skip
    with pytest.raises(ValueError, match="groups\\['clean/cool/heat'\\]"):
        paired_by_group(rows, "outcome_only")
    assert len(paired_by_group(rows, "outcome_only", groups={"look": ("look_at_obj_in_light",)})) == 3
