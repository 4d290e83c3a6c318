"""``RLAnythingModule``: one training step = one RLAnything iteration's policy and judge updates. Wiring only.

Rollouts arrive as ``IterationData`` from the data module (which collects them inside ``rollout_mode()``): rows
with final advantages, one path and one loss signature ``loss(logprobs, old_logprobs, advantages, mask)`` for both
models. Optimization is manual, with two optimizers (policy, judge). Each update:

1. recomputes the rows' old log-probs under the pre-update weights (so free generation, likelihood selection and
   vLLM sampling are all corrected against the trainer's own numbers);
2. splits the rows into ``updates`` minibatches by task group (``group % updates``), so a group's rows stay together
   and the split is the same whatever the number of ranks;
3. within a minibatch, splits the rows into micro-batches of at most ``micro_batch_tokens`` tokens and accumulates
   gradients, normalizing by the *global* token/sequence counts (micro-batch and rank invariant). With ``packing``
   (the default for transformers causal LMs) a micro-batch is its rows concatenated into one sequence, without
   padding, and the vocabulary head runs only at the response positions, in chunks (``training/packing.py``);
   otherwise rows are padded to the micro-batch's longest;
4. all-reduces gradients over ranks itself (no DDP hooks, so ranks may run different numbers of micro-batches;
   why DDP's hooks cannot: ``_disable_ddp_gradient_hooks`` and ``tests/lightning/test_gradient_sync.py``), clips,
   steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import lightning as L
import torch
import torch.distributed as dist
from torch import Tensor, nn

from rlanything_core.collect.batching import TokenRows
from rlanything_core.lightning.loading import materialize_from_rank0, shard_from_rank0
from rlanything_core.lightning.sharding import ShardingConfig, clip_grad_norm, gathered, is_sharded
from rlanything_core.loop.iteration import IterationData, TrainingRows
from rlanything_core.losses.aggregation import Aggregation
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.training.microbatch import pack_by_length, pack_by_tokens
from rlanything_core.training.packing import packable, packed_token_logprobs
from rlanything_core.types import LossOutput

__all__ = ["RLAnythingModule"]

OptimizerFactory = Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer]


def _logged(value: Tensor) -> float:
    """A one-element metric as a float; NaN for a tensor without data (a model on ``meta``, as in the device test)."""
    return float("nan") if value.is_meta else float(value.detach())


def _default_optimizer(params: Iterator[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-6, betas=(0.9, 0.999), weight_decay=0.0, eps=1e-8)


class RLAnythingModule(L.LightningModule):
    """Policy and judge updates of the RLAnything loop.

    Args:
        policy: the policy causal LM (shared with the rollout backend, so rollouts always use the current weights).
        judge: the judge causal LM, or ``None`` when no judge is used (outcome-only arm).
        policy_loss: the clipped surrogate for the policy.
        judge_loss: the judge's ``PolicyLoss`` (its rows arrive with final advantages: the loop built the judge's
            targets once, e.g. ``rewards.ConsistencyTargets``); ``None`` freezes the judge (it still votes).
        policy_optimizer: builds the policy optimizer from parameters (Hydra ``_partial_``).
        judge_optimizer: same for the judge.
        policy_updates: optimizer steps per pass over the iteration's rows for the policy: its minibatches (the
            paper: 4 in ALFWorld).
        judge_updates: the same for the judge.
        policy_epochs: passes over the iteration's rows for the policy (PPO epochs); each pass makes its
            ``policy_updates`` steps, against the old log-probs of the pre-update weights. The metrics of the passes
            after the first are logged apart, as ``policy/later/<metric>`` (their KL and clipping measure how far
            the earlier passes moved the policy).
        judge_epochs: the same for the judge.
        micro_batch_tokens: token budget of one forward/backward (real tokens when packed, padded ones otherwise).
        max_grad_norm: gradient clipping (the paper's DeepSpeed config: 1.0).
        sharding: how ``configure_model`` shards both models with FSDP2 when the strategy provides a device mesh
            (Lightning's ``ModelParallelStrategy``); ``None``: never sharded (single process, DDP).
        rollout_context: entered on every rank around the rollouts and evaluations; default: the models' full
            weights gathered (``sharding.gathered``), as the transformers backend generates with them. Generation
            engines (vLLM) pass their own (wake, push the weights, sleep after).
        packing: pack each micro-batch's rows into one sequence (per-sequence attention through restarting
            ``position_ids``) and score only the response positions; used for models ``training.packing.packable``
            accepts (transformers causal LMs), padded rows otherwise. ``False``: always padded.
    """

    def __init__(
        self,
        policy: nn.Module,
        judge: nn.Module | None = None,
        *,
        policy_loss: PolicyLoss | None = None,
        judge_loss: PolicyLoss | None = None,
        policy_optimizer: OptimizerFactory = _default_optimizer,
        judge_optimizer: OptimizerFactory = _default_optimizer,
        policy_updates: int = 1,
        judge_updates: int = 1,
        policy_epochs: int = 1,
        judge_epochs: int = 1,
        micro_batch_tokens: int = 8192,
        max_grad_norm: float = 1.0,
        sharding: ShardingConfig | None = None,
        rollout_context: Callable[[], AbstractContextManager[Any]] | None = None,
        packing: bool = True,
    ) -> None:
        super().__init__()
        if policy_updates < 1 or judge_updates < 1:
            raise ValueError(f"policy_updates, judge_updates: expected >= 1, got {policy_updates}, {judge_updates}")
        if policy_epochs < 1 or judge_epochs < 1:
            raise ValueError(f"policy_epochs, judge_epochs: expected >= 1, got {policy_epochs}, {judge_epochs}")
        if micro_batch_tokens < 1:
            raise ValueError(f"micro_batch_tokens: expected >= 1, got {micro_batch_tokens}")
        if judge_loss is not None and not isinstance(judge_loss, PolicyLoss):
            raise ValueError(
                f"judge_loss: expected a PolicyLoss (the judge's rows carry their final targets, built by the loop's "
                f"judge targets), got {type(judge_loss).__name__}"
            )
        self.automatic_optimization = False
        self.policy = policy
        self.judge = judge
        self.policy_loss = policy_loss or PolicyLoss()
        # one signature for both models: loss(logprobs, old_logprobs, advantages, mask) on rows with final advantages
        self.judge_loss = judge_loss
        self.policy_optimizer_factory = policy_optimizer
        self.judge_optimizer_factory = judge_optimizer
        self.policy_updates = policy_updates
        self.judge_updates = judge_updates
        self.policy_epochs = policy_epochs
        self.judge_epochs = judge_epochs
        self.micro_batch_tokens = micro_batch_tokens
        self.max_grad_norm = max_grad_norm
        self.sharding = sharding
        self.rollout_context = rollout_context
        self.packing = packing
        if judge is not None and judge_loss is None:
            judge.requires_grad_(False)
        self.update_history: list[dict[str, float]] = []

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep the per-iteration update metrics with the weights: counts over the whole run survive a restart."""
        checkpoint["update_history"] = [{k: float(v) for k, v in e.items()} for e in self.update_history]

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the update metrics of the iterations the checkpoint holds (none in an older checkpoint)."""
        self.update_history = [dict(e) for e in checkpoint.get("update_history", [])]

    @property
    def trains_judge(self) -> bool:
        """Whether the judge is optimized (present and given a loss)."""
        return self.judge is not None and self.judge_loss is not None

    def configure_model(self) -> None:
        """Shard the policy and the judge per decoder layer (FSDP2) under ``ModelParallelStrategy``, once.

        Models that ranks other than 0 built on the meta device (``loading.causal_lm_on_rank0``: the weights read
        once) receive rank 0's weights here, sharded or whole (collective on every rank).
        """
        mesh = self._device_mesh
        device = self.trainer.strategy.root_device if self._trainer is not None else self.device
        models = [m for m in (self.policy, self.judge) if m is not None]
        if self.sharding is None or mesh is None:
            for model in models:
                materialize_from_rank0(model, device)
            return
        if is_sharded(self.policy):
            return
        dp_mesh = mesh["data_parallel"] if mesh.mesh_dim_names and "data_parallel" in mesh.mesh_dim_names else mesh
        for model in models:
            shard_from_rank0(model, dp_mesh, self.sharding, device)

    def gathered_models(self) -> AbstractContextManager[Any]:
        """The rollout context: by default sharded models hold their full weights on every rank (collective entry)."""
        if self.rollout_context is not None:
            return self.rollout_context()
        return gathered(self.policy, self.judge)

    @contextmanager
    def rollout_mode(self) -> Generator[None, None, None]:
        """What the data module enters around each collection: the policy in eval mode, inside ``gathered_models()``.

        Eval mode: rollouts without dropout (the models have none by default anyway).
        """
        self.policy.eval()
        with self.gathered_models():
            yield

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        """Policy optimizer, then the judge's when it is trained."""
        optimizers = [self.policy_optimizer_factory(self.policy.parameters())]
        if self.trains_judge:
            assert self.judge is not None
            optimizers.append(self.judge_optimizer_factory(self.judge.parameters()))
        return optimizers

    def _zero_grads_for_checkpoint(self, optimizers: list[Any]) -> None:
        """Give every sharded parameter a (zero) gradient before the first update.

        torch.distributed.checkpoint (how ModelParallelStrategy saves optimizers) fills an empty optimizer state with a
        zero-lr step when no parameter has a gradient; that step counts in Adam's bias correction and shrinks the
        first real update to 0.74x (an iteration without update is then checkpointed: the policy's rows may all fall
        outside the band). With gradients present it leaves the state alone.
        """
        for opt in optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is None and is_sharded(self.policy):
                        p.grad = torch.zeros_like(p)

    # ------------------------------------------------------------------------------------------------ the step
    def training_step(self, data: IterationData, batch_idx: int) -> None:
        """Update the policy, then the judge, on the iteration's rows; log metrics."""
        self._disable_ddp_gradient_hooks()
        optimizers = self.optimizers()
        opts = optimizers if isinstance(optimizers, list) else [optimizers]
        self._zero_grads_for_checkpoint(opts)
        metrics: dict[str, float] = {f"rollout/{k}": v for k, v in data.metrics.items()}
        metrics["iteration"] = float(data.iteration)

        started = time.perf_counter()
        metrics.update(
            self._update(
                "policy", self.policy, opts[0], data.policy, self.policy_updates, self.policy_epochs, self.policy_loss
            )
        )
        if self.trains_judge:
            assert self.judge is not None and self.judge_loss is not None
            judge_metrics = self._update(
                "judge", self.judge, opts[1], data.judge, self.judge_updates, self.judge_epochs, self.judge_loss
            )
            metrics.update(judge_metrics)
        metrics["time/update_s"] = time.perf_counter() - started  # both models' updates (old log-probs included)
        self.update_history.append(metrics)
        self.log_dict(metrics, on_step=True, prog_bar=False, batch_size=1, rank_zero_only=True)
        self.log("success", data.metrics.get("success_rate", 0.0), prog_bar=True, on_step=True, batch_size=1)

    # ------------------------------------------------------------------------------------------------ helpers
    def _world(self) -> int:
        return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1

    def _all_reduce_sum(self, values: list[float], op: Any = None) -> list[float]:
        if self._world() == 1:  # nothing to reduce: no device round trip
            return [float(x) for x in values]
        # on the module's device: NCCL reduces CUDA tensors only
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM if op is None else op)
        return [float(x) for x in t.cpu()]

    def _micro_batches_everywhere(self, model: nn.Module, local: int) -> int:
        """How many micro-batches every rank runs: the busiest rank's count when the model is sharded.

        Each FSDP forward and backward is a collective, so every rank must make as many; unsharded, this rank's own.
        """
        if not is_sharded(model) or self._world() == 1:
            return local
        return int(self._all_reduce_sum([float(local)], op=dist.ReduceOp.MAX)[0])

    def _padding_pass(self, model: nn.Module, *, backward: bool) -> None:
        """A zero-weight forward (and backward) on one two-token row (its gradient is exactly zero).

        This rank's share of the collectives when it has fewer micro-batches than the busiest rank.
        """
        ids = torch.zeros((1, 2), dtype=torch.int64)
        mask = torch.ones((1, 2), dtype=torch.bool)  # masks stay on the host: positions are chosen there
        logp = self._row_logprobs(model, TokenRows(ids, mask, mask, torch.zeros(1, 3).long()))
        if backward:
            self.manual_backward(logp.sum() * 0.0)

    def _disable_ddp_gradient_hooks(self) -> None:
        """Under DDP, keep its gradient hooks off: gradients are all-reduced by ``_sync_and_step``.

        Why not let the strategy synchronize: ranks hold whole task groups, so they hold different numbers of rows and
        run different numbers of micro-batch backwards (a rank may run none for one model), and one step updates two
        models separately. DDP's hooks run one averaging all-reduce in *every* backward: the busier rank's extra
        backward waits in an all-reduce no other rank joins (a hang on NCCL), and the averaged partial sums are not
        the gradient. ``tests/lightning/test_gradient_sync.py`` shows both on two gloo processes, and that this path
        (local accumulation of losses normalized by the *global* token/sequence counts, then one summing all-reduce
        per optimizer step) equals the single-process gradient. Making DDP work would take ``no_sync`` on all but the
        last micro-batch, zero-weight padding backwards so every rank syncs once, ``find_unused_parameters`` for
        the model not being updated, and a world-size rescale of every loss: the same all-reduce, with more parts.
        Lightning turns the hooks back on after each forward in manual optimization, so this runs at the start of
        every step. DDP still starts the processes, broadcasts the initial weights and provides the process group.
        """
        wrapped: Any = getattr(self.trainer.strategy, "model", None) if self._trainer is not None else None
        if wrapped is not None and hasattr(wrapped, "require_backward_grad_sync"):
            wrapped.require_backward_grad_sync = False

    def _old_logprobs(self, model: nn.Module, rows: TrainingRows | None) -> Tensor:
        """Log-probs of every row under the current (pre-update) weights, micro-batched, no grad."""
        lengths = rows.rows.attention_mask.sum(dim=1).tolist() if rows is not None else []
        # on the module's device, like the log-probs the update compares them with (no host round trip)
        shape = rows.rows.input_ids.shape if rows is not None else (0, 0)
        out = torch.zeros(shape, dtype=torch.float32, device=self.device)
        micros = self._micro_batches(model, lengths)
        model.eval()
        with torch.no_grad():
            for _ in range(self._micro_batches_everywhere(model, len(micros)) - len(micros)):
                self._padding_pass(model, backward=False)
            for micro in micros:
                assert rows is not None
                idx = torch.tensor(micro)
                lp = self._row_logprobs(model, rows.rows.select(idx))
                out[idx.to(self.device), : lp.shape[1]] = lp
        return out

    def _packs(self, model: nn.Module) -> bool:
        return self.packing and packable(model)

    def _micro_batches(self, model: nn.Module, lengths: list[int]) -> list[list[int]]:
        """Row indices per micro-batch: real tokens within the budget when packed, padded ones otherwise."""
        if self._packs(model):
            return pack_by_tokens(lengths, max_tokens=self.micro_batch_tokens)
        return pack_by_length(lengths, max_tokens=self.micro_batch_tokens)

    def _row_logprobs(self, model: nn.Module, rows: TokenRows) -> Tensor:
        """Per-token log-probs of ``rows`` on the module's device (packed when the model allows, see ``packing``).

        Only the token ids travel to the device: the masks stay on the host, where the scored positions are chosen
        (no device synchronization, and a model on a device without data, ``meta``, runs the same path).
        """
        ids = rows.input_ids.to(self.device)
        if self._packs(model):
            return packed_token_logprobs(model, ids, rows.attention_mask, score_mask=rows.response_mask)
        return sequence_token_logprobs(model, ids, rows.attention_mask, score_mask=rows.response_mask)

    def _update(
        self,
        name: str,
        model: nn.Module,
        optimizer: Any,
        rows: TrainingRows | None,
        updates: int,
        epochs: int,
        loss_fn: PolicyLoss,
    ) -> dict[str, float]:
        """Run ``epochs`` passes of ``updates`` optimizer steps on ``rows`` (possibly none on this rank).

        Returns averaged metrics, those of the passes after the first under ``<name>/later/``.

        The same path for both models: ``loss_fn(logprobs, old_logprobs, advantages, mask)`` on each micro-batch of
        rows, with the rows' final advantages and the global token/sequence counts of the minibatch. The old
        log-probs are those of the weights before the iteration's first step, in every pass (PPO's ratio).
        """
        logs: dict[str, list[float]] = {}
        old_all = self._old_logprobs(model, rows) if rows is not None or is_sharded(model) else None
        for epoch, k in ((e, k) for e in range(epochs) for k in range(updates)):
            prefix = name if epoch == 0 else f"{name}/later"
            if rows is not None:
                index = (rows.group % updates == k).nonzero().squeeze(1)
            else:
                index = torch.zeros(0, dtype=torch.int64)
            local_tok = int(rows.rows.response_mask[index].sum()) if rows is not None and index.numel() else 0
            local_seq = int((rows.rows.response_mask[index].sum(dim=1) > 0).sum()) if rows is not None else 0
            n_tok, n_seq = (int(x) for x in self._all_reduce_sum([local_tok, local_seq]))
            if n_tok == 0:
                continue
            optimizer.zero_grad(set_to_none=False)
            model.train()  # activation checkpointing runs in train mode only (the models have no dropout)
            part_rows = rows.subset(index) if rows is not None and index.numel() else None
            lengths = part_rows.rows.attention_mask.sum(dim=1).tolist() if part_rows is not None else []
            micros = self._micro_batches(model, lengths)
            for _ in range(self._micro_batches_everywhere(model, len(micros)) - len(micros)):
                self._padding_pass(model, backward=True)
            if part_rows is not None:
                assert old_all is not None
                old_part = old_all[index.to(old_all.device)]
                for micro in micros:
                    midx = torch.tensor(micro)
                    part = part_rows.subset(midx)
                    out = self._micro_batch_backward(
                        model, part, old_part[midx.to(old_part.device)], loss_fn, n_tok, n_seq
                    )
                    for key, value in out.metrics.items():
                        if value.numel() == 1:
                            logs.setdefault(f"{prefix}/{key}", []).append(_logged(value))
                    logs.setdefault(f"{prefix}/loss", []).append(_logged(out.loss))
            model.eval()
            self._sync_and_step(model, optimizer)
            logs.setdefault(f"{name}/updates", []).append(1.0)
        summary = {key: sum(v) / len(v) for key, v in logs.items() if not key.endswith("/updates")}
        summary[f"{name}/updates"] = float(len(logs.get(f"{name}/updates", [])))
        summary[f"{name}/aggregation_is_token_mean"] = float(loss_fn.aggregation is Aggregation.TOKEN_MEAN)
        return summary

    def _micro_batch_backward(
        self, model: nn.Module, part: TrainingRows, old_logprobs: Tensor, loss_fn: PolicyLoss, n_tok: int, n_seq: int
    ) -> LossOutput:
        """The loss of one micro-batch of rows, backpropagated; returns the loss's output (loss and metrics).

        Each rank's loss is normalized by the minibatch's global token/sequence counts (``n_tok``, ``n_seq``), so the
        gradient sum over micro-batches and ranks is the whole minibatch's gradient.
        """
        logp = self._row_logprobs(model, part.rows)
        # every tensor the loss receives follows the log-probs' device (the rows arrive on the host)
        out = loss_fn(
            logp,
            old_logprobs[:, : logp.shape[1]].to(logp.device),
            part.advantages.to(device=logp.device, dtype=logp.dtype),
            part.rows.response_mask.to(logp.device),
            num_tokens_global=n_tok,
            num_seqs_global=n_seq,
        )
        self.manual_backward(out.loss)
        return out

    def _sync_and_step(self, model: nn.Module, optimizer: Any) -> None:
        params = [p for p in model.parameters() if p.requires_grad]
        if is_sharded(model):  # FSDP reduce-scattered (summed) every backward; clip by the whole model's norm
            if self.max_grad_norm > 0:
                clip_grad_norm(params, self.max_grad_norm)
            optimizer.step()
            return
        if self._world() > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        optimizer.step()
