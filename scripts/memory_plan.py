"""Print the per-GPU memory plan of a training config: `python -m scripts.memory_plan scale=gpu model=qwen2.5-7b`.

The plan is the package's (``rlanything_core/assembly/memory_plan.py``, which a run's preflight also reads); this app
composes the config and prints it as a table. The last line is ``fits=<true|false> peak_gib=<float>
capacity_gib=<float>``.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from rlanything_core.assembly.memory_plan import GIB, MemoryPlan, plan
from rlanything_core.conf import SEARCH_PATH

__all__ = ["main", "render"]


def render(p: MemoryPlan) -> str:
    """The plan as a table, then the machine-readable last line."""
    lines = [f"{'part':<28}{'GiB per GPU':>12}"]
    lines += [f"{k:<28}{v / GIB:>12.2f}" for k, v in p.parts.items()]
    lines += [f"{'training phase':<28}{p.training / GIB:>12.2f}", f"{'rollout phase':<28}{p.rollout / GIB:>12.2f}"]
    lines.append(f"{'checkpoint (all ranks)':<28}{p.checkpoint / GIB:>12.2f}")
    lines.append(f"fits={str(p.fits).lower()} peak_gib={p.peak / GIB:.2f} capacity_gib={p.capacity / GIB:.2f}")
    return "\n".join(lines)


@hydra.main(config_path=SEARCH_PATH, config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Print the plan of the composed config (no setting needed)."""
    print(render(plan(cfg)), flush=True)


if __name__ == "__main__":
    main()
