"""One rank of tests/loop/test_row_sharding.py: ``python _row_sharding_worker.py RANK WORLD PORT OUT``.

Every rank builds the same global rows; ranks hold whole task groups of them (rank ``world - 1`` holds none, as a
rank without a task group does), call ``balance_rows`` and write what they received.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rlanything_core.lightning.process_group import ProcessGroup  # noqa: E402
from rlanything_core.loop.row_sharding import balance_rows  # noqa: E402
from rlanything_core.testing.processes import die_with_parent  # noqa: E402
from rlanything_core.types import TrainingRows, rows_from_sequences  # noqa: E402


def global_rows(groups: int = 3, per_group: int = 5) -> TrainingRows:
    """Rows of different lengths; row ``n`` has token ids ``[n+1] * (2 + n % 4)`` and advantage ``n / 10``."""
    n_rows = groups * per_group
    prompts = [[n + 1] * (1 + n % 4) for n in range(n_rows)]
    responses = [[n + 1] for n in range(n_rows)]
    rows = rows_from_sequences(prompts, responses, [(n, 0, -1) for n in range(n_rows)], pad_id=0)
    return TrainingRows(rows, torch.arange(n_rows, dtype=torch.float32) / 10,
                        torch.arange(n_rows, dtype=torch.int64) // per_group)


def main(rank: int, world: int, port: int, out: Path) -> None:
    die_with_parent()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rows = global_rows()
    owner = rows.group % (world - 1)  # groups dealt to ranks 0 .. world-2; the last rank has no task group
    mine = (owner == rank).nonzero().squeeze(1)
    local = rows.subset(mine) if mine.numel() and rank < world - 1 else None
    got = balance_rows(local, ProcessGroup())
    result = {"rank": rank, "held": 0 if local is None else local.num_rows, "received": []}
    if got is not None:
        for n in range(got.num_rows):
            length = int(got.rows.attention_mask[n].sum())
            result["received"].append(
                [got.rows.input_ids[n, :length].tolist(), float(got.advantages[n]), int(got.group[n])]
            )
    dist.barrier()
    dist.destroy_process_group()
    (out / f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
