"""One rank of tests/lightning/test_sharding.py: FSDP2 over gloo against an unsharded copy of the same model."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from rlanything_core.generation.weight_sync import push_weights
from rlanything_core.lightning.sharding import (
    ShardingConfig,
    clip_grad_norm,
    decoder_layers,
    fsdp_units,
    gathered,
    shard_model,
)
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.packing import packed_token_logprobs

WORLD = 2
VOCAB = 300


def _rows(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(6, 14, (n,), generator=g)
    ids = torch.randint(1, VOCAB, (n, int(lengths.max())), generator=g)
    mask = torch.arange(ids.shape[1]) < lengths[:, None]
    ids = torch.where(mask, ids, torch.zeros_like(ids))
    score = mask & (torch.arange(ids.shape[1]) >= 4)  # the "response": from position 4 on
    return ids, mask, score


def _loss(model: torch.nn.Module, rows: tuple[torch.Tensor, ...], total_tokens: int) -> torch.Tensor:
    ids, mask, score = rows
    return -(sequence_token_logprobs(model, ids, mask, score_mask=score).sum() / total_tokens)


def main(rank: int, port: int, out_dir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = tiny_causal_lm(VOCAB, hidden=32, layers=2, seed=3)
    reference = copy.deepcopy(model)  # unsharded, fp32: every rank computes the full-batch result itself
    mesh = init_device_mesh("cpu", (WORLD,))
    model.to(torch.bfloat16)  # as loaded from a bf16 checkpoint: sharding must store fp32 masters
    model.load_state_dict(reference.state_dict())  # same values, rounded to bf16 ... then restored in fp32 below
    model.to(torch.float32).to(torch.bfloat16)
    shard_model(model, mesh, ShardingConfig(param_dtype=torch.float32, activation_checkpointing=True))
    result: dict[str, object] = {}
    # per-layer units (the bare "fsdp" strategy made the whole model one unit) and checkpointing on
    units, layers = fsdp_units(model), decoder_layers(model)
    result["units_are_the_layers_then_the_root"] = units[0] is model and [id(u) for u in units[1:]] == [
        id(layer) for layer in layers
    ]
    result["n_layers"] = len(layers)
    result["checkpointing"] = [model.is_gradient_checkpointing] + [
        bool(layer.gradient_checkpointing) for layer in layers
    ]
    plain = shard_model(
        tiny_causal_lm(VOCAB, hidden=32, layers=2, seed=3), mesh, ShardingConfig(activation_checkpointing=False)
    )
    result["checkpointing_when_not_configured"] = [plain.is_gradient_checkpointing] + [
        bool(layer.gradient_checkpointing) for layer in decoder_layers(plain)
    ]
    result["master_dtypes"] = sorted({str(p.dtype) for p in model.parameters()})
    result["all_dtensors"] = all(type(p).__name__ == "DTensor" for p in model.parameters())
    # compare against the reference rounded the same way (the bf16 load), in fp32
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(p.to(torch.bfloat16).float())

    # ranks hold different rows (different counts and lengths); the loss is normalized by the global token count
    per_rank = [_rows(10 + r, 3 + r) for r in range(WORLD)]
    total = int(sum(int(r[2][:, 1:].sum()) for r in per_rank))
    model.train()
    _loss(model, per_rank[rank], total).backward()
    reference.train()
    sum(_loss(reference, rows, total) for rows in per_rank).backward()
    grad_err = max(
        float((p.grad.full_tensor() - q.grad).abs().max()) for p, q in zip(model.parameters(), reference.parameters())
    )
    result["grad_max_abs_err"] = grad_err
    result["grad_scale"] = float(max(q.grad.abs().max() for q in reference.parameters()))

    # clipping over the whole model: the same total norm and the same clipped gradients as unsharded
    norm = clip_grad_norm(model.parameters(), 1e-3)
    ref_norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), 1e-3)
    result["norm"], result["ref_norm"] = float(norm), float(ref_norm)
    result["clipped_max_abs_err"] = max(
        float((p.grad.full_tensor() - q.grad).abs().max()) for p, q in zip(model.parameters(), reference.parameters())
    )

    # an update, then the weights pushed to an engine: full tensors, HF names, in several buckets, equal to the
    # reference's; every rank gathers, only rank 0 holds an engine (the others pass None)
    for m in (model, reference):
        torch.optim.SGD(m.parameters(), lr=0.5).step()
    received: dict[str, torch.Tensor] = {}
    calls: list[int] = []

    class Engine:
        def update_weights(self, named: dict[str, torch.Tensor]) -> None:
            calls.append(len(named))
            received.update(named)

    n_buckets = push_weights(model, Engine() if rank == 0 else None, bucket_bytes=8192, dtype=torch.float32)
    expected = dict(reference.named_parameters())
    if rank == 0:
        result["pushed_names_match"] = sorted(received) == sorted(expected)
        result["pushed_max_abs_err"] = max(float((received[k] - expected[k]).abs().max()) for k in expected)
        result["pushed_full_shapes"] = all(received[k].shape == expected[k].shape for k in expected)
        result["pushed_plain_tensors"] = all(type(t) is torch.Tensor for t in received.values())
    result["buckets"] = n_buckets

    # gathered weights: ranks run different numbers of forwards with no collective, and match the reference
    model.eval()
    reference.eval()
    with torch.no_grad(), gathered(model):
        errs = []
        for k in range(1 + 2 * rank):
            rows = _rows(100 + k, 2)
            a = sequence_token_logprobs(model, rows[0], rows[1], score_mask=rows[2])
            b = sequence_token_logprobs(reference, rows[0], rows[1], score_mask=rows[2])
            errs.append(float((a - b).abs().max()))
    result["gathered_max_abs_err"] = max(errs)
    result["resharded"] = all(type(p).__name__ == "DTensor" for p in model.parameters())

    # gathered before the model's first forward (rollouts come before any update), with different numbers of
    # forwards per rank; afterwards shard_model's settings are back: a layer reshards after its forward, the root not
    with torch.no_grad(), gathered(plain):
        for k in range(1 + 2 * rank):
            rows = _rows(200 + k, 2)
            sequence_token_logprobs(plain, rows[0], rows[1], score_mask=rows[2])
    with torch.no_grad():
        rows = _rows(300, 2)
        sequence_token_logprobs(plain, rows[0], rows[1], score_mask=rows[2])
    result["after_forward_layers_sharded"] = all(
        type(p).__name__ == "DTensor" for layer in decoder_layers(plain) for p in layer.parameters()
    )
    result["after_forward_root_kept"] = type(plain.get_input_embeddings().weight).__name__ != "DTensor"

    # the packed path under FSDP2 (its scoring registered as an FSDP forward method): the unsharded padded gradients
    model.train()
    reference.train()
    model.zero_grad(set_to_none=True)
    reference.zero_grad(set_to_none=True)
    ids, mask, score = per_rank[rank]
    packed_loss = -(packed_token_logprobs(model, ids, mask, score_mask=score, chunk_tokens=5).sum() / total)
    packed_loss.backward()
    sum(_loss(reference, rows, total) for rows in per_rank).backward()
    result["packed_grad_max_abs_err"] = max(
        float((p.grad.full_tensor() - q.grad).abs().max()) for p, q in zip(model.parameters(), reference.parameters())
    )
    dist.barrier()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
