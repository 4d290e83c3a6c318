"""``ModelUpdate``: one model's update of an RLAnything iteration (the policy's or the judge's), no framework hook.

The rows arrive as ``TrainingRows`` with final advantages (``loop/iteration.py``): one path and one loss signature
``loss(logprobs, old_logprobs, advantages, mask)`` for both models. Each call:

1. recomputes the rows' old log-probs under the pre-update weights (so free generation, likelihood selection and
   vLLM sampling are all corrected against the trainer's own numbers);
2. splits the rows into ``updates`` minibatches by task group (``group % updates``), so a group's rows stay together
   and the split is the same whatever the number of ranks;
3. within a minibatch, splits the rows into micro-batches of at most ``micro_batch_tokens`` tokens and accumulates
   gradients, normalizing by the *global* token/sequence counts (micro-batch and rank invariant). With ``packing``
   (the default for transformers causal LMs) a micro-batch is its rows concatenated into one sequence, without
   padding, and the vocabulary head runs only at the response positions, in chunks (``training/packing.py``);
   otherwise rows are padded to the micro-batch's longest;
4. all-reduces the gradients over the ranks itself (a sum, once per optimizer step), clips, steps. There is no DDP
   wrapper: ranks hold whole task groups, so they run different numbers of micro-batch backwards (a rank may run
   none), and DDP's hooks run one averaging all-reduce in *every* backward: the busier rank's extra backward waits in
   an all-reduce no other rank joins (a hang on NCCL), and the averaged partial sums are not the gradient
   (``tests/lightning/test_gradient_sync.py`` shows both on two gloo processes, and that this path equals the
   single-process gradient). Rank 0's weights are broadcast once, when the runtime sets the models up.

Devices, precision and collectives come from a ``loop.protocol.Runtime`` (``lightning/fabric_runtime.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from rlanything_core.lightning.sharding import clip_grad_norm, is_sharded
from rlanything_core.loop.protocol import Runtime
from rlanything_core.losses.aggregation import Aggregation
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.microbatch import pack_by_length, pack_by_tokens
from rlanything_core.training.packing import packable, packed_token_logprobs
from rlanything_core.training.warmup import warm_up
from rlanything_core.types import LossOutput, TokenRows, TrainingRows

__all__ = ["ModelUpdate", "OptimizerFactory", "default_optimizer", "to_device"]

OptimizerFactory = Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer]


def default_optimizer(params: Iterator[nn.Parameter]) -> torch.optim.Optimizer:
    """AdamW at lr 1e-6 (the paper's)."""
    return torch.optim.AdamW(params, lr=1e-6, betas=(0.9, 0.999), weight_decay=0.0, eps=1e-8)


def _read_once(values: list[Tensor]) -> list[float]:
    """One-element metrics as floats, read from the device in one copy (one synchronization per update).

    Reading each metric with ``float()`` after every micro-batch would stall the host once per metric and
    micro-batch; the values are stacked where they are and copied together. NaN for tensors without data (a model
    on ``meta``, as in the device test).
    """
    if not values:
        return []
    if any(v.is_meta for v in values):
        return [float("nan")] * len(values)
    device = values[0].device
    stacked = torch.stack([v.detach().reshape(()).to(device=device, dtype=torch.float32) for v in values])
    return [float(x) for x in stacked.cpu().tolist()]


def to_device(tensor: Tensor, device: torch.device) -> Tensor:
    """``tensor`` (on the host) on ``device``: through pinned memory without blocking the host on a CUDA device."""
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


class ModelUpdate:
    """The update of one model: ``epochs`` passes of ``updates`` optimizer steps on an iteration's rows.

    Args:
        name: metric prefix (``policy``, ``judge``).
        model: the causal LM to train (shared with its rollout backend, so rollouts always use the current weights).
        loss: the clipped surrogate (``PolicyLoss``) on rows with final advantages.
        runtime: devices, precision and collectives.
        optimizer: builds the optimizer from the parameters (Hydra ``_partial_``), in ``setup``.
        updates: optimizer steps per pass over the rows: its minibatches (the paper: 4 in ALFWorld).
        epochs: passes over the rows (PPO epochs), all against the old log-probs of the pre-update weights; the
            metrics of the passes after the first are logged as ``<name>/later/<metric>``.
        micro_batch_tokens: token budget of one forward/backward (real tokens when packed, padded ones otherwise).
        max_grad_norm: gradient clipping (the paper's DeepSpeed config: 1.0; 0: none).
        warmup_steps: optimizer steps over which the learning rate ramps linearly to the optimizer's
            (``training.warmup``; 0: none, as in the paper). Counted in the optimizer's state, so it survives resume.
        packing: pack each micro-batch's rows into one sequence where ``training.packing.packable`` accepts the model.
    """

    def __init__(
        self,
        name: str,
        model: nn.Module,
        loss: PolicyLoss,
        runtime: Runtime,
        *,
        optimizer: OptimizerFactory = default_optimizer,
        updates: int = 1,
        epochs: int = 1,
        micro_batch_tokens: int = 8192,
        max_grad_norm: float = 1.0,
        warmup_steps: int = 0,
        packing: bool = True,
    ) -> None:
        if updates < 1:
            raise ValueError(f"{name}_updates: expected >= 1, got {updates}")
        if epochs < 1:
            raise ValueError(f"{name}_epochs: expected >= 1, got {epochs}")
        if warmup_steps < 0:
            raise ValueError(f"{name}_warmup_steps: expected >= 0, got {warmup_steps}")
        if micro_batch_tokens < 1:
            raise ValueError(f"micro_batch_tokens: expected >= 1, got {micro_batch_tokens}")
        if not isinstance(loss, PolicyLoss):
            raise ValueError(
                f"{name}_loss: expected a PolicyLoss (the rows carry their final targets, built by the loop's "
                f"judge targets), got {type(loss).__name__}"
            )
        self.name = name
        self.model = model
        self.loss = loss
        self.runtime = runtime
        self.optimizer_factory = optimizer
        self.updates = updates
        self.epochs = epochs
        self.micro_batch_tokens = micro_batch_tokens
        self.max_grad_norm = max_grad_norm
        self.warmup_steps = warmup_steps
        self.packing = packing
        self.optimizer: torch.optim.Optimizer | None = None

    def setup(self) -> None:
        """Build the optimizer on the model as the runtime placed (or sharded) it; once."""
        if self.optimizer is None:
            self.optimizer = self.runtime.setup_optimizer(self.optimizer_factory(self.model.parameters()))

    # ------------------------------------------------------------------------------------------------ the update
    def __call__(self, rows: TrainingRows | None, /) -> dict[str, float]:
        """Run the passes on this rank's ``rows`` (possibly none: collective); averaged metrics.

        The old log-probs are those of the weights before the iteration's first step, in every pass (PPO's ratio).
        """
        self.setup()
        optimizer = self.optimizer
        assert optimizer is not None
        self._zero_grads_for_checkpoint(optimizer)
        model, name, updates = self.model, self.name, self.updates
        # metrics stay on the device until the update ends (``_read_once``); the step counts are host numbers
        pending: dict[str, list[Tensor]] = {}
        logs: dict[str, list[float]] = {}
        with self.runtime.autocast():
            old_all = self.old_logprobs(rows) if rows is not None or is_sharded(model) else None
            for epoch, k in ((e, k) for e in range(self.epochs) for k in range(updates)):
                prefix = name if epoch == 0 else f"{name}/later"
                if rows is not None:
                    index = (rows.group % updates == k).nonzero().squeeze(1)
                else:
                    index = torch.zeros(0, dtype=torch.int64)
                local_tok = int(rows.rows.response_mask[index].sum()) if rows is not None and index.numel() else 0
                local_seq = int((rows.rows.response_mask[index].sum(dim=1) > 0).sum()) if rows is not None else 0
                n_tok, n_seq = (int(x) for x in self._all_reduce([local_tok, local_seq]))
                if n_tok == 0:
                    continue
                optimizer.zero_grad(set_to_none=False)
                model.train()  # activation checkpointing runs in train mode only (the models have no dropout)
                part_rows = rows.subset(index) if rows is not None and index.numel() else None
                lengths = part_rows.rows.attention_mask.sum(dim=1).tolist() if part_rows is not None else []
                micros = self._micro_batches(lengths)
                for _ in range(self._micro_batches_everywhere(len(micros)) - len(micros)):
                    self._padding_pass(backward=True)
                if part_rows is not None:
                    assert old_all is not None
                    old_part = old_all[index.to(old_all.device)]
                    for micro in micros:
                        midx = torch.tensor(micro)
                        out = self._micro_batch_backward(
                            part_rows.subset(midx), old_part[midx.to(old_part.device)], n_tok, n_seq
                        )
                        for key, value in out.metrics.items():
                            if value.numel() == 1:
                                pending.setdefault(f"{prefix}/{key}", []).append(value.detach())
                        pending.setdefault(f"{prefix}/loss", []).append(out.loss.detach())
                model.eval()
                self._sync_and_step(optimizer)
                logs.setdefault(f"{name}/updates", []).append(1.0)
        keys = [key for key, tensors in pending.items() for _ in tensors]
        for key, read in zip(keys, _read_once([t for tensors in pending.values() for t in tensors])):
            logs.setdefault(key, []).append(read)
        summary = {key: sum(v) / len(v) for key, v in logs.items() if not key.endswith("/updates")}
        summary[f"{name}/updates"] = float(len(logs.get(f"{name}/updates", [])))
        summary[f"{name}/aggregation_is_token_mean"] = float(self.loss.aggregation is Aggregation.TOKEN_MEAN)
        return summary

    def old_logprobs(self, rows: TrainingRows | None) -> Tensor:
        """Log-probs of every row under the current (pre-update) weights, micro-batched, no grad."""
        lengths = rows.rows.attention_mask.sum(dim=1).tolist() if rows is not None else []
        # on the runtime's device, like the log-probs the update compares them with (no host round trip)
        shape = rows.rows.input_ids.shape if rows is not None else (0, 0)
        out = torch.zeros(shape, dtype=torch.float32, device=self.runtime.device)
        micros = self._micro_batches(lengths)
        self.model.eval()
        with torch.no_grad():
            for _ in range(self._micro_batches_everywhere(len(micros)) - len(micros)):
                self._padding_pass(backward=False)
            for micro in micros:
                assert rows is not None
                idx = torch.tensor(micro)
                lp = self._row_logprobs(rows.rows.select(idx))
                out[idx.to(self.runtime.device), : lp.shape[1]] = lp
        return out

    # ------------------------------------------------------------------------------------------------ helpers
    def _all_reduce(self, values: list[int], op: str = "sum") -> list[float]:
        if self.runtime.world_size == 1:  # nothing to reduce: no device round trip
            return [float(x) for x in values]
        return self.runtime.all_reduce([float(x) for x in values], op)

    def _zero_grads_for_checkpoint(self, optimizer: torch.optim.Optimizer) -> None:
        """Give every sharded parameter a (zero) gradient before the first update.

        torch.distributed.checkpoint (how sharded checkpoints save optimizers) fills an empty optimizer state with a
        zero-lr step when no parameter has a gradient; that step counts in Adam's bias correction and shrinks the
        first real update to 0.74x (an iteration without update is then checkpointed: the policy's rows may all fall
        outside the band). With gradients present it leaves the state alone.
        """
        if not is_sharded(self.model):
            return
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)

    def _micro_batches_everywhere(self, local: int) -> int:
        """How many micro-batches every rank runs: the busiest rank's count when the model is sharded.

        Each FSDP forward and backward is a collective, so every rank must make as many; unsharded, this rank's own.
        """
        if not is_sharded(self.model) or self.runtime.world_size == 1:
            return local
        return int(self._all_reduce([local], op="max")[0])

    def _padding_pass(self, *, backward: bool) -> None:
        """A zero-weight forward (and backward) on one two-token row (its gradient is exactly zero).

        This rank's share of the collectives when it has fewer micro-batches than the busiest rank.
        """
        ids = torch.zeros((1, 2), dtype=torch.int64)
        mask = torch.ones((1, 2), dtype=torch.bool)  # masks stay on the host: positions are chosen there
        logp = self._row_logprobs(TokenRows(ids, mask, mask, torch.zeros(1, 3).long()))
        if backward:
            self.runtime.backward(logp.sum() * 0.0)

    def _packs(self) -> bool:
        return self.packing and packable(self.model)

    def _micro_batches(self, lengths: list[int]) -> list[list[int]]:
        """Row indices per micro-batch: real tokens within the budget when packed, padded ones otherwise."""
        if self._packs():
            return pack_by_tokens(lengths, max_tokens=self.micro_batch_tokens)
        return pack_by_length(lengths, max_tokens=self.micro_batch_tokens)

    def _row_logprobs(self, rows: TokenRows) -> Tensor:
        """Per-token log-probs of ``rows`` on the runtime's device (packed when the model allows, see ``packing``).

        Only the token ids travel to the device: the masks stay on the host, where the scored positions are chosen
        (no device synchronization, and a model on a device without data, ``meta``, runs the same path).
        """
        ids = to_device(rows.input_ids, self.runtime.device)
        if self._packs():
            return packed_token_logprobs(self.model, ids, rows.attention_mask, score_mask=rows.response_mask)
        return sequence_token_logprobs(self.model, ids, rows.attention_mask, score_mask=rows.response_mask)

    def _micro_batch_backward(self, part: TrainingRows, old_logprobs: Tensor, n_tok: int, n_seq: int) -> LossOutput:
        """The loss of one micro-batch of rows, backpropagated; returns the loss's output (loss and metrics).

        Each rank's loss is normalized by the minibatch's global token/sequence counts (``n_tok``, ``n_seq``), so the
        gradient sum over micro-batches and ranks is the whole minibatch's gradient.
        """
        logp = self._row_logprobs(part.rows)
        # every tensor the loss receives follows the log-probs' device (the rows arrive on the host)
        out = self.loss(
            logp,
            old_logprobs[:, : logp.shape[1]].to(logp.device),
            to_device(part.advantages, logp.device).to(logp.dtype),
            to_device(part.rows.response_mask, logp.device),
            num_tokens_global=n_tok,
            num_seqs_global=n_seq,
        )
        self.runtime.backward(out.loss)
        return out

    def _sync_and_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.warmup_steps:
            warm_up(optimizer, self.warmup_steps)
        params = [p for p in self.model.parameters() if p.requires_grad]
        if is_sharded(self.model):  # FSDP reduce-scattered (summed) every backward; clip by the whole model's norm
            if self.max_grad_norm > 0:
                clip_grad_norm(params, self.max_grad_norm)
            optimizer.step()
            return
        if self.runtime.world_size > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            self.runtime.all_reduce_tensors([p.grad for p in params if p.grad is not None])
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        optimizer.step()
