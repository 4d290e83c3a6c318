import pytest
import torch

from rlanything_core.models.tiny import TINY_SPECIAL_TOKENS, TokenizerKind, tiny_causal_lm, tiny_model_and_tokenizer


def test_tiny_model_is_deterministic_per_seed_and_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = tiny_causal_lm(100, seed=0)
    assert torch.equal(torch.rand(3), expected)
    b, c = tiny_causal_lm(100, seed=0), tiny_causal_lm(100, seed=1)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)
    assert a.config.vocab_size == 100 and a.config.num_hidden_layers == 2 and a.config.hidden_size == 64


@pytest.mark.parametrize(("kwargs", "name"), [({"hidden": 30}, "hidden"), ({"kv_heads": 3}, "kv_heads"),
                                               ({"layers": 0}, "layers")])
def test_tiny_model_validates(kwargs: dict[str, int], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        tiny_causal_lm(100, **kwargs)


def test_tiny_tokenizer_roundtrips_and_renders_chatml() -> None:
    model, tok = tiny_model_and_tokenizer()
    assert len(tok) == 259 == model.config.vocab_size
    assert tok.convert_tokens_to_ids(list(TINY_SPECIAL_TOKENS)) == [256, 257, 258]
    text = "héllo wörld ✓ \n\t"
    assert tok.decode(tok(text)["input_ids"]) == text
    ids = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert ids == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert model.config.eos_token_id == tok.eos_token_id == 258 and tok.padding_side == "left"


@pytest.mark.smollm2
@pytest.mark.slow
def test_tiny_model_with_the_smollm2_tokenizer() -> None:
    model, tok = tiny_model_and_tokenizer(TokenizerKind.SMOLLM2)
    assert model.config.vocab_size == len(tok) == 49_152
    assert model(torch.tensor([[1, 2, 3]])).logits.shape == (1, 3, 49_152)
