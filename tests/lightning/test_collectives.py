"""The loop's collectives: one process answers them as the identity, and the loop hands its runtime to the data side.

Every collective of the data side (the pool sync, the row deal, the sharded evaluations) goes through a
``loop.protocol.Collectives``; the multi-process behaviour is tested over gloo by the pool, row and evaluation
workers in ``tests/loop``.
"""

from pathlib import Path

import pytest
import torch.distributed as dist
from _update_rows import FixedRows, ragged_rows, updates

from rlanything_core.lightning.process_group import ProcessGroup
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.protocol import SINGLE_PROCESS, Collectives, Runtime, ShardedEvaluator
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.models.tiny import tiny_causal_lm


@pytest.mark.parametrize("collectives", [SINGLE_PROCESS, ProcessGroup()], ids=["single", "no-process-group"])
def test_one_process_answers_every_collective_as_the_identity(collectives: Collectives) -> None:
    assert not dist.is_initialized()
    assert isinstance(collectives, Collectives)
    assert (collectives.rank, collectives.world_size) == (0, 1)
    obj = {"rates": {"t": 0.5}}
    assert collectives.all_gather_object(obj) == [obj]
    assert collectives.broadcast(obj, 0) is obj
    assert collectives.scatter_object([obj], 0) is obj
    with pytest.raises(ValueError, match="objs: expected one object"):
        collectives.scatter_object([obj, obj], 0)


class _Sharded:
    """A sharded evaluator that declares its collectives."""

    sharded = True
    collectives: Collectives = SINGLE_PROCESS

    def __call__(self) -> dict[str, float]:
        return {}


def test_the_loop_hands_its_runtime_to_the_source_and_a_sharded_evaluator(tmp_path: Path) -> None:
    policy, _ = updates(tiny_causal_lm(64, hidden=16, layers=1, seed=0), micro_batch_tokens=64)
    source = FixedRows(IterationData(iteration=0, policy=ragged_rows(2, 8, seed=0), judge=None))
    evaluator = _Sharded()
    assert isinstance(evaluator, ShardedEvaluator) and source.collectives is SINGLE_PROCESS
    loop = RLAnythingLoop(source, policy.runtime, policy, evaluator=evaluator, iterations=1, checkpoint_dir=tmp_path)
    assert isinstance(loop.runtime, Runtime) and isinstance(loop.runtime, Collectives)
    assert source.collectives is loop.runtime and evaluator.collectives is loop.runtime
