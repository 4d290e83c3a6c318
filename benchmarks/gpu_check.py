"""Verify a GPU install in one command: ``python -m benchmarks.gpu_check`` (about 5-8 minutes on one GPU).

Each stage prints one JSON line (``{"stage": ..., "status": "ok" | "failed" | "skipped", ...}``); the last line is
``gpu_check ok=<n> failed=<n> skipped=<n> seconds=<s>`` and the exit status is 1 when a stage failed. What it covers
(the checks first run by hand on an H200):

- ``env``: torch/transformers versions, the device, bf16 support, FSDP2's public API (``sharding.require_fsdp2``);
- ``fsdp2``: ``shard_model`` on a one-device mesh: one unit per decoder layer plus the root, fp32 master weights
  (``DTensor`` shards), bf16 compute inside ``gathered``, gradients against an unsharded fp32 copy (relative error),
  the clipped norm of both, and an AdamW step at lr 1e-6 that changes the fp32 masters (it would vanish in bf16);
- ``packing``: packed log-probs against the padded ones on the device (``training/packing.py``): the dense-mask
  fallback in fp32, and the variable-length kernel ``training/packed_attention.py`` chose (named) under bf16;
- ``train``: ``experiments/train.py``, 2 iterations with evaluation (TextWorld; on a GPU at ``scale=1gpu`` with a
  model of ~0.5B parameters), its contract line, its peak GPU memory and the blocking part of each checkpoint;
- ``memory_plan``: ``scripts/memory_plan.py``'s plan of that same run against the measured peak;
- ``update`` (this and the next two in ``benchmarks/gpu_stages.py``): ``benchmarks.bench_update``: the library's update
  against a plain transformers loop on the same tokens (tokens/s, ratio, peak memory), the library side as
  ``train.py`` runs it at the scale (FSDP2, activation checkpointing, micro-batch budget: named in the record), and
  the fraction of the device's bf16 matrix rate it reaches;
- ``generation``: the transformers backend (``TransformersBackend``) against a plain ``model.generate`` on the same
  prompts (generated tokens/s);
- ``vllm``: the vLLM backend's decode tokens/s next to the transformers backend's on the same model and prompts, when
  vLLM is importable (skipped otherwise, with the reason).

``--dry`` runs every stage on the CPU at tiny sizes (CI and ``tests/benchmarks/test_gpu_check.py`` prove the script
runs end to end); without ``--dry`` and without CUDA it refuses to start, naming the fix.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks import bench_update
from benchmarks.gpu_stages import Skipped, _device, _small_model, stage_generation, stage_update, stage_vllm

__all__ = ["STAGES", "main", "run_stages"]

REPO = Path(__file__).resolve().parents[1]
GIB = 2**30
SUMMARY = re.compile(
    r"^iterations=(\d+) policy_updates=(\d+) judge_updates=(\d+) accepted_tasks=(\d+) checkpoint=(\S+)$"
)
PEAK = re.compile(r"^gpu_check_peak_bytes=(\d+)$")


def stage_env(args: argparse.Namespace) -> dict[str, Any]:
    import transformers

    from rlanything_core.lightning.sharding import require_fsdp2

    require_fsdp2()
    out: dict[str, Any] = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "device": "cpu (dry)",
    }
    if not args.dry:
        out["device"] = torch.cuda.get_device_name(0)
        out["bf16"] = torch.cuda.is_bf16_supported()
        out["memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / GIB, 1)
    return out


def stage_fsdp2(args: argparse.Namespace) -> dict[str, Any]:
    from torch.distributed.device_mesh import init_device_mesh

    from rlanything_core.lightning.sharding import (
        ShardingConfig,
        clip_grad_norm,
        decoder_layers,
        fsdp_units,
        gathered,
        shard_model,
    )

    device = _device(args)
    bench_update.single_process_group(device)
    model = _small_model(args, device)
    reference = copy.deepcopy(model)  # unsharded fp32
    shard_model(model, init_device_mesh(device.type, (1,)), ShardingConfig(activation_checkpointing=True))
    units, layers = fsdp_units(model), decoder_layers(model)
    out: dict[str, Any] = {
        "units": len(units),
        "units_are_layers_plus_root": units[0] is model and [id(u) for u in units[1:]] == [id(x) for x in layers],
        "masters": sorted({str(p.dtype) for p in model.parameters()}),
        "masters_sharded": all(type(p).__name__ == "DTensor" for p in model.parameters()),
    }
    with torch.no_grad(), gathered(model):
        out["compute_dtype"] = str(next(layers[0].parameters()).dtype)
    rows = bench_update.make_rows(4, 24, 96, response_frac=0.5, vocab=model.config.vocab_size, seed=1)
    ids, mask, score = rows.rows.input_ids.to(device), rows.rows.attention_mask, rows.rows.response_mask
    from rlanything_core.training.packing import packed_token_logprobs

    for m in (model, reference):
        m.train()
        (-packed_token_logprobs(m, ids, mask, score_mask=score).sum() / int(score.sum())).backward()
    num = sum(
        float((p.grad.full_tensor().float() - q.grad).norm() ** 2)
        for p, q in zip(model.parameters(), reference.parameters())
    )
    den = sum(float(q.grad.norm() ** 2) for q in reference.parameters())
    out["grad_rel_err"] = round((num / max(den, 1e-30)) ** 0.5, 5)
    out["clipped_norm"] = round(float(clip_grad_norm(model.parameters(), 1.0)), 5)
    out["reference_norm"] = round(float(torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)), 5)
    before = [p.full_tensor().detach().clone() for p in model.parameters()]
    torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.0).step()
    changed = sum(int((p.full_tensor() != b).sum()) for p, b in zip(model.parameters(), before))
    total = sum(b.numel() for b in before)
    out["adamw_1e-6_changed_fraction"] = round(changed / total, 4)
    bf16 = [b.to(torch.bfloat16) for b in before]
    kept = sum(int((p.full_tensor().to(torch.bfloat16) != b).sum()) for p, b in zip(model.parameters(), bf16))
    out["same_step_in_bf16_changed_fraction"] = round(kept / total, 4)
    problems = []
    if not out["units_are_layers_plus_root"]:
        problems.append("units")
    if out["masters"] != ["torch.float32"] or not out["masters_sharded"]:
        problems.append("masters")
    if out["compute_dtype"] != "torch.bfloat16":
        problems.append("compute dtype")
    if out["grad_rel_err"] > 0.05:
        problems.append("gradients")
    if out["adamw_1e-6_changed_fraction"] < 0.9:
        problems.append("fp32 step")
    if problems:
        raise AssertionError(f"fsdp2: {', '.join(problems)} wrong: {out}")
    return out


def stage_packing(args: argparse.Namespace) -> dict[str, Any]:
    from rlanything_core.training.logprobs import sequence_token_logprobs
    from rlanything_core.training.packing import packed_token_logprobs

    device = _device(args)
    model = _small_model(args, device, seed=2).eval()
    rows = bench_update.make_rows(6, 8, 128, response_frac=0.5, vocab=model.config.vocab_size, seed=2)
    ids, mask, score = rows.rows.input_ids.to(device), rows.rows.attention_mask, rows.rows.response_mask
    from rlanything_core.training.packed_attention import select_backend

    backend = select_backend(device)
    with torch.no_grad():
        padded = sequence_token_logprobs(model, ids, mask, score_mask=score)
        packed = packed_token_logprobs(model, ids, mask, score_mask=score, attention="dense")
    err = float((padded - packed).abs().max())
    if err > 1e-3:
        raise AssertionError(f"packing: packed log-probs differ from the padded ones by {err}")
    out: dict[str, Any] = {"max_abs_err": err, "attention": backend}
    if backend != "dense":  # the varlen kernels run in half precision: against the padded path under the same bf16
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
            padded_bf16 = sequence_token_logprobs(model, ids, mask, score_mask=score)
            varlen = packed_token_logprobs(model, ids, mask, score_mask=score)
        err_varlen = float((padded_bf16 - varlen).abs().max())
        err_bf16 = float((padded_bf16 - padded).abs().max())  # what bf16 itself costs the padded path
        out.update(max_abs_err_varlen=err_varlen, max_abs_err_padded_bf16=err_bf16)
        if err_varlen > 2 * err_bf16 + 1e-3:
            raise AssertionError(f"packing: {backend} log-probs differ by {err_varlen} (bf16 alone: {err_bf16})")
    return out


def _train_overrides(args: argparse.Namespace) -> list[str]:
    """A 2-iteration TextWorld run with evaluation; on a GPU at scale=1gpu with a ~0.5B Llama-shaped random model.

    One-room quests of length 1 and near-uniform sampling (temperature 20), as ``tests/experiments/_runs.py``: a
    random policy then wins often enough, and the judge's votes disagree enough, for both models to get updates.
    """
    quick = [
        "+setting=textworld",
        "setting.train_quest_lengths=[1]",
        "setting.train_rooms=[1]",
        "setting.seeds_per_cell=2",
        "setting.nb_objects=3",
        "setting.eval_quest_lengths=[1]",
        "setting.max_steps=4",
        "setting.eval_max_steps=4",
        "iterations=2",
        "tasks_per_iteration=2",
        "group_size=4",
        "eval.games=1",
        "model.temperature=20",
        "model.judge_temperature=20",
        "eval.at_start=false",
        "progress=false",
        "model=tiny",
        "model.policy.tokenizer=tiny",
        "model.judge.tokenizer=tiny",
    ]
    if args.dry:  # the shortest run that goes through every phase (it may make no update: the test asks for none)
        small = ["group_size=2", "setting.max_steps=3", "setting.eval_max_steps=3"]
        keys = {o.split("=")[0] for o in small}
        return [*(o for o in quick if o.split("=")[0] not in keys), "scale=cpu", "model.max_new_tokens=8", *small]
    size = ["model.policy.hidden=896", "model.policy.layers=24", "model.judge.hidden=896", "model.judge.layers=24"]
    return [*quick, "scale=1gpu", *size, "model.max_new_tokens=32"]


def _checkpoint_seconds(run_dir: Path) -> list[float]:
    """The blocking part of each iteration's checkpoint (``time/checkpoint_s`` in the run's ``metrics.csv``).

    At ``scale=1gpu`` the shards are written in the background (``lightning/checkpoint.py``): this is the copy.
    """
    from rlanything_core.lightning.csv_logger import read_metrics_csv

    seconds: list[float] = []
    for path in sorted(run_dir.rglob("metrics.csv")):
        _, rows = read_metrics_csv(path)
        seconds += [
            round(float(r["time/checkpoint_s"]), 3) for r in rows if r.get("time/checkpoint_s") not in (None, "")
        ]
    return seconds


def stage_train(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Path(args.work) / "train"
    overrides = [*_train_overrides(args), f"run_dir={run_dir}", "resume=false"]
    # the run as a user starts it, plus one line at exit with the process's peak GPU memory
    code = (
        "import atexit, runpy, sys, torch\n"
        "atexit.register(lambda: print(f'gpu_check_peak_bytes={torch.cuda.max_memory_allocated() if "
        "torch.cuda.is_available() else 0}', flush=True))\n"
        "sys.argv = ['experiments/train.py', *sys.argv[1:]]\n"
        "runpy.run_path('experiments/train.py', run_name='__main__')\n"
    )
    started = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, "-c", code, *overrides],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=args.train_timeout,
    )
    lines = proc.stdout.strip().splitlines()
    contract = next((x for x in reversed(lines) if SUMMARY.match(x.strip())), None)
    peak = next((int(m.group(1)) for x in reversed(lines) if (m := PEAK.match(x.strip()))), 0)
    if proc.returncode != 0 or contract is None:
        raise AssertionError(f"train: rc={proc.returncode}, no contract line; stderr tail: {proc.stderr[-1500:]}")
    match = SUMMARY.match(contract.strip())
    assert match is not None
    evaluated = sorted(p.name for p in run_dir.rglob("*eval*"))
    out = {
        "checkpoint_s": _checkpoint_seconds(run_dir),
        "contract": contract.strip(),
        "iterations": int(match.group(1)),
        "policy_updates": int(match.group(2)),
        "judge_updates": int(match.group(3)),
        "eval_files": evaluated[:5],
        "peak_gib": round(peak / GIB, 2),
        "wall_s": round(time.perf_counter() - started, 1),
        "overrides": overrides,
    }
    if out["iterations"] != 2 or not evaluated:
        raise AssertionError(f"train: expected 2 iterations and an evaluation, got {out}")
    args.measured_peak_bytes = peak
    return out


def stage_memory_plan(args: argparse.Namespace) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir

    from rlanything_core.assembly.memory_plan import plan
    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="train", overrides=_train_overrides(args))
    p = plan(cfg)
    out: dict[str, Any] = {
        "plan_training_gib": round(p.training / GIB, 2),
        "plan_rollout_gib": round(p.rollout / GIB, 2),
        "plan_peak_gib": round(p.peak / GIB, 2),
        "fits": p.fits,
    }
    measured = getattr(args, "measured_peak_bytes", None)
    if args.dry or not measured:
        out["measured"] = "no GPU peak (dry run)" if args.dry else "no train stage peak"
        return out
    out["measured_peak_gib"] = round(measured / GIB, 2)
    out["measured_over_plan"] = round(measured / p.peak, 3)
    if measured > p.peak:
        raise AssertionError(f"memory_plan: measured peak {measured / GIB:.2f} GiB above the plan's {p.peak / GIB:.2f}")
    return out


STAGES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "env": stage_env,
    "fsdp2": stage_fsdp2,
    "packing": stage_packing,
    "train": stage_train,
    "memory_plan": stage_memory_plan,
    "update": stage_update,
    "generation": stage_generation,
    "vllm": stage_vllm,
}


def run_stages(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the chosen stages in order; one JSON line each, then the summary line. Returns the records."""
    records = []
    started = time.perf_counter()
    for name in args.stages.split(","):
        if name not in STAGES:
            raise ValueError(f"--stages: unknown stage {name!r}; expected some of {','.join(STAGES)}")
        t0 = time.perf_counter()
        try:
            record = {"stage": name, "status": "ok", **STAGES[name](args)}
        except Skipped as why:
            record = {"stage": name, "status": "skipped", "reason": str(why)}
        except Exception as exc:  # a failed stage is reported; the others still run
            record = {
                "stage": name,
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:],
            }
        record["seconds"] = round(time.perf_counter() - t0, 1)
        records.append(record)
        print(json.dumps(record, default=str), flush=True)
    counts = {s: sum(r["status"] == s for r in records) for s in ("ok", "failed", "skipped")}
    print(
        f"gpu_check ok={counts['ok']} failed={counts['failed']} skipped={counts['skipped']} "
        f"seconds={time.perf_counter() - started:.1f}",
        flush=True,
    )
    return records


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, refuse a GPU check without CUDA, run the stages; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry", action="store_true", help="every stage on the CPU at tiny sizes (CI)")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--work", default=None, help="folder for the train run and the vLLM model (default: temp)")
    parser.add_argument("--train-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if not args.dry and not torch.cuda.is_available():
        parser.error(
            "no CUDA device (torch.cuda.is_available() is False): run on a GPU machine with a CUDA build "
            "of torch, or pass --dry for the CPU run of every stage"
        )
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        args.work = args.work or tmp
        records = run_stages(args)
    return 1 if any(r["status"] == "failed" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
