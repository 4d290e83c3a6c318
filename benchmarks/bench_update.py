"""Policy-update throughput: the library's packed update against a plain padded transformers loop, same rows, one run.

    python -m benchmarks.bench_update                       # CPU: a small Qwen2-shaped model, ~1 minute
    python -m benchmarks.bench_update --shape qwen2.5-1.5b  # a GPU: the issue-26 shape (48 rows of 512-2048 tokens)

Both sides start from the same random weights and train on the same rows (prompt then response, right-padded, of
uneven lengths; the response is the last ``--response-frac`` of each row), with the same token budget per
micro-batch, one optimizer step over all rows per update, old log-probs recomputed without gradient first:

- library: ``training.update.ModelUpdate``, the path ``experiments/train.py`` runs: rows packed into one sequence per
  micro-batch (``training/packing.py``: restarting ``position_ids``, no padding, the vocabulary head only at the
  response positions, in chunks), ``PolicyLoss`` with global token normalization, whole-model clipping, AdamW; on a
  GPU the model is sharded by ``shard_model`` (FSDP2 on a one-device mesh: fp32 masters, bf16 compute), as
  ``trainer.strategy=fsdp2`` runs it (``--no-fsdp``: unsharded);
- plain: the same work written out in PyTorch/transformers as a user would: rows sorted by length into padded
  micro-batches (the library's ``pack_by_length``, generous to this side), ``model(...).logits`` at every position,
  full-vocabulary ``log_softmax``, a clipped-ratio token-mean loss, ``clip_grad_norm_``, AdamW; bf16 autocast on a GPU.

The library side runs as ``experiments/train.py`` would at the device's scale (``training_configuration``: on a GPU
``scale=1gpu``, FSDP2 with activation checkpointing; on a CPU ``scale=cpu``, neither; the micro-batch token budget of
``optim.micro_batch_tokens``) and with the packed-attention backend ``training.packed_attention.select_backend``
picks there; the JSON line names that configuration. The report adds the fraction of the device's bf16 dense matrix
rate the library's update reaches (``update_flops`` over the seconds, where the device's peak is known).

Each side runs in its own process (so that each peak memory is its own: the CUDA allocator's peak on a GPU, the
resident set's high-water mark over its level before the first update on a CPU). Prints one JSON line per side, then
``update_tokens_per_s library=<x> plain=<y> ratio=<x/y> peak_ratio=<library/plain> matrix_fraction=<f|unknown>``
and the configuration measured.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import torch

from rlanything_core.conf import CONF_DIR

__all__ = [
    "build_model",
    "compare",
    "make_rows",
    "measure_side",
    "peak_matrix_flops",
    "single_process_group",
    "training_configuration",
    "update_flops",
]

MIB = 2**20
# the shapes a GPU user trains (config.json files in rlanything_core/conf/model_configs), a small one for CPUs and CI
SHAPES = {
    "qwen2.5-0.5b": "model_configs/qwen2.5-0.5b-instruct.json",
    "qwen2.5-1.5b": "model_configs/qwen2.5-1.5b-instruct.json",
}
SMALL = {
    "model_type": "qwen2",
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 32768,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}


# bf16 dense (no sparsity) tensor-core peaks from the vendors' data sheets, FLOP/s; matched on the device's name
PEAK_BF16_FLOPS = {
    "H200": 989e12,
    "H100 SXM": 989e12,
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10G": 125e12,
    "RTX 4090": 165e12,
}


def training_configuration(device: str) -> dict[str, Any]:
    """What ``experiments/train.py`` trains with on ``device``'s scale, read from ``rlanything_core/conf``.

    Returns ``{scale, fsdp, activation_checkpointing, micro_batch_tokens}``: ``scale=1gpu`` on CUDA (``fsdp.*`` of
    ``scale/gpu.yaml`` under ``trainer.strategy=fsdp2``), ``scale=cpu`` otherwise (no sharding, no checkpointing).
    """
    import yaml

    conf = Path(CONF_DIR)
    tokens = int(yaml.safe_load((conf / "train.yaml").read_text())["optim"]["micro_batch_tokens"])
    if torch.device(device).type != "cuda":
        return {"scale": "cpu", "fsdp": False, "activation_checkpointing": False, "micro_batch_tokens": tokens}
    gpu = yaml.safe_load((conf / "scale" / "gpu.yaml").read_text())
    one = yaml.safe_load((conf / "scale" / "1gpu.yaml").read_text())
    strategy = (one.get("trainer") or {}).get("strategy", gpu["trainer"]["strategy"])
    checkpointing = bool({**gpu.get("fsdp", {}), **(one.get("fsdp") or {})}.get("activation_checkpointing", True))
    fsdp = strategy == "fsdp2"
    return {"scale": "1gpu", "fsdp": fsdp, "activation_checkpointing": fsdp and checkpointing,
            "micro_batch_tokens": tokens}  # fmt: skip


def update_flops(config: Any, lengths: list[int], response_tokens: int) -> float:
    """Matrix FLOPs of one update (old log-probs forward, then training forward and backward) on these rows.

    Counted as the useful work, not what a kernel wastes or recomputes: ``2`` FLOPs per weight and token forward and
    ``4`` backward for the decoder's linear layers over all tokens; causal attention ``4 * hidden`` per query-key pair
    (``QK^T`` and ``AV``) per layer forward, twice that backward, with ``sum(len (len + 1) / 2)`` pairs; the vocabulary
    head at the response positions only. Activation checkpointing's recompute is not counted (it is overhead).
    """
    hidden, layers = int(config.hidden_size), int(config.num_hidden_layers)
    heads, kv_heads = int(config.num_attention_heads), int(config.num_key_value_heads)
    head_dim = int(getattr(config, "head_dim", None) or hidden // heads)
    inter = int(config.intermediate_size)
    per_layer = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2 + 3 * hidden * inter
    tokens = sum(lengths)
    pairs = sum(n * (n + 1) // 2 for n in lengths)
    forward = 2 * (layers * per_layer * tokens + int(config.vocab_size) * hidden * response_tokens)
    forward += 4 * layers * heads * head_dim * pairs
    return float(forward * 4)  # the no-grad forward (1x), the training forward (1x) and its backward (2x)


def peak_matrix_flops(device: str) -> tuple[str, float | None]:
    """The device's name and its bf16 dense matrix peak in FLOP/s (``None`` where not known: CPUs, other GPUs)."""
    if torch.device(device).type != "cuda":
        import platform

        return platform.processor() or platform.machine(), None
    name = torch.cuda.get_device_name(torch.device(device))
    for key, peak in PEAK_BF16_FLOPS.items():  # the more specific names first
        if key in name:
            return name, peak
    return name, None


def build_model(shape: str, *, device: torch.device, dtype: torch.dtype = torch.float32, seed: int = 0) -> Any:
    """A randomly initialized Qwen2 causal LM: ``small`` or a shape of ``SHAPES`` (no weights are read)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if shape == "small":
        values = dict(SMALL)
    elif shape in SHAPES:
        values = json.loads((CONF_DIR / SHAPES[shape]).read_text())
    else:
        raise ValueError(f"shape: expected 'small' or one of {sorted(SHAPES)}, got {shape!r}")
    config = AutoConfig.for_model(str(values.pop("model_type")), **values)
    config.use_cache = False
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.set_attn_implementation("sdpa")
    return model


def make_rows(n: int, lo: int, hi: int, *, response_frac: float, vocab: int, seed: int = 0) -> Any:
    """``n`` right-padded ``TrainingRows`` of random lengths in ``[lo, hi]``, the last ``response_frac`` scored."""
    from rlanything_core.types import TokenRows, TrainingRows

    if not 1 <= lo <= hi or not 0 < response_frac < 1:
        raise ValueError(
            f"rows: expected 1 <= min_len <= max_len and 0 < response_frac < 1, got {lo}, {hi}, {response_frac}"
        )
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(lo, hi + 1, (n,), generator=g)
    width = int(lengths.max())
    positions = torch.arange(width)
    mask = positions < lengths[:, None]
    ids = torch.where(mask, torch.randint(1, vocab, (n, width), generator=g), 0)
    start = (lengths.float() * (1 - response_frac)).long().clamp(min=1)
    response = mask & (positions >= start[:, None])
    index = torch.stack([torch.arange(n), torch.zeros(n, dtype=torch.long), torch.full((n,), -1)], dim=1)
    return TrainingRows(TokenRows(ids, mask, response, index), torch.randn(n, generator=g), torch.arange(n))


def single_process_group(device: torch.device) -> None:
    """A one-process group (NCCL on a GPU, gloo on the CPU) for FSDP2 on a one-device mesh, once per process."""
    import torch.distributed as dist

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 2000))
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=0, world_size=1)


def _library_update(model: Any, rows: Any, device: torch.device, args: argparse.Namespace) -> Any:
    from lightning.fabric import Fabric

    from rlanything_core.lightning.fabric_runtime import FabricRuntime
    from rlanything_core.lightning.sharding import ShardingConfig, shard_model
    from rlanything_core.losses.policy import PolicyLoss
    from rlanything_core.training.update import ModelUpdate

    if args.fsdp:
        from torch.distributed.device_mesh import init_device_mesh

        single_process_group(device)
        config = ShardingConfig(activation_checkpointing=args.checkpointing)
        shard_model(model, init_device_mesh(device.type, (1,)), config)
    elif args.checkpointing:  # unsharded: the layers recomputed as lora.activation_checkpointing does
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    runtime = FabricRuntime(Fabric(accelerator=device.type, devices=1))
    update = ModelUpdate(
        "policy", model, PolicyLoss(), runtime, micro_batch_tokens=args.micro_batch_tokens, max_grad_norm=1.0,
        optimizer=lambda params: torch.optim.AdamW(params, lr=1e-6, weight_decay=0.0),
    )  # fmt: skip
    update.setup()
    return lambda: update(rows)


def _plain_update(model: Any, rows: Any, device: torch.device, args: argparse.Namespace) -> Any:
    from rlanything_core.training.microbatch import pack_by_length

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.0)
    r = rows.rows
    micros = pack_by_length(r.attention_mask.sum(dim=1).tolist(), max_tokens=args.micro_batch_tokens)
    n_tok = int(r.response_mask.sum())
    autocast = device.type == "cuda"

    def logprobs(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=ids, attention_mask=mask.long()).logits
        return torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]

    def update() -> None:
        model.eval()
        with torch.no_grad():
            old = [logprobs(p.input_ids.to(device), p.attention_mask.to(device)) for p in map(r.select, micros)]
        model.train()
        optimizer.zero_grad(set_to_none=False)
        for micro, old_lp in zip(micros, old):
            part = r.select(micro)
            lp = logprobs(part.input_ids.to(device), part.attention_mask.to(device))
            ratio = torch.exp(lp - old_lp)
            adv = rows.advantages[torch.tensor(micro)].to(device)[:, None]
            surrogate = torch.minimum(ratio * adv, ratio.clamp(0.8, 1.28) * adv)
            loss = -torch.where(part.response_mask.to(device)[:, 1:], surrogate, 0.0).sum() / n_tok
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return update


def _rss_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_side(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """One side's update seconds (best of ``args.reps`` after a warm-up) and its peak memory (in this process)."""
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    model = build_model(args.shape, device=device, dtype=torch.float32, seed=0)
    rows = make_rows(
        args.rows, args.min_len, args.max_len, response_frac=args.response_frac, vocab=model.config.vocab_size, seed=0
    )
    step = _library_update(model, rows, device, args) if side == "library" else _plain_update(model, rows, device, args)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device) / MIB
    else:
        base = _rss_mib("VmRSS")
    seconds = []
    for rep in range(args.reps + 1):  # the first is the warm-up (kernels, allocator, Adam states)
        _sync(device)
        started = time.perf_counter()
        step()
        _sync(device)
        if rep:
            seconds.append(time.perf_counter() - started)
    peak = torch.cuda.max_memory_allocated(device) / MIB if device.type == "cuda" else _rss_mib("VmHWM")
    tokens = int(rows.rows.attention_mask.sum())
    lengths = rows.rows.attention_mask.sum(dim=1).tolist()
    flops = update_flops(model.config, lengths, int(rows.rows.response_mask.sum()))
    device_name, peak_flops = peak_matrix_flops(args.device)
    configuration: dict[str, object] = {
        "fsdp": bool(args.fsdp),
        "activation_checkpointing": bool(args.checkpointing),
        "micro_batch_tokens": int(args.micro_batch_tokens),
    }
    if side == "library":
        from rlanything_core.training.packed_attention import select_backend

        configuration["attention"] = select_backend(device)
    else:  # the plain loop: padded micro-batches under the model's own attention, no sharding, no recompute
        configuration = {"fsdp": False, "activation_checkpointing": False, "attention": "sdpa (padding mask)"}
        configuration["micro_batch_tokens"] = int(args.micro_batch_tokens)
    return {
        "side": side,
        "configuration": configuration,
        "device_name": device_name,
        "update_tflop": round(flops / 1e12, 3),
        "matrix_fraction": None if peak_flops is None else round(flops / min(seconds) / peak_flops, 4),
        "seconds": [round(s, 4) for s in seconds],
        "tokens": tokens,
        "response_tokens": int(rows.rows.response_mask.sum()),
        "tokens_per_s": round(tokens / min(seconds), 1),
        "peak_mib": round(peak, 1),
        "peak_over_start_mib": round(peak - base, 1),
    }


def _child(side: str, args: argparse.Namespace, queue: Any) -> None:
    try:
        queue.put(measure_side(side, args))
    except Exception as exc:  # reported by the parent, which names the side
        queue.put({"side": side, "error": f"{type(exc).__name__}: {exc}"})


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Both sides, each in a fresh process; returns ``{library, plain, ratio, peak_ratio}`` and prints JSON lines."""
    context = multiprocessing.get_context("spawn")
    result: dict[str, Any] = {"shape": args.shape, "device": args.device, "rows": args.rows}
    result["training_configuration"] = training_configuration(args.device)
    for side in ("library", "plain"):
        queue = context.Queue()
        process = context.Process(target=_child, args=(side, args, queue))
        process.start()
        out = queue.get(timeout=args.timeout)
        process.join()
        if "error" in out:
            raise RuntimeError(f"bench_update: the {side} side failed: {out['error']}")
        print(json.dumps(out), flush=True)
        result[side] = out
    lib, plain = result["library"], result["plain"]
    result["ratio"] = round(lib["tokens_per_s"] / plain["tokens_per_s"], 3)
    result["peak_ratio"] = round(lib["peak_over_start_mib"] / max(plain["peak_over_start_mib"], 1e-9), 3)
    result["matrix_fraction"] = lib["matrix_fraction"]
    fraction = "unknown" if lib["matrix_fraction"] is None else lib["matrix_fraction"]
    config = lib["configuration"]
    print(
        f"update_tokens_per_s library={lib['tokens_per_s']} plain={plain['tokens_per_s']} ratio={result['ratio']} "
        f"peak_ratio={result['peak_ratio']} matrix_fraction={fraction} device={lib['device_name']!r} "
        f"fsdp={config['fsdp']} activation_checkpointing={config['activation_checkpointing']} "
        f"micro_batch_tokens={config['micro_batch_tokens']} attention={config['attention']}",
        flush=True,
    )
    return result


def parser() -> argparse.ArgumentParser:
    """The command line (also used by ``benchmarks.gpu_check``)."""
    cuda = torch.cuda.is_available()
    training = training_configuration("cuda" if cuda else "cpu")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="qwen2.5-1.5b" if cuda else "small", help=f"small or one of {sorted(SHAPES)}")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--rows", type=int, default=48 if cuda else 32)
    p.add_argument("--min-len", type=int, default=512 if cuda else 64)
    p.add_argument("--max-len", type=int, default=2048 if cuda else 768)
    p.add_argument("--response-frac", type=float, default=0.25)
    p.add_argument(
        "--micro-batch-tokens", type=int, default=training["micro_batch_tokens"], help="default: train.py's budget"
    )
    p.add_argument("--reps", type=int, default=2 if cuda else 1)
    p.add_argument("--threads", type=int, default=2, help="CPU threads per side")
    p.add_argument(
        "--fsdp", action=argparse.BooleanOptionalAction, default=training["fsdp"], help="library side under FSDP2"
    )
    p.add_argument(
        "--checkpointing",
        action=argparse.BooleanOptionalAction,
        default=training["activation_checkpointing"],
        help="activation checkpointing on the library side (default: as train.py at this device's scale)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per side")
    return p


def arguments(**options: object) -> argparse.Namespace:
    """The parsed command line of a run given as keywords (what ``benchmarks.gpu_stages`` and the tests run).

    ``min_len=16`` is ``--min-len 16``, ``fsdp=False`` is ``--no-fsdp``; the others keep :func:`parser`'s defaults
    (an unknown option exits naming it, as on the command line).

    Examples:
        >>> args = arguments(device="cpu", shape="small", rows=4, min_len=16, max_len=64, fsdp=False)
        >>> (args.rows, args.min_len, args.fsdp, args.response_frac)
        (4, 16, False, 0.25)
    """
    argv: list[str] = []
    for name, value in options.items():
        flag = name.replace("_", "-")
        argv += [f"--{flag}" if value else f"--no-{flag}"] if isinstance(value, bool) else [f"--{flag}", str(value)]
    return parser().parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison from the command line."""
    return compare(parser().parse_args(argv))


if __name__ == "__main__":
    main()
