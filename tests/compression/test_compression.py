"""Compressors: payload sizes by hand count, error bounds, top-k choice, unbiased rounding,
error feedback through a checkpoint, bad parameters, conformance of every built-in."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sfl_sim.catalog import listing
from sfl_sim.compression import (
    COMPRESSORS,
    ErrorFeedback,
    Identity,
    Payload,
    Quantize,
    RandTopK,
    TopK,
    index_dtype,
    pack_bits,
    unpack_bits,
)
from sfl_sim.compression.conformance import ConformanceError, check_compressor
from sfl_sim.kit.registry import ComponentParameterError
from tests.helpers import doc_blocks

BUILT_INS = [("identity", {}), ("quantize", {}), ("quantize", {"bits": 1, "rounding": "stochastic"}),
             ("quantize", {"bits": 16, "scale": "per_channel"}), ("topk", {}), ("topk", {"fraction": 1.0}),
             ("topk", {"fraction": 0.3, "per_sample": True}), ("rand_topk", {}),
             ("rand_topk", {"fraction": 0.5, "alpha": 0.0}), ("rand_topk", {"per_sample": True})]


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


finite = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, width=32)


# ------------------------------------------------------------------------------------ identity
@given(st.lists(finite, min_size=0, max_size=64))
@settings(max_examples=50, deadline=None)
def test_identity_is_exact_and_costs_the_values_plus_the_header(values) -> None:
    x = torch.tensor(values, dtype=torch.float32)
    payload = Identity().encode(x)
    y = Identity().decode(payload)
    assert torch.equal(y, x) and y.dtype == x.dtype
    assert payload.size_bytes == x.nbytes + 4  # one int32 dimension in the header


def test_identity_keeps_float64_and_shapes() -> None:
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=_gen())
    payload = Identity().encode(x)
    assert torch.equal(Identity().decode(payload), x)
    assert payload.size_bytes == 24 * 8 + 3 * 4


# ---------------------------------------------------------------------------------- hand counts
@pytest.mark.parametrize("spec, shape, expected", [
    # 10 codes x 3 bits = 30 bits -> 4 bytes; one float32 scale; one int32 dimension
    ({"name": "quantize", "bits": 3}, (10,), 4 + 4 + 4),
    ({"name": "quantize", "bits": 3, "rounding": "stochastic"}, (10,), 4 + 4 + 4),
    # 9 codes x 1 bit -> 2 bytes
    ({"name": "quantize", "bits": 1}, (9,), 2 + 4 + 4),
    # 3 codes x 16 bits -> 6 bytes
    ({"name": "quantize", "bits": 16}, (3,), 6 + 4 + 4),
    # 8 codes x 8 bits -> 8 bytes; a (2, 4) header is 8 bytes
    ({"name": "quantize", "bits": 8}, (2, 4), 8 + 4 + 8),
    # per channel: 30 codes x 5 bits = 150 bits -> 19 bytes; 3 channel scales; 3 dimensions
    ({"name": "quantize", "bits": 5, "scale": "per_channel"}, (2, 3, 5), 19 + 3 * 4 + 3 * 4),
    # a vector has one scale even per channel
    ({"name": "quantize", "bits": 4, "scale": "per_channel"}, (7,), 4 + 4 + 4),
    # top 30 % of 10: 3 float32 values, 3 uint8 indices
    ({"name": "topk", "fraction": 0.3}, (10,), 3 * 4 + 3 * 1 + 4),
    ({"name": "rand_topk", "fraction": 0.3}, (10,), 3 * 4 + 3 * 1 + 4),
    # 300 entries need uint16 indices: 30 values, 30 indices
    ({"name": "topk", "fraction": 0.1}, (300,), 30 * 4 + 30 * 2 + 4),
    # 400 entries, ceil(0.05 * 400) = 20 kept, two dimensions
    ({"name": "rand_topk", "fraction": 0.05, "alpha": 0.5}, (20, 20), 20 * 4 + 20 * 2 + 8),
    # ceil(0.25 * 7) = 2 kept
    ({"name": "topk", "fraction": 0.25}, (7,), 2 * 4 + 2 * 1 + 4),
    ({"name": "identity"}, (10,), 40 + 4),
    # per sample: 3 rows of 200, 20 kept in each, indices within a row fit uint8
    ({"name": "topk", "fraction": 0.1, "per_sample": True}, (3, 200), 60 * 4 + 60 * 1 + 8),
    ({"name": "rand_topk", "fraction": 0.1, "per_sample": True}, (3, 10, 20), 60 * 4 + 60 * 1 + 12),
    # over the whole tensor the same 60 entries need uint16 indices
    ({"name": "topk", "fraction": 0.1}, (3, 200), 60 * 4 + 60 * 2 + 8),
    # per sample with ceil: ceil(0.25 * 7) = 2 in each of 2 rows
    ({"name": "topk", "fraction": 0.25, "per_sample": True}, (2, 7), 4 * 4 + 4 * 1 + 8),
])
def test_payload_size_equals_a_hand_count(spec, shape, expected) -> None:
    comp = COMPRESSORS.build(spec["name"], **{k: v for k, v in spec.items() if k != "name"})
    x = torch.randn(shape, generator=_gen(3))
    payload = comp.encode(x, _gen(4))
    assert payload.size_bytes == expected
    assert payload.size_bytes == sum(b.nbytes for b in payload.buffers.values())
    assert comp.decode(payload).shape == x.shape


def test_index_width_is_the_narrowest_that_holds_the_largest_index() -> None:
    assert [index_dtype(n) for n in (1, 256, 257, 65536, 65537)] == \
        [torch.uint8, torch.uint8, torch.uint16, torch.uint16, torch.uint32]
    assert index_dtype(2 ** 32 + 1) == torch.int64


@given(st.integers(1, 16), st.data())
@settings(max_examples=60, deadline=None)
def test_bits_pack_into_ceil_n_bits_over_8_bytes_and_unpack_exactly(bits, data) -> None:
    codes = data.draw(st.lists(st.integers(0, 2 ** bits - 1), max_size=50))
    q = torch.tensor(codes, dtype=torch.int64)
    packed = pack_bits(q, bits)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(len(codes) * bits / 8)
    assert torch.equal(unpack_bits(packed, bits, len(codes)), q)


# ------------------------------------------------------------------------------------- quantize
def _levels(x: torch.Tensor, bits: int, per_channel: bool) -> torch.Tensor:
    """``s`` broadcast against ``x``."""
    if per_channel and x.dim() >= 2:
        s = x.abs().transpose(0, 1).reshape(x.shape[1], -1).amax(dim=1)
        return s.reshape([1, -1] + [1] * (x.dim() - 2)).expand_as(x)
    return x.abs().amax().expand_as(x)


@given(st.integers(1, 16), st.sampled_from(["per_tensor", "per_channel"]),
       st.sampled_from([(40,), (3, 5), (2, 3, 2, 2)]), st.integers(0, 2 ** 31 - 1))
@settings(max_examples=80, deadline=None)
def test_quantize_error_is_within_half_a_step(bits, scale, shape, seed) -> None:
    """Deterministic rounding: |x - x^| <= step / 2 = s / (2**bits - 1), s = max |x| (per channel when
    asked), which is <= scale / 2**bits for the full range scale = 2 s; plus the float32 rounding
    of the decoded value (at most s * 2**-24, allowed as s * 2**-22)."""
    x = torch.randn(shape, generator=_gen(seed)) * 5
    comp = Quantize(bits=bits, scale=scale)
    err = (comp.decode(comp.encode(x)) - x).abs().to(torch.float64)
    s = _levels(x, bits, scale == "per_channel").to(torch.float64)
    slack = s * 2.0 ** -22
    assert bool((err <= s / (2 ** bits - 1) + slack).all())
    assert bool((err <= 2 * s / 2 ** bits + slack).all())


@given(st.integers(1, 16), st.integers(0, 2 ** 31 - 1))
@settings(max_examples=40, deadline=None)
def test_stochastic_quantize_error_is_below_one_step(bits, seed) -> None:
    x = torch.randn(50, generator=_gen(seed))
    comp = Quantize(bits=bits, rounding="stochastic")
    err = (comp.decode(comp.encode(x, _gen(seed + 1))) - x).abs().to(torch.float64)
    s = float(x.abs().max())
    assert bool((err <= 2 * s / (2 ** bits - 1) + s * 2.0 ** -22).all())


def test_quantize_keeps_the_extremes_and_an_all_zero_tensor_exact_but_not_a_zero_entry() -> None:
    x = torch.tensor([-2.0, 0.0, 2.0, 0.7])
    y = Quantize(bits=1).decode(Quantize(bits=1).encode(x))
    assert y[0] == -2.0 and y[2] == 2.0
    y = Quantize(bits=8).decode(Quantize(bits=8).encode(torch.zeros(5)))
    assert torch.equal(y, torch.zeros(5))
    # 0 is not a level: the levels are symmetric about it, so a zero entry decodes to half a step
    y = Quantize(bits=2).decode(Quantize(bits=2).encode(torch.tensor([-3.0, 0.0, 3.0])))
    assert y.tolist() == [-3.0, 1.0, 3.0]


def test_quantize_bound_holds_for_float64_whose_max_is_not_a_float32() -> None:
    """The float32 scale is rounded up, so the largest float64 entry is not clamped past the bound."""
    x = torch.tensor([1.0 + 2.0 ** -40, -0.3, 0.123456789], dtype=torch.float64)
    comp = Quantize(bits=16)
    payload = comp.encode(x)
    s = float(payload.buffers["scales"][0])
    assert s >= float(x.abs().max())
    y = comp.decode(payload)
    assert y.dtype == torch.float64
    assert float((y - x).abs().max()) <= s / (2 ** 16 - 1) * (1 + 1e-9)


@pytest.mark.parametrize("shape", [(3, 0), (0, 2, 2), (4, 1, 3), (5, 2)])
def test_per_channel_quantize_handles_empty_and_single_channels(shape) -> None:
    x = torch.randn(shape, generator=_gen(0))
    comp = Quantize(bits=6, scale="per_channel")
    payload = comp.encode(x)
    assert payload.buffers["scales"].numel() == shape[1]
    assert comp.decode(payload).shape == x.shape


def test_stochastic_rounding_is_unbiased() -> None:
    """2 bits on [-1, 1] (step 2/3); each value is drawn N = 20 000 times.  One draw is one of two
    levels a step apart, so its standard deviation is at most step / 2 and the mean's at most
    step / (2 sqrt N) = 0.0024; the tolerance is 5 of those (a false failure has probability
    < 1e-6).  Nearest rounding misses 0.3 by 0.033 and -0.77 by 0.23, far outside it."""
    values = torch.tensor([1.0, 0.3, -0.77, 0.05, -0.5])
    n = 20_000
    x = values.repeat(n)
    comp = Quantize(bits=2, rounding="stochastic")
    means = comp.decode(comp.encode(x, _gen(7))).reshape(n, -1).to(torch.float64).mean(dim=0)
    step = 2.0 / 3.0
    tol = 5 * step / (2 * math.sqrt(n))
    assert torch.allclose(means, values.to(torch.float64), atol=tol, rtol=0), (means, tol)
    nearest = Quantize(bits=2)
    biased = nearest.decode(nearest.encode(x)).reshape(n, -1).to(torch.float64).mean(dim=0)
    assert (biased - values.to(torch.float64)).abs().max() > tol  # the test can tell the two apart


def test_stochastic_rounding_draws_only_from_the_generator_given() -> None:
    x = torch.randn(100, generator=_gen())
    comp = Quantize(bits=3, rounding="stochastic")
    torch.manual_seed(0)
    a = comp.encode(x, _gen(5)).buffers["codes"]
    state = torch.get_rng_state()
    b = comp.encode(x, _gen(5)).buffers["codes"]
    assert torch.equal(a, b) and torch.equal(state, torch.get_rng_state())
    assert not torch.equal(a, comp.encode(x, _gen(6)).buffers["codes"])


@pytest.mark.parametrize("comp", [Quantize(rounding="stochastic"), RandTopK()])
def test_a_compressor_that_draws_refuses_to_run_without_a_generator(comp) -> None:
    with pytest.raises(ValueError, match=r"^generator: got None; allowed: a seeded torch.Generator"):
        comp.encode(torch.randn(4))


# ------------------------------------------------------------------------------------- sparsity
@given(st.lists(finite, min_size=1, max_size=80), st.floats(0.01, 1.0))
@settings(max_examples=80, deadline=None)
def test_topk_keeps_exactly_the_k_largest_magnitudes(values, fraction) -> None:
    x = torch.tensor(values, dtype=torch.float32)
    comp = TopK(fraction=fraction)
    payload = comp.encode(x)
    k = min(len(values), math.ceil(round(fraction * len(values), 9)))
    idx = payload.buffers["indices"].to(torch.int64)
    assert idx.numel() == k == len(set(idx.tolist()))
    assert torch.equal(payload.buffers["values"], x[idx])
    dropped = torch.ones(len(values), dtype=torch.bool)
    dropped[idx] = False
    if dropped.any():
        assert x[idx].abs().min() >= x[dropped].abs().max()
    y = comp.decode(payload)
    assert torch.equal(y[idx], x[idx]) and bool((y[dropped] == 0).all())


@given(st.integers(1, 5), st.integers(1, 30), st.floats(0.01, 1.0), st.integers(0, 2 ** 31 - 1))
@settings(max_examples=60, deadline=None)
def test_per_sample_sparsifiers_keep_k_entries_of_every_sample(n_rows, m, fraction, seed) -> None:
    x = torch.randn(n_rows, m, generator=_gen(seed))
    k = min(m, math.ceil(round(fraction * m, 9)))
    for comp in (TopK(fraction, per_sample=True), RandTopK(fraction, alpha=0.3, per_sample=True)):
        y = comp.decode(comp.encode(x, _gen(seed + 1)))
        kept = y != 0
        assert kept.sum(dim=1).tolist() == [k] * n_rows  # randn has no exact zeros
        assert torch.equal(y[kept], x[kept])
        if isinstance(comp, TopK) and k < m:
            assert bool((x.abs()[kept].reshape(n_rows, k).amin(dim=1)
                         >= x.abs().masked_fill(kept, -1).amax(dim=1)).all())


def _top_hits_distribution(n: int, k: int, alpha: float) -> np.ndarray:
    """P(h of the k kept entries are top-k ones) under the paper's weights, drawn without
    replacement: each draw picks a top entry with probability (remaining top weight) / (remaining
    weight), the top entries weighing (1 - alpha) / k each and the others alpha / (n - k)."""
    w_top, w_rest = (1 - alpha) / k, alpha / (n - k)
    dist = np.zeros(k + 1)
    dist[0] = 1.0
    for draw in range(k):
        nxt = np.zeros(k + 1)
        for h in range(draw + 1):
            top_left, rest_left = k - h, n - k - (draw - h)
            p_top = top_left * w_top / (top_left * w_top + rest_left * w_rest)
            nxt[h + 1] += dist[h] * p_top
            nxt[h] += dist[h] * (1 - p_top)
        dist = nxt
    return dist


def test_rand_topk_keeps_k_entries_drawn_with_the_papers_weights() -> None:
    """k = 20 of 200 entries, alpha = 0.1, 400 encodes: the mean number of top-k entries kept
    equals its exact expectation (a recursion over the draws, about 16.4, below (1 - alpha) k
    because drawing without replacement depletes the top entries) within 5 standard errors."""
    x = torch.randn(200, generator=_gen(1))
    top = set(torch.topk(x.abs(), 20).indices.tolist())
    comp = RandTopK(fraction=0.1, alpha=0.1)
    gen = _gen(2)
    hits = []
    for _ in range(400):
        payload = comp.encode(x, gen)
        idx = payload.buffers["indices"].to(torch.int64)
        assert idx.numel() == 20 == len(set(idx.tolist()))
        assert torch.equal(payload.buffers["values"], x[idx])
        hits.append(sum(i in top for i in idx.tolist()))
    dist = _top_hits_distribution(200, 20, 0.1)
    h = np.arange(21)
    mean = float((dist * h).sum())
    sd = math.sqrt(float((dist * h ** 2).sum()) - mean ** 2)
    assert abs(np.mean(hits) - mean) < 5 * sd / math.sqrt(len(hits)), (np.mean(hits), mean, sd)
    assert torch.equal(RandTopK(0.1, alpha=0.0).encode(x, _gen(3)).buffers["indices"],
                       TopK(0.1).encode(x).buffers["indices"])


# ------------------------------------------------------------------------------- error feedback
def test_error_feedback_residual_round_trips_through_a_checkpoint_exactly() -> None:
    ef = ErrorFeedback(TopK(fraction=0.2))
    gen = _gen(0)
    for _ in range(3):
        for client in (0, 3):
            ef.encode(client, torch.randn(4, 5, generator=gen))
    blob = io.BytesIO()
    torch.save(ef.state_dict(), blob)
    blob.seek(0)
    resumed = ErrorFeedback(TopK(fraction=0.2))
    resumed.load_state_dict(torch.load(blob, weights_only=True))
    for client in (0, 3):
        assert torch.equal(resumed.residual(client), ef.residual(client))
    nxt = torch.randn(4, 5, generator=gen)
    a, da = ef.encode(3, nxt)
    b, db = resumed.encode(3, nxt)
    assert torch.equal(da, db) and torch.equal(ef.residual(3), resumed.residual(3))


def test_error_feedback_makes_the_decoded_sum_track_the_input_sum() -> None:
    """With feedback, sum(decoded) = sum(inputs) - last residual; without, the dropped mass piles up."""
    comp = TopK(fraction=0.1)
    ef = ErrorFeedback(comp)
    gen = _gen(9)
    inputs = [torch.randn(50, generator=gen) + 0.5 for _ in range(40)]
    fed = sum(ef.encode(7, x)[1] for x in inputs)
    plain = sum(comp.decode(comp.encode(x)) for x in inputs)
    total = sum(inputs)
    assert torch.allclose(fed + ef.residual(7), total, atol=1e-4)
    assert (fed - total).norm() < 0.25 * (plain - total).norm()


def test_error_feedback_refuses_a_tensor_of_another_shape() -> None:
    ef = ErrorFeedback(Quantize(bits=2))
    ef.encode(0, torch.randn(3))
    with pytest.raises(ValueError, match=r"^tensor: shape \(4,\) of client 0 differs from its residual's \(3,\)"):
        ef.encode(0, torch.randn(4))


# ----------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name, params, field", [
    ("quantize", {"bits": 0}, "bits"), ("quantize", {"bits": 17}, "bits"),
    ("quantize", {"bits": 4.5}, "bits"), ("quantize", {"rounding": "up"}, "rounding"),
    ("quantize", {"scale": "per_row"}, "scale"), ("topk", {"fraction": 0}, "fraction"),
    ("topk", {"fraction": 1.5}, "fraction"), ("rand_topk", {"fraction": 0.0}, "fraction"),
    ("rand_topk", {"alpha": 1.0}, "alpha"), ("rand_topk", {"fraction": float("nan")}, "fraction"),
])
def test_a_bad_parameter_is_one_line_naming_the_field(name, params, field) -> None:
    with pytest.raises(ComponentParameterError) as info:
        COMPRESSORS.build(name, **params)
    message = str(info.value)
    assert "\n" not in message and f"{field}: got" in message and "allowed" in message
    with pytest.raises(ValueError) as direct:  # a direct Python call is checked by the same model
        COMPRESSORS.get(name)(**params)
    assert str(direct.value).startswith(f"{field}: got")


def test_an_unknown_parameter_and_bad_tensors_are_one_line() -> None:
    with pytest.raises(ComponentParameterError, match="unknown 'bit' \\(did you mean 'bits'\\?\\)"):
        COMPRESSORS.build("quantize", bit=4)
    with pytest.raises(ValueError, match=r"^tensor: holds NaN or infinite values"):
        TopK().encode(torch.tensor([1.0, float("inf")]))
    with pytest.raises(TypeError, match=r"^tensor: got Tensor of torch.int64"):
        Identity().encode(torch.arange(3))


# ---------------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("name, params", BUILT_INS, ids=[f"{n}{p}" for n, p in BUILT_INS])
def test_every_built_in_passes_the_conformance_check(name, params) -> None:
    report = check_compressor(name, **params)
    assert report["checks"] == ["protocol", "builds", "encodes", "input kept", "plain payload", "size counted",
                                "decodes", "same seed", "constant"]


class _NoDecode:
    def encode(self, tensor, generator=None):
        return Identity().encode(tensor)


class _Scribbler(Identity):
    def encode(self, tensor, generator=None):
        tensor.mul_(0.5)  # in place: the caller's tensor is changed
        return super().encode(tensor)


class _Unseeded(Identity):
    def encode(self, tensor, generator=None):
        return super().encode(tensor + torch.rand(tensor.shape))  # global RNG, not the generator


class _NoHeader(Identity):
    def encode(self, tensor, generator=None):
        return Payload({"values": tensor.clone().reshape(-1)}, tensor.dtype)


@pytest.mark.parametrize("cls, check", [(_NoDecode, "protocol"), (_Scribbler, "input kept"),
                                        (_Unseeded, "same seed"), (_NoHeader, "size counted")])
def test_the_conformance_check_names_the_failing_check(cls, check) -> None:
    with pytest.raises(ConformanceError) as info:
        check_compressor(cls)
    assert f"fails check '{check}'" in str(info.value) and "\n" not in str(info.value)


def test_sfl_sim_list_shows_the_compressors() -> None:
    text = listing("compressors")
    assert text.startswith("compressor (4)")
    for name in ("identity", "quantize", "topk", "rand_topk"):
        assert f"  {name}" in text
    assert "bits=8, rounding='deterministic', scale='per_tensor'" in text


def test_a_compressor_of_ones_own_is_found_by_import_path() -> None:
    comp = COMPRESSORS.build("sfl_sim.compression:TopK", fraction=0.5)
    assert isinstance(comp, TopK) and comp.params.fraction == 0.5
    assert np.isclose(COMPRESSORS.build("quantize", bits=4).encode(torch.ones(8)).size_bytes, 4 + 4 + 4)


def test_readme_compressor_example_runs_and_its_hand_count_holds() -> None:
    (code,) = doc_blocks("concepts/compression.md", "python")
    x = torch.randn(10, generator=_gen(0))
    scope = {"x": x, "generator": _gen(1)}
    exec(code, scope)  # noqa: S102 - the documentation's own example
    assert scope["y"].shape == x.shape
    assert scope["payload"].size_bytes == math.ceil(10 * 4 / 8) + 4 + 4  # 4-bit codes, scale, header
    twelve = COMPRESSORS.build("quantize", bits=3).encode(x)
    assert twelve.size_bytes == 12  # "10 values at 3 bits cost ... 12 bytes"


def test_build_compressor_takes_the_scenario_form() -> None:
    from sfl_sim.compression import build_compressor

    assert isinstance(build_compressor({"name": "quantize", "bits": 4}), Quantize)
    assert isinstance(build_compressor("identity"), Identity)
    with pytest.raises(ComponentParameterError, match="fraction: got 2"):
        build_compressor({"name": "topk", "fraction": 2.0})


def test_each_built_in_lives_in_its_own_module_and_the_package_names_it() -> None:
    import sfl_sim.compression as package

    for name, cls in (("identity", Identity), ("quantize", Quantize), ("topk", TopK), ("rand_topk", RandTopK)):
        assert COMPRESSORS.get(name) is cls
        assert cls.encode.__code__.co_filename.endswith(f"/sfl_sim/compression/{name}.py")
        assert cls.__module__ == "sfl_sim.compression"  # the class path resolved.yaml records
    for public in package.__all__:  # the names the documentation names import from the package
        assert getattr(package, public) is not None
    assert ErrorFeedback.__module__ == "sfl_sim.compression.error_feedback"


def test_codec_modules_import_no_private_name_of_another() -> None:
    import ast
    from pathlib import Path

    import sfl_sim.compression as package

    private = []
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sfl_sim."):
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not private
