"""The tiny LLaMA, its hand-written backward pass, the trainer and the record world."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cacheblend.model import (
    WEIGHTS,
    Config,
    Model,
    causal_mask,
    document_kv,
    forward,
    init_params,
    load_model,
    rope,
    save_model,
)
from kvviz.cacheblend.record_world import (
    N_RECORDS,
    QUERY,
    VALUE0,
    chunk_starts,
    cut_records,
    sample_documents,
    token_text,
    training_batch,
    with_questions,
)
from kvviz.cacheblend.train import Recipe, loss_and_grads, main, train
from kvviz.common.errors import InputError

SMALL = Config(d_model=16, n_layers=2, n_heads=2, d_ff=24)


def _perturbed(config: Config, seed: int = 3) -> Model:
    """Random float64 weights large enough that every path carries gradient."""
    rng = np.random.default_rng(seed)
    params = {k: v.astype(np.float64) + rng.normal(0, 0.3, v.shape) for k, v in init_params(config, seed).items()}
    return Model(config, params)


def test_backward_matches_finite_differences():
    model = _perturbed(SMALL)
    tokens, targets = training_batch(np.random.default_rng(1), 4, 2, n_records=4)
    _, grads, _ = loss_and_grads(model, tokens, targets)
    rng = np.random.default_rng(0)
    worst = 0.0
    for name, value in model.params.items():
        for _ in range(4):
            idx = tuple(int(rng.integers(0, s)) for s in value.shape)
            old, eps = value[idx], 1e-6
            value[idx] = old + eps
            up = loss_and_grads(model, tokens, targets)[0]
            value[idx] = old - eps
            down = loss_and_grads(model, tokens, targets)[0]
            value[idx] = old
            numeric = (up - down) / (2 * eps)
            worst = max(worst, abs(numeric - grads[name][idx]) / max(1e-7, abs(numeric) + abs(grads[name][idx])))
    assert worst < 1e-5, worst


def test_forward_is_causal_and_records_every_layer():
    model = Model(Config(), init_params(Config(), 0))
    tokens = sample_documents(2, 0).tokens
    run = forward(model, tokens, record=True)
    assert run.logits.shape == (2, 24, model.config.vocab)
    assert len(run.layers) == 4 and run.layers[0].attn.shape == (2, 4, 24, 24)
    np.testing.assert_allclose(run.layers[0].attn.sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.triu(run.layers[2].attn[0, 0], 1) == 0)
    changed = tokens.copy()
    changed[:, 10] = QUERY
    later = forward(model, changed).logits
    np.testing.assert_array_equal(later[:, :10], run.logits[:, :10])
    assert not np.allclose(later[:, 10:], run.logits[:, 10:])


def test_document_kv_shape_and_values():
    model = Model(Config(), init_params(Config(), 0))
    tokens = sample_documents(1, 4).tokens[0]
    kv = document_kv(model, tokens)
    assert kv.shape == (4, 2, 24, 64) and kv.dtype == np.float32
    run = forward(model, tokens[None], record=True)
    np.testing.assert_array_equal(kv[1, 1, 5], run.layers[1].v[0, :, 5].reshape(-1))


@settings(max_examples=30)
@given(p=st.integers(-50, 50), s=st.integers(-50, 50), seed=st.integers(0, 1000))
def test_rope_rotations_compose_and_keep_relative_scores(p, s, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 1, 1, 1, 16))
    np.testing.assert_allclose(rope(rope(k, [p], 1e4), [s], 1e4), rope(k, [p + s], 1e4), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(rope(k, [p], 1e4)), np.linalg.norm(k))
    score = np.sum(rope(q, [p + 7], 1e4) * rope(k, [p], 1e4))
    np.testing.assert_allclose(score, np.sum(rope(q, [s + 7], 1e4) * rope(k, [s], 1e4)), atol=1e-9)


def test_causal_mask_for_queries_at_the_end():
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]


def test_short_training_lowers_the_loss():
    model = train(Recipe(steps=150, batch=16, lr=3e-3, warmup=20, seed=1), config=SMALL, log=lambda _: None)
    assert model.loss.shape == (150,)
    assert model.loss[-20:].mean() < model.loss[:20].mean() - 0.4


@pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")
def test_the_shipped_weights_come_from_the_default_recipe():
    """``python -m kvviz.cacheblend.train`` with no options retrains what ships: the weights record
    their recipe, and it is the trainer's default; the loss curve has one value per step."""
    model = load_model()
    assert Recipe(**model.info["recipe"]) == Recipe()  # a setting added later takes its default
    assert model.loss.shape == (Recipe().steps,)


def test_torch_init_draws_pytorch_defaults():
    """``init="torch"``: every matrix uniform in ±1/sqrt(fan_in) (output projections unscaled),
    N(0, 1) embeddings, unit gains; the default fan-in draw is untouched by the option."""
    config = Config()
    params = init_params(config, 0, "torch")
    fan_in = {"wq": 64, "wk": 64, "wv": 64, "wo": 64, "w_gate": 64, "w_up": 64, "w_down": 128}
    for name, fan in fan_in.items():
        w, bound = params[f"l1.{name}"], 1 / np.sqrt(fan)
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound, name
        np.testing.assert_allclose(w.std(), bound / np.sqrt(3), rtol=0.05)
    assert np.abs(params["head"]).max() <= 1 / 8
    np.testing.assert_allclose(params["embed"].std(), 1.0, rtol=0.05)
    assert np.all(params["l0.attn_norm"] == 1) and np.all(params["final_norm"] == 1)
    fan_in_draw = init_params(config, 0)
    assert fan_in_draw["l1.wo"].std() < 0.5 / 8  # normal std 1/8, divided by sqrt(2·4)
    assert np.array_equal(init_params(config, 0, "fan_in")["embed"], fan_in_draw["embed"])


def test_training_records_the_init_and_beta2_it_used():
    recipe = Recipe(steps=2, batch=2, init="torch", beta2=0.999, seed=1)
    model = train(recipe, config=SMALL, log=lambda _: None)
    assert Recipe(**model.info["recipe"]) == recipe
    default = train(Recipe(steps=2, batch=2, seed=1), config=SMALL, log=lambda _: None)
    assert not np.allclose(model.params["l0.wq"], default.params["l0.wq"])


def test_trainer_refuses_an_unknown_init(capsys):
    assert main(["--init", "xavier"]) == 2
    assert "--init must be one of fan_in, torch" in capsys.readouterr().err


def test_trainer_refuses_an_unknown_question_draw(capsys):
    assert main(["--questions", "twice"]) == 2
    assert "--questions must be one of distinct, independent" in capsys.readouterr().err


def test_save_and_load_round_trip(tmp_path):
    model = Model(SMALL, init_params(SMALL, 2), {"note": "x"}, np.arange(3, dtype=np.float32))
    save_model(model, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.config == SMALL and back.info == {"note": "x"}
    for name, value in model.params.items():
        np.testing.assert_array_equal(back.params[name], value)


def test_missing_or_corrupt_weights_say_how_to_retrain(tmp_path):
    with pytest.raises(InputError, match="missing.*python -m kvviz.cacheblend.train"):
        load_model(tmp_path / "nope.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip file at all")
    with pytest.raises(InputError, match="corrupt.*python -m kvviz.cacheblend.train"):
        load_model(tmp_path / "bad.npz")
    model = Model(SMALL, init_params(SMALL, 2))
    model.params["l0.wq"] = np.zeros((3, 3), dtype=np.float32)
    save_model(model, tmp_path / "shape.npz")
    with pytest.raises(InputError, match="bad 'l0.wq'"):
        load_model(tmp_path / "shape.npz")


def test_documents_have_fresh_distinct_records():
    docs = sample_documents(50, 9)
    assert docs.tokens.shape == (50, 24)
    for row in range(docs.n):
        assert len(set(docs.keys[row])) == N_RECORDS and len(set(docs.values[row])) == N_RECORDS
    np.testing.assert_array_equal(docs.tokens[:, 1::2], docs.values)
    assert not np.array_equal(docs.keys[0], docs.keys[1])


def test_questions_follow_the_document():
    docs = sample_documents(2, 0)
    tokens, answer_at, answers = with_questions(docs, np.array([[3, 0], [1, 2]]))
    assert tokens.shape == (2, 24 + 5) and answer_at.tolist() == [25, 28]
    assert tokens[0, 24] == QUERY and tokens[0, 25] == docs.keys[0, 3] and tokens[0, 26] == docs.values[0, 3]
    assert answers[1].tolist() == [docs.values[1, 1], docs.values[1, 2]]


@pytest.mark.parametrize("distinct", [True, False])
def test_training_questions_ask_the_documents_records(distinct):
    """Every answer target is the value the document gives the asked key; distinct questions
    ask each record at most once, independent ones may ask a record twice."""
    tokens, targets = training_batch(
        np.random.default_rng(5), 64, 4, n_records=4, repeat_share=0.0, distinct_questions=distinct
    )
    answer_at = 8 + 1 + 3 * np.arange(4)
    asked = tokens[:, answer_at]
    for row in range(64):
        value_of = dict(zip(tokens[row, 0:8:2].tolist(), tokens[row, 1:8:2].tolist()))
        assert targets[row, answer_at].tolist() == [value_of[k] for k in asked[row].tolist()]
    assert np.all(targets[:, :8] == -1) and np.sum(targets >= 0) == 64 * 4
    twice = [len(set(row)) < 4 for row in asked.tolist()]
    assert not any(twice) if distinct else any(twice)


def test_cut_records_match_the_lecture():
    # chunk 5: values at positions 5 and 15 start a chunk -> records 2 and 7 (exercise: two cut)
    assert np.flatnonzero(cut_records(12, 5)).tolist() == [2, 7]
    assert np.flatnonzero(cut_records(12, 3)).tolist() == [1, 4, 7, 10]
    assert not cut_records(12, 6).any()  # exercise 6: even lengths cut nothing
    assert chunk_starts(24, 5).tolist() == [0, 5, 10, 15, 20]
    with pytest.raises(InputError, match="chunk length"):
        cut_records(12, 0)


@settings(max_examples=40)
@given(chunk_len=st.integers(1, 30))
def test_a_record_is_cut_exactly_when_its_value_starts_a_chunk(chunk_len):
    cut = cut_records(12, chunk_len)
    starts = set(chunk_starts(24, chunk_len).tolist())
    assert [2 * i + 1 in starts for i in range(12)] == cut.tolist()
    if chunk_len % 2 == 0:
        assert not cut.any()


def test_token_text():
    assert token_text(QUERY) == "?" and token_text(1) == "A" and token_text(VALUE0 + 17) == "17"
