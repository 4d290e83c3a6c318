import pytest
import torch

from rlanything_core.generation.sampling import inverse_cdf, row_generators, sample_next, sampling_probs


def draw_counts(logits: torch.Tensor, draws: int, *, top_p: float = 1.0) -> torch.Tensor:
    """Token counts over ``draws`` calls of `sample_next` on every row of ``logits`` (rows share the distribution)."""
    generators = row_generators(0, range(logits.shape[0]))
    counts = torch.zeros(logits.shape[-1])
    for _ in range(draws):
        counts += torch.bincount(
            sample_next(logits, temperature=1.0, top_p=top_p, generators=generators), minlength=logits.shape[-1]
        )
    return counts


@pytest.mark.parametrize("vocab", [7, 256, 700])  # within one block, exactly one block, several with padding
def test_draws_follow_the_sampling_distribution(vocab: int) -> None:
    torch.manual_seed(0)
    row = torch.randn(vocab) * 2
    row[-1] = row.max() + 1  # mass on the very last token (the padded block's edge)
    logits = row.expand(64, vocab)
    counts = draw_counts(logits, 200)
    expected = sampling_probs(logits[:1], temperature=1.0)[0] * counts.sum()
    # each count within 5 standard deviations of its binomial expectation
    assert torch.all((counts - expected).abs() <= 5 * expected.sqrt() + 2)


def test_top_p_cut_tokens_are_never_drawn() -> None:
    logits = torch.tensor([[3.0, -1.0, 2.0, -2.0, 0.0] * 60]).expand(16, 300)
    probs = sampling_probs(logits[:1], temperature=1.0, top_p=0.8)[0]
    counts = draw_counts(logits, 300, top_p=0.8)
    assert counts[probs == 0].sum() == 0 and counts[probs > 0].min() > 0


def test_draws_do_not_depend_on_the_other_rows() -> None:
    torch.manual_seed(1)
    logits = torch.randn(6, 1000)
    together = sample_next(logits, temperature=0.9, top_p=0.95, generators=row_generators(3, range(6)))
    alone = [sample_next(logits[i : i + 1], temperature=0.9, top_p=0.95, generators=row_generators(3, [i]))
             for i in range(6)]
    assert together.tolist() == torch.cat(alone).tolist()


def reference_inverse_cdf(weights: list[float], uniform: float) -> int:
    """Plain Python: the first token whose float64 running sum exceeds ``uniform * total``."""
    target, running = uniform * sum(weights), 0.0
    for token, weight in enumerate(weights):
        running += weight
        if running > target:
            return token
    raise AssertionError("unreachable for uniform < 1")


@pytest.mark.parametrize("vocab", [5, 256, 1000])
def test_inverse_cdf_matches_a_plain_python_search(vocab: int) -> None:
    gen = torch.Generator().manual_seed(vocab)
    probs = torch.rand(32, vocab, generator=gen) ** 4
    probs[probs < 0.05] = 0.0  # zero-weight tokens (as after a top-p cut)
    probs[:, 0] += 0.1  # every row has mass
    uniforms = torch.rand(32, generator=gen, dtype=torch.float64)
    got = inverse_cdf(probs, uniforms).tolist()
    assert got == [reference_inverse_cdf(probs[i].double().tolist(), float(uniforms[i])) for i in range(32)]


def test_inverse_cdf_extreme_uniforms_land_on_positive_weights() -> None:
    probs = torch.zeros(2, 700)
    probs[:, 300:302] = torch.tensor([0.25, 0.75])  # mass only inside the second block; zeros before and after
    probs[1, 699] = 1e-12  # a tiny last token, alone in the last block: the very end of the mass
    lowest, highest = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.full((2,), 1 - 2**-53, dtype=torch.float64)
    assert inverse_cdf(probs, lowest).tolist() == [300, 300]
    assert inverse_cdf(probs, highest).tolist() == [301, 699]


def test_inverse_cdf_checks_shapes() -> None:
    with pytest.raises(ValueError, match="uniforms"):
        inverse_cdf(torch.ones(3, 4), torch.zeros(2, dtype=torch.float64))


def test_sampling_stays_on_the_logits_device() -> None:
    # the meta device stands for a GPU here: copying its (B, V) probabilities to the host would raise
    logits = torch.randn(3, 1000, device="meta")
    out = sample_next(logits, temperature=1.0, top_p=0.95, generators=row_generators(0, range(3)))
    assert out.device.type == "meta" and out.shape == (3,) and out.dtype == torch.int64
