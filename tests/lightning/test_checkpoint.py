"""Checkpoint helpers that need no process group: the optimizer state a sharded save writes, and reading back."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rlanything_core.lightning.checkpoint import initialize_optimizer_state, read_checkpoint, resume_path


def _trajectory(initialize: bool, weight_decay: float) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=weight_decay)
    before = [p.detach().clone() for p in model.parameters()]
    if initialize:  # what a sharded save does to an optimizer that has not stepped yet
        assert initialize_optimizer_state(opt)
        assert set(opt.state[model.weight]) == {"step", "exp_avg", "exp_avg_sq"}
        assert all(p.grad is None for p in model.parameters())  # gradients untouched
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # weights untouched
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(5, 4, generator=gen)).pow(2).sum().backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()] + [opt.state[model.weight]["step"]]


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_an_initialized_optimizer_state_is_the_one_the_first_step_makes(weight_decay: float) -> None:
    """Bit-identical updates with and without the initialization (a left-over step count would change Adam's bias
    correction: the first update would shrink, as torch.distributed.checkpoint's own zero-lr step does)."""
    plain, initialized = _trajectory(False, weight_decay), _trajectory(True, weight_decay)
    assert all(torch.equal(a, b) for a, b in zip(plain, initialized))


def test_an_optimizer_that_has_stepped_is_left_alone() -> None:
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    state = {k: v.clone() for k, v in opt.state[model.weight].items()}
    assert not initialize_optimizer_state(opt)
    assert all(torch.equal(state[k], opt.state[model.weight][k]) for k in state)


def test_read_checkpoint_and_resume_path(tmp_path: Path) -> None:
    assert resume_path(tmp_path / "last.ckpt") is None
    (tmp_path / "empty").mkdir()
    assert resume_path(tmp_path / "empty") is None  # a directory without the sharded metadata: not a checkpoint
    with pytest.raises(ValueError, match="path"):
        read_checkpoint(tmp_path / "empty")
    torch.save({"state_dict": {"w": torch.ones(2)}}, tmp_path / "last.ckpt")
    assert resume_path(tmp_path / "last.ckpt") == tmp_path / "last.ckpt"
    assert torch.equal(read_checkpoint(tmp_path / "last.ckpt")["state_dict"]["w"], torch.ones(2))


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda raw: b"", "checkpoint file is empty"),
        (lambda raw: raw[: len(raw) // 2], "unreadable"),
        (lambda raw: raw[:-30], "unreadable"),
        (lambda raw: b"\x00" * len(raw), "unreadable"),
        (lambda raw: raw.replace(b"data.pkl", b"data.pkx"), "no data.pkl"),
    ],
)
def test_a_damaged_checkpoint_is_named_in_one_line(tmp_path: Path, damage, problem: str) -> None:  # type: ignore[no-untyped-def]
    """Old behaviour: ``resume_path`` accepted any file and ``torch.load`` failed later with a bare ``EOFError``,
    ``RuntimeError`` or ``struct.error`` naming no file."""
    from rlanything_core.files import CorruptFileError

    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": {"w": torch.arange(1000.0)}, "epoch": 3}, path)
    path.write_bytes(damage(path.read_bytes()))
    for read in (resume_path, read_checkpoint):
        with pytest.raises(CorruptFileError, match=problem) as info:
            read(path)
        message = str(info.value)
        assert message.startswith(str(path)) and "move it aside and rerun" in message and "\n" not in message


def test_a_flipped_byte_in_the_pickle_fails_its_crc(tmp_path: Path) -> None:
    from rlanything_core.files import CorruptFileError

    path = tmp_path / "last.ckpt"
    torch.save({"epoch": 3, "note": "x" * 200}, path)
    raw = bytearray(path.read_bytes())
    at = bytes(raw).index(b"x" * 200)
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptFileError, match="Bad CRC"):
        resume_path(path)


def test_a_dangling_sharded_checkpoint_link_is_named(tmp_path: Path) -> None:
    """Old behaviour: ``resume_path`` returned None and the run silently started over from iteration 0."""
    from rlanything_core.files import CorruptFileError

    (tmp_path / ".shards" / "last-abc").mkdir(parents=True)
    link = tmp_path / "last.ckpt"
    link.symlink_to(".shards/last-abc")
    with pytest.raises(CorruptFileError, match=r"last.ckpt: links to .shards/last-abc, which is not a complete"):
        resume_path(link)
    (tmp_path / ".shards" / "last-abc").rmdir()
    with pytest.raises(CorruptFileError, match="move it aside and rerun"):
        resume_path(link)


def test_a_sharded_checkpoint_is_read_back_whole_through_the_public_conversion(tmp_path: Path) -> None:
    import torch.distributed.checkpoint as dcp

    from rlanything_core.lightning.checkpoint import METADATA

    shards = tmp_path / "shards"
    weights = {"policy.w": torch.arange(6.0).reshape(2, 3), "judge.b": torch.ones(4)}
    optimizer = {"state": {"policy.w": {"exp_avg": torch.full((2, 3), 0.5), "step": torch.tensor(3.0)}},
                 "param_groups": [{"lr": 1e-6, "params": ["policy.w"]}]}  # fmt: skip
    dcp.save({"state_dict": weights, "optimizer_0": optimizer}, checkpoint_id=str(shards), no_dist=True)
    torch.save({"loop": {"iteration": 7}}, shards / METADATA)
    (tmp_path / "last.ckpt").symlink_to("shards")
    state = read_checkpoint(tmp_path / "last.ckpt")
    assert state["loop"] == {"iteration": 7}
    assert torch.equal(state["state_dict"]["policy.w"], weights["policy.w"])
    assert torch.equal(state["state_dict"]["judge.b"], weights["judge.b"])
    assert torch.equal(state["optimizer_0"]["state"]["policy.w"]["exp_avg"], torch.full((2, 3), 0.5))
    assert state["optimizer_0"]["param_groups"][0]["lr"] == 1e-6
