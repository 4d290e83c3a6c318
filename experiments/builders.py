"""Build the RLAnything loop from a Hydra config: validate first (``config_checks``), then wire the parts.

With config_checks.py, train.py and ablate.py, the only place that reads configs: every object below is built here
and handed to the library, which never reads a config.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from experiments.config_checks import CODING_FILES, ConfigError, band, coding_dir, validate

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------------- models
def load_models(cfg: DictConfig) -> tuple[Any, Any | None, Any]:
    """``(policy, judge or None, tokenizer)``; the judge shares the policy's tokenizer."""
    built = instantiate(cfg.model.policy)
    policy, tokenizer = built if isinstance(built, tuple) else (built, None)
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(cfg.model.tokenizer))
    policy_init = OmegaConf.select(cfg, "model.policy_init")
    if policy_init is not None:  # e.g. a supervised warm start (experiments/warm_start.py)
        policy.load_state_dict(torch.load(str(policy_init), map_location="cpu", weights_only=True))
    judge = None
    if cfg.arm.use_judge:
        built = instantiate(cfg.model.judge)
        judge = built[0] if isinstance(built, tuple) else built
        if cfg.arm.judge_checkpoint is not None:
            from rlanything_core.lightning.checkpoint import read_checkpoint

            state = read_checkpoint(str(cfg.arm.judge_checkpoint))["state_dict"]  # one file or sharded
            judge.load_state_dict({k[len("judge.") :]: v for k, v in state.items() if k.startswith("judge.")})
    return policy, judge, tokenizer


def sampling(cfg: DictConfig, *, max_new_tokens: int, temperature: float) -> Any:
    """``SamplingParams`` with the model's nucleus mass (``model.top_p``, 1.0 when the model config has none)."""
    from rlanything_core.generation.types import SamplingParams

    top_p = float(OmegaConf.select(cfg, "model.top_p", default=1.0))
    return SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p)


def judge_max_new_tokens(cfg: DictConfig) -> int:
    """The judge's generation budget (votes, unit tests): ``model.judge_max_new_tokens``, else the policy's."""
    return int(OmegaConf.select(cfg, "model.judge_max_new_tokens", default=cfg.model.max_new_tokens))


def first(items: list[Any], count: Any) -> list[Any]:
    """The first ``count`` items (``count`` null: all of them, e.g. a whole evaluation split)."""
    return list(items) if count is None else list(items)[: int(count)]


def _selector(cfg: DictConfig, temperature: float) -> Any:
    from rlanything_core.collect.action_selection import BoxedIndexSelector, LikelihoodSelector

    if cfg.model.action_selection == "likelihood":
        return LikelihoodSelector(temperature=temperature)
    if cfg.model.action_selection == "scorer":  # an encoder scorer (model=minilm-scorer)
        from rlanything_core.collect.scorer_selection import ScorerSelector

        return ScorerSelector(temperature=temperature, earlier_turns=int(cfg.setting.max_history_turns))
    if cfg.model.action_selection == "boxed":
        return BoxedIndexSelector(sampling(cfg, max_new_tokens=int(cfg.model.max_new_tokens), temperature=temperature))
    raise ConfigError(
        "model.action_selection", f"unknown {cfg.model.action_selection!r}", "use likelihood, boxed or scorer"
    )


def _votes(cfg: DictConfig) -> Any:
    from rlanything_core.collect.judge import GenerativeVotes, ScoredVotes

    temperature = float(cfg.model.judge_temperature)
    if cfg.model.judge_votes == "scored":
        return ScoredVotes(temperature=temperature)
    if cfg.model.judge_votes == "encoder":  # the encoder judge (model=minilm-scorer)
        from rlanything_core.collect.scorer_selection import EncoderVotes

        return EncoderVotes()
    if cfg.model.judge_votes == "generative":
        return GenerativeVotes(sampling(cfg, max_new_tokens=judge_max_new_tokens(cfg), temperature=temperature))
    raise ConfigError("model.judge_votes", f"unknown {cfg.model.judge_votes!r}", "use scored, generative or encoder")


def rollout_backends(cfg: DictConfig, policy: Any, judge: Any, tokenizer: Any) -> tuple[Any, Any]:
    """``(policy backend, judge backend or None)`` as ``backend.name`` says: the trained modules themselves
    (transformers, the default) or vLLM engines built from the models' folders (``backend=vllm``)."""

    name = str(OmegaConf.select(cfg, "backend.name", default="transformers"))
    if name == "transformers":
        return (
            _agent_backend(cfg, policy, tokenizer),
            _agent_backend(cfg, judge, tokenizer) if judge is not None else None,
        )
    if name != "vllm":
        raise ConfigError("backend.name", f"unknown backend {name!r}", "use backend=vllm, or no backend")
    if cfg.model.action_selection != "boxed" or (judge is not None and cfg.model.judge_votes != "generative"):
        raise ConfigError(
            "backend", "vLLM generates text; it does not score candidates", "use model=qwen2.5-7b (boxed, generative)"
        )
    engine = instantiate(cfg.backend.engine)

    def folder(role: str) -> str:
        path = OmegaConf.select(cfg, f"model.{role}.pretrained_model_name_or_path")
        if path is None:
            raise ConfigError(f"model.{role}", "vLLM loads a model folder", "use a model with a folder (qwen2.5-7b)")
        return str(path)

    return engine(model=folder("policy")), engine(model=folder("judge")) if judge is not None else None


def rollout_context(cfg: DictConfig, models: list[tuple[Any, Any]]) -> Any:
    """With vLLM, the module's rollout context: wake the engines, push the trained weights of each ``(model, engine)``
    pair (full tensors, in buckets of ``backend.weight_bucket_mb``), sleep after; with transformers ``None`` (the
    module gathers its sharded weights itself)."""
    if str(OmegaConf.select(cfg, "backend.name", default="transformers")) != "vllm":
        return None
    from rlanything_core.generation.weight_sync import EngineCycle, push_weights

    bucket = int(float(cfg.backend.weight_bucket_mb) * 2**20)
    dtype = getattr(torch, str(cfg.backend.engine.dtype))
    pairs = [(m, e) for m, e in models if m is not None and e is not None]

    def sync() -> None:
        for model, engine in pairs:
            push_weights(model, engine, bucket_bytes=bucket, dtype=dtype)

    return EngineCycle([e for _, e in pairs], sync=sync).awake


# ---------------------------------------------------------------------------------------------------------- a run
@dataclass
class Run:
    """Everything ``trainer.fit`` needs, plus where the run lives."""

    module: Any
    datamodule: Any
    trainer: Any
    run_dir: Path
    checkpoint: Any
    resume_from: Path | None


_SHARED_POOLS: dict[tuple[Any, int], Any] = {}
atexit.register(lambda: close_shared_env_pools())


def shared_env_pool(factory: Any, workers: int, *, kind: str = "text") -> Any:
    """One :class:`EnvPool` per ``(factory, workers)`` in this process, reused by every run built here.

    ``ablate.py`` runs all arms and seeds in one process: sharing the pools spares a worker start per run, and each
    worker keeps its loaded games (ALFWorld's idle-engine cache), so a game is parsed once for the whole ablation.
    Runs are sequential, and every collection starts a new batch, so sharing does not couple them.
    ``kind="browser"``: workers that own browsers (MiniWoB++), killed with their whole process group.
    """
    from rlanything_core.envs.parallel import EnvPool

    key = (factory, workers)
    if key not in _SHARED_POOLS:
        if kind == "browser":
            from rlanything_core.envs.miniwob.pool import BrowserEnvPool

            _SHARED_POOLS[key] = BrowserEnvPool(factory, num_workers=workers)
        else:
            _SHARED_POOLS[key] = EnvPool(factory, num_workers=workers)
    return _SHARED_POOLS[key]


def close_shared_env_pools() -> None:
    """Stop the workers of every shared pool."""
    for pool in _SHARED_POOLS.values():
        pool.close()
    _SHARED_POOLS.clear()


def build(cfg: DictConfig) -> Run:
    """Validate, then build the module, the data module and the trainer of ``cfg``'s setting."""
    validate(cfg)
    name = cfg.setting.name
    if name in ("alfworld", "textworld"):
        return _build_agent(cfg)
    if name in ("coding", "livebench"):
        return _build_coding(cfg)
    if name == "miniwob":  # the GUI setting lives in its own module
        from experiments.miniwob_setting import build_miniwob

        return build_miniwob(cfg)  # type: ignore[no-any-return]
    if name == "desktop":  # OSWorld-format Calc tasks: experiments/desktop_setting.py
        from experiments.desktop_setting import build_desktop

        return build_desktop(cfg)  # type: ignore[no-any-return]
    raise ConfigError(
        "setting",
        f"setting {name!r} has no loop builder yet",
        "use +setting=alfworld, textworld, coding, livebench, miniwob or desktop",
    )


def _trainer(cfg: DictConfig, run_dir: Path, callbacks: list[Any]) -> Any:
    import lightning as L
    from lightning.pytorch.loggers import TensorBoardLogger

    from rlanything_core.lightning.csv_logger import ResumableCSVLogger

    # a rerun appends to logs/metrics.csv; a repeated iteration replaces its rows
    loggers = [ResumableCSVLogger(str(run_dir), name="logs", version="", replay_key="iteration")]
    if importlib.util.find_spec("tensorboard") is not None or importlib.util.find_spec("tensorboardX") is not None:
        loggers.append(TensorBoardLogger(str(run_dir), name="tensorboard", version=""))
    t = cfg.trainer
    strategy = str(t.strategy)
    if strategy == "ddp" and str(t.accelerator) == "cpu":
        from lightning.pytorch.strategies import DDPStrategy

        strategy = DDPStrategy(process_group_backend="gloo")  # type: ignore[assignment]
    elif strategy == "fsdp2":
        strategy = _fsdp2_strategy(cfg)  # type: ignore[assignment]
    return L.Trainer(
        accelerator=str(t.accelerator),
        devices=t.devices,
        num_nodes=int(t.num_nodes),
        strategy=strategy,
        precision=str(t.precision),
        max_epochs=int(cfg.iterations),
        reload_dataloaders_every_n_epochs=1,  # one iteration per epoch (see RolloutDataModule)
        logger=loggers,
        callbacks=callbacks,
        enable_checkpointing=False,
        enable_progress_bar=bool(cfg.progress),
        enable_model_summary=False,
        log_every_n_steps=1,
        use_distributed_sampler=False,
    )


def _fsdp2_strategy(cfg: DictConfig) -> Any:
    """Lightning's ``ModelParallelStrategy`` as pure data parallelism: every rank one FSDP2 shard (no tensor
    parallelism); ``training_step`` runs outside any forward redirection, so the module's manual optimization works.
    ``fsdp.sharded_checkpoint``: every rank writes its own shards (torch.distributed.checkpoint: nothing is gathered,
    what a 7B policy + judge with Adam states needs); false: full state dicts gathered to rank 0 (one file)."""
    from lightning.pytorch.strategies import ModelParallelStrategy

    t = cfg.trainer
    world = int(t.devices) * int(t.num_nodes)
    return ModelParallelStrategy(
        data_parallel_size=world,
        tensor_parallel_size=1,
        save_distributed_checkpoint=bool(OmegaConf.select(cfg, "fsdp.sharded_checkpoint", default=False)),
        process_group_backend="gloo" if str(t.accelerator) == "cpu" else None,
    )


def _sharding(cfg: DictConfig) -> Any:
    """The FSDP2 sharding of both models under ``trainer.strategy=fsdp2`` (``fsdp.*``), else ``None``."""
    from rlanything_core.lightning.sharding import ShardingConfig

    if str(cfg.trainer.strategy) != "fsdp2":
        return None
    f = OmegaConf.select(cfg, "fsdp", default=None) or {}
    return ShardingConfig(
        param_dtype=getattr(torch, str(f.get("param_dtype", "bfloat16"))),
        reduce_dtype=getattr(torch, str(f.get("reduce_dtype", "float32"))),
        activation_checkpointing=bool(f.get("activation_checkpointing", True)),
    )


def _alfworld_tasks(cfg: DictConfig) -> tuple[list[Any], dict[str, list[Any]], Any]:
    from rlanything_core.envs.alfworld.data import list_games, resolve_data_root

    root = resolve_data_root(cfg.setting.data_root)
    types = tuple(cfg.setting.task_types)
    train = list_games(cfg.setting.train_split, root, task_types=types)
    if cfg.setting.train_games is not None:
        train = train[: int(cfg.setting.train_games)]
    evals = {k: _eval_games(cfg, list_games(v, root, task_types=types)) for k, v in cfg.setting.eval_splits.items()}
    return train, evals, root


def _eval_games(cfg: DictConfig, games: list[Any]) -> list[Any]:
    """``eval.games`` of a split's games, every task type in proportion, drawn by ``eval.sample_seed`` (the same
    games for every arm and training seed: the ablation's statistics are paired by game)."""
    from rlanything_core.envs.alfworld.sampling import stratified_sample

    n = len(games) if cfg.eval.games is None else min(int(cfg.eval.games), len(games))  # null: the whole split
    return stratified_sample(games, n, stratum=lambda g: g.task_type, seed=int(cfg.eval.sample_seed))


def _game_id(game_file: Path) -> str:
    return f"{game_file.parent.parent.name}/{game_file.parent.name}"


def _prepare(cfg: DictConfig) -> tuple[Path, Any, Any, Any, int]:
    """Run folder (with the resolved config), seeded models, tokenizer and pad id."""
    run_dir = Path(str(cfg.run_dir)).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    if is_writer_rank():  # one writer, atomically: the other ranks would race on the same file
        from rlanything_core.environment._io import atomic_write_text

        atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    threads = OmegaConf.select(cfg, "torch_threads")
    if threads is not None:
        torch.set_num_threads(int(threads))
    torch.manual_seed(int(cfg.seed))
    policy, judge, tokenizer = load_models(cfg)
    pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    return run_dir, policy, judge, tokenizer, pad_id


def _build_agent(cfg: DictConfig) -> Run:
    from rlanything_core.collect.agent import AgentCollector, SequentialRunner
    from rlanything_core.collect.judge import JudgeCollector
    from rlanything_core.environment.rewriters.protocol import TaskSpec
    from rlanything_core.lightning import ALFWorldModule, RolloutDataModule, TextWorldModule
    from rlanything_core.loop.adaptation import EnvironmentAdaptation
    from rlanything_core.loop.driver import AgentLoopDriver
    from rlanything_core.loop.evaluation import AgentEvaluator, EvalSplit

    run_dir, policy, judge, tokenizer, pad_id = _prepare(cfg)
    policy_backend, judge_backend = rollout_backends(cfg, policy, judge, tokenizer)

    if cfg.setting.name == "alfworld":
        from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
        from rlanything_core.envs.alfworld.oracle import StepLabel, label_trajectory

        train, evals, _ = _alfworld_tasks(cfg)
        roots = [
            TaskSpec(
                task_id=_game_id(g.game_file),
                kind="alfworld",
                root_id=_game_id(g.game_file),
                data={"game_file": str(g.game_file)},
            )
            for g in train
        ]
        factory: Any = AlfworldEnvFactory(max_episode_steps=int(cfg.setting.max_steps))
        eval_factory: Any = AlfworldEnvFactory(max_episode_steps=int(cfg.setting.eval_max_steps))
        splits = [
            EvalSplit(k, tuple(str(g.game_file) for g in games), tuple(_game_id(g.game_file) for g in games))
            for k, games in evals.items()
        ]

        def oracle(game_file: Any, actions: list[str]) -> list[int]:
            return [1 if s.label is StepLabel.PROGRESS else -1 for s in label_trajectory(game_file, actions)]

        module_cls: Any = ALFWorldModule
    else:
        from rlanything_core.envs.textworld_games import TextWorldEnvFactory

        st = cfg.setting
        cache = None if st.cache_dir is None else str(st.cache_dir)
        roots = []
        for rooms in st.train_rooms:
            for quest in st.train_quest_lengths:
                for k in range(int(st.seeds_per_cell)):
                    params = {
                        "nb_rooms": int(rooms),
                        "nb_objects": int(st.nb_objects),
                        "quest_length": int(quest),
                        "seed": 100 * k + 10 * int(rooms) + int(quest),
                    }
                    task_id = "tw-r{nb_rooms}-o{nb_objects}-q{quest_length}-s{seed}".format(**params)
                    roots.append(TaskSpec(task_id=task_id, kind="textworld", root_id=task_id, data=params))
        splits = []
        for quest in st.eval_quest_lengths:
            specs = [
                _textworld_spec(
                    {
                        "nb_rooms": int(st.eval_rooms),
                        "nb_objects": int(st.nb_objects),
                        "quest_length": int(quest),
                        "seed": 777_000 + k,
                    }
                )
                for k in range(int(cfg.eval.games))
            ]
            splits.append(EvalSplit(f"quest_{quest}", tuple(specs), tuple(s.key for s in specs)))
        factory = TextWorldEnvFactory(max_episode_steps=int(st.max_steps), cache_dir=cache)
        eval_factory = TextWorldEnvFactory(max_episode_steps=int(st.eval_max_steps), cache_dir=cache)
        oracle = None  # type: ignore[assignment]
        module_cls = TextWorldModule

    workers = int(cfg.setting.env_workers)
    runner: Any = shared_env_pool(factory, workers) if workers > 1 else SequentialRunner(factory)
    eval_runner: Any = shared_env_pool(eval_factory, workers) if workers > 1 else SequentialRunner(eval_factory)
    collector = AgentCollector(
        policy_backend,
        runner,
        _selector(cfg, float(cfg.model.temperature)),
        group_size=int(cfg.group_size),
        max_steps=int(cfg.setting.max_steps),
        max_history_turns=int(cfg.setting.max_history_turns),
        progress=bool(cfg.progress),
    )
    judge_collector = (
        JudgeCollector(judge_backend, num_votes=int(cfg.num_votes), votes=_votes(cfg))
        if judge_backend is not None
        else None
    )
    judge_loss = _judge_loss(cfg)
    pool = _pool(cfg, run_dir, roots)
    adaptation = None
    if cfg.arm.adapt_environment:
        adaptation = EnvironmentAdaptation(
            _rewriter(cfg, run_dir, judge_backend), max_requests=int(cfg.max_rewrites_per_iteration)
        )
    driver = AgentLoopDriver(
        collector=collector,
        judge=judge_collector,
        integrator=instantiate(cfg.arm.integrator),
        judge_loss=judge_loss,
        pool=pool,
        to_env_task=_env_task,
        adaptation=adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=pad_id,
        lam=float(cfg.lam),
        policy_band=band(cfg, "policy_band"),
        judge_band=band(cfg, "judge_band"),
    )
    eval_collector = AgentCollector(
        policy_backend,
        eval_runner,
        _selector(cfg, float(cfg.eval.temperature)),
        group_size=int(cfg.eval.runs),
        max_steps=int(cfg.setting.eval_max_steps),
        max_history_turns=int(cfg.setting.max_history_turns),
    )
    evaluator = AgentEvaluator(
        eval_collector,
        splits,
        judge=judge_collector,
        oracle=oracle,
        oracle_episodes=int(cfg.eval.oracle_episodes),
        seed=int(cfg.eval.seed),  # the judge's probe set: the same for every arm and seed
        episode_seed=evaluation_episode_seed(cfg),
        judge_episodes=None if cfg.eval.judge_episodes is None else int(cfg.eval.judge_episodes),
        probe_file=cfg.eval.get("probe_file"),
    )
    module = _module(cfg, module_cls, policy, judge, judge_loss, evaluator)
    module.rollout_context = rollout_context(cfg, [(policy, policy_backend), (judge, judge_backend)])
    return _run(cfg, run_dir, module, RolloutDataModule(driver, iterations=int(cfg.iterations)))


def evaluation_episode_seed(cfg: DictConfig) -> int:
    """The seed of the evaluation episodes: one per training seed (``eval.per_seed_episodes``), else ``eval.seed``.

    Per training seed, every arm of that seed plays the same episodes (paired), and the seeds are independent draws:
    with one draw for all, every seed's "before" row is the same sample and its noise is counted once, not per seed.
    """
    from rlanything_core.seeding import derive_seed

    base = int(cfg.eval.seed)
    return derive_seed(base, "episodes", int(cfg.seed)) if cfg.eval.get("per_seed_episodes", False) else base


def _agent_backend(cfg: DictConfig, model: Any, tokenizer: Any) -> Any:
    """What the selector / vote sampler calls: an encoder scorer is its own backend; a causal LM gets transformers'."""
    if callable(getattr(model, "row_logprobs", None)):
        return model
    from rlanything_core.generation.transformers_backend import TransformersBackend

    return TransformersBackend(model, tokenizer, batch_size=int(cfg.model.batch_size))


RANK_VARIABLES = ("RANK", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK")


def is_writer_rank() -> bool:
    """Whether this process is global rank 0, from the launchers' variables (the run is built before the process
    group exists): torchrun's ``RANK``, SLURM's ``SLURM_PROCID`` (``srun`` sets no ``RANK``), Lightning's
    ``NODE_RANK``/``LOCAL_RANK`` (its spawned processes inherit ``SLURM_PROCID=0`` from a one-task allocation, so
    every variable present must be 0)."""
    return all(int(os.environ.get(var, "0")) == 0 for var in RANK_VARIABLES)


def _pool(cfg: DictConfig, run_dir: Path, roots: list[Any]) -> Any:
    """The task pool, read-only on every rank: the writer (global rank 0) is chosen once the process group exists
    (``PoolSnapshots.save_initial_pool`` / ``restore_pool``) and broadcasts its state to the others."""
    from rlanything_core.environment.pool import TaskPool

    state = run_dir / "pool" / "state.json"
    env_band = band(cfg, "env_band", strict=True)
    if state.is_file():  # a rerun: the datamodule rolls it back to the checkpoint's (or the initial) snapshot
        return TaskPool.load(run_dir, writer=False)
    return TaskPool.create(run_dir, roots, band=env_band, writer=False)


def _judge_loss(cfg: DictConfig) -> Any:
    from rlanything_core.losses.consistency import ConsistencyRewardLoss

    if not cfg.arm.train_judge:
        return None
    o = cfg.optim
    return ConsistencyRewardLoss(
        clip_eps_low=float(o.clip_eps_low), clip_eps_high=float(o.clip_eps_high), kl_coef=float(o.kl_coef)
    )


def _module(cfg: DictConfig, module_cls: Any, policy: Any, judge: Any, judge_loss: Any, evaluator: Any) -> Any:
    from rlanything_core.losses.policy import PolicyLoss

    o = cfg.optim
    return module_cls(
        policy,
        judge,
        policy_loss=PolicyLoss(
            clip_eps_low=float(o.clip_eps_low), clip_eps_high=float(o.clip_eps_high), kl_coef=float(o.kl_coef)
        ),
        judge_loss=judge_loss,
        policy_optimizer=partial(torch.optim.AdamW, lr=float(o.policy_lr), weight_decay=0.0),
        judge_optimizer=partial(torch.optim.AdamW, lr=float(o.judge_lr), weight_decay=0.0),
        policy_updates=int(o.policy_updates),
        judge_updates=int(o.judge_updates),
        micro_batch_tokens=int(o.micro_batch_tokens),
        max_grad_norm=float(o.max_grad_norm),
        sharding=_sharding(cfg),
        evaluator=evaluator,
        eval_every=int(cfg.eval.every),
        eval_at_start=bool(cfg.eval.at_start),
        # the judge's process accuracy between full evaluations: only where the judge learns (elsewhere it is fixed)
        judge_eval_every=int(cfg.eval.judge_every) if cfg.arm.train_judge else 0,
    )


def _run(cfg: DictConfig, run_dir: Path, module: Any, datamodule: Any) -> Run:
    from rlanything_core.lightning import IterationCheckpoint

    checkpoint = IterationCheckpoint(run_dir / "checkpoints")
    trainer = _trainer(cfg, run_dir, [checkpoint])
    resume_from = checkpoint.resume_from if bool(cfg.resume) else None  # a file, or a link to a sharded checkpoint
    return Run(module, datamodule, trainer, run_dir, checkpoint, resume_from)


def _coding_problems(cfg: DictConfig) -> tuple[list[Any], list[Any]]:
    """Training problems (stdin, sets interleaved, shortest statements first) and evaluation problems."""
    from rlanything_core.envs.coding.livecodebench import load_livebench
    from rlanything_core.envs.coding.loaders import load_codecontests, load_kickstart, load_leetcode

    st = cfg.setting
    root = coding_dir(cfg)
    loaders = {"kickstart": load_kickstart, "codecontests": load_codecontests}
    limit = int(st.max_statement_chars)
    per_set = [
        sorted(
            (p for p in loaders[str(n)](root / CODING_FILES[str(n)]) if len(p.prompt) <= limit),
            key=lambda p: (len(p.prompt), p.id),
        )
        for n in st.train_sets
    ]
    train = [p for group in zip(*per_set) for p in group] if per_set else []
    if st.train_problems is not None:
        train = train[: int(st.train_problems)]
    if str(st.eval_set) == "livebench" and st.livebench_file is not None:
        evals = load_livebench(str(st.livebench_file))
    else:
        evals = [p for p in load_leetcode(root / CODING_FILES["leetcode_lcb"]) if p.also_in_lcb_v5_window]
    return train, first(evals, st.eval_problems)


def _build_coding(cfg: DictConfig) -> Run:
    """The coding loop: programs from the policy, unit tests from the judge, problems rewritten by the judge's LM."""
    from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
    from rlanything_core.environment.llm import BackendChatModel
    from rlanything_core.environment.rewriters.coding import CodingRewriter
    from rlanything_core.envs.coding.task import CodingTask
    from rlanything_core.lightning import CodingModule, RolloutDataModule
    from rlanything_core.loop.adaptation import EnvironmentAdaptation
    from rlanything_core.loop.coding_driver import CodingLoopDriver, coding_spec
    from rlanything_core.loop.coding_evaluation import CodingEvalSplit, CodingEvaluator
    from rlanything_core.sandbox import Sandbox

    st = cfg.setting
    run_dir, policy, judge, tokenizer, pad_id = _prepare(cfg)
    policy_backend, judge_backend = rollout_backends(cfg, policy, judge, tokenizer)
    train, evals = _coding_problems(cfg)
    roots = [coding_spec(p, max_tests=int(st.gt_tests)) for p in train]
    pool = _pool(cfg, run_dir, roots)
    sandbox = Sandbox()
    workers = int(st.sandbox_workers)
    new_tokens = int(st.max_new_tokens)
    code_params = sampling(cfg, max_new_tokens=new_tokens, temperature=float(cfg.model.temperature))
    test_params = sampling(cfg, max_new_tokens=int(st.test_max_new_tokens), temperature=float(st.test_temperature))
    tests_k = int(st.tests_per_task)
    code_prefill, scaffold = str(st.code_prefill), bool(st.test_scaffold)  # how responses begin (collect/prefill.py)
    writer = (
        UnitTestCollector(judge_backend, tests_per_task=tests_k, sampling=test_params, scaffold=scaffold)
        if judge_backend
        else None
    )
    adaptation = None
    if cfg.arm.adapt_environment and judge_backend is not None:
        chat = BackendChatModel(judge_backend, max_new_tokens=int(st.rewriter_max_new_tokens))
        rewriter = CodingRewriter(
            chat_model=chat, roots={r.task_id: r for r in roots}, samples=int(st.rewriter_samples), seed=int(cfg.seed)
        )
        adaptation = EnvironmentAdaptation(rewriter, max_requests=int(cfg.max_rewrites_per_iteration))
    driver = CodingLoopDriver(
        coder=CodeCollector(
            policy_backend, samples_per_task=int(cfg.group_size), sampling=code_params, max_workers=workers,
            prefill=code_prefill,
        ),
        test_writer=writer,
        pool=pool,
        adaptation=adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=pad_id,
        train_judge=bool(cfg.arm.train_judge),
        policy_band=band(cfg, "policy_band"),
        sandbox=sandbox,
        max_workers=workers,
        format_without_reference=bool(st.test_format_without_reference),
    )
    eval_params = sampling(cfg, max_new_tokens=new_tokens, temperature=float(cfg.eval.temperature))
    eval_writer = (
        UnitTestCollector(
            judge_backend, tests_per_task=int(st.eval_tests_per_task), sampling=test_params, scaffold=scaffold
        )
        if judge_backend is not None
        else None
    )
    split_name = "livebench" if str(st.eval_set) == "livebench" else "lcb_v5"
    evaluator = CodingEvaluator(
        CodeCollector(
            policy_backend, samples_per_task=int(st.eval_samples), sampling=eval_params, max_workers=workers,
            prefill=code_prefill,
        ),
        [CodingEvalSplit(split_name, tuple(CodingTask(p, sandbox) for p in evals))],
        test_writer=eval_writer,
        seed=int(cfg.seed) + 4242,
        max_workers=workers,
    )
    module = _module(cfg, CodingModule, policy, judge, _judge_loss(cfg), evaluator)
    module.rollout_context = rollout_context(cfg, [(policy, policy_backend), (judge, judge_backend)])
    return _run(cfg, run_dir, module, RolloutDataModule(driver, iterations=int(cfg.iterations)))


def _textworld_spec(params: dict[str, Any]) -> Any:
    from rlanything_core.envs.textworld_games import TextWorldChallenge, TextWorldSpec

    return TextWorldSpec(
        challenge=TextWorldChallenge.CUSTOM,
        world_size=int(params["nb_rooms"]),
        nb_objects=int(params["nb_objects"]),
        quest_length=int(params["quest_length"]),
        seed=int(params["seed"]),
    )


def _env_task(task: Any) -> Any:
    """What an environment is built from: the game file (ALFWorld) or the generator spec (TextWorld)."""
    return task.data["game_file"] if task.kind == "alfworld" else _textworld_spec(task.data)


def _rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any) -> Any:
    if cfg.setting.name == "alfworld":
        from rlanything_core.environment.rewriters.alfworld_rules import AlfworldRuleRewriter

        if cfg.setting.rewriter == "rules":
            return AlfworldRuleRewriter(out_dir=run_dir / "candidates")
        from rlanything_core.environment.llm import BackendChatModel
        from rlanything_core.environment.rewriters.alfworld_llm import AlfworldLLMRewriter

        if judge_backend is None:
            raise ConfigError(
                "setting.rewriter", "the LLM rewriter uses the judge's model", "set setting.rewriter=rules"
            )
        return AlfworldLLMRewriter(
            chat_model=BackendChatModel(judge_backend), out_dir=run_dir / "candidates", seed=int(cfg.seed)
        )
    from rlanything_core.environment.rewriters.textworld import TextWorldRewriter

    return TextWorldRewriter()
