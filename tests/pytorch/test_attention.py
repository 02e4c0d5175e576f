"""PyTorch's own attention kernels on the device under test: the flash and
memory-efficient kernels of scaled_dot_product_attention (the default path
on a compute capability 8.0 device, built on cp.async, ldmatrix and
mma.sync), forward and backward, against the math path on PyTorch's CPU;
SDPA with no backend chosen; nn.MultiheadAttention's fast path and
nn.TransformerEncoderLayer in training and evaluation."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from conftest import CPU, DEV, randn, skip_bf16_if_unsupported, synchronize

# Inputs are rounded once to the dtype on the CPU; the reference runs in
# float32 from the same values. The kernels accumulate in float32 and round
# their outputs (and, for the backward pass, P and dS) to the dtype.
TOL = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float32: (1e-5, 1e-5)}
GRAD_SCALE = 8  # gradients pass through two more roundings to the dtype


def close(actual, expected, dtype, scale=1, msg=""):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual.float().cpu(), expected.float(), rtol=rtol * scale, atol=atol * scale,
                               msg=lambda m: f"{msg} ({dtype}): {m}")


def attention_case(backend, dtype, causal, shape):
    skip_bf16_if_unsupported(dtype)
    q, k, v = (randn(*shape, dtype=dtype, seed=s) for s in (1, 2, 3))
    ref_in = [t.float().clone().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*ref_in, is_causal=causal)
    g = randn(*ref.shape, seed=4)
    ref.backward(g)
    dev_in = [t.to(DEV).detach().requires_grad_() for t in (q, k, v)]
    with sdpa_kernel([backend]):
        out = F.scaled_dot_product_attention(*dev_in, is_causal=causal)
        out.backward(g.to(DEV, dtype))
    synchronize()
    assert out.dtype == dtype
    close(out, ref, dtype, msg="output")
    for name, d, r in zip("qkv", dev_in, ref_in):
        close(d.grad, r.grad, dtype, GRAD_SCALE, msg=f"d{name}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 48, 64), (1, 2, 17, 32), (1, 1, 130, 128)])
def test_flash_attention(dtype, causal, shape):
    attention_case(SDPBackend.FLASH_ATTENTION, dtype, causal, shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 48, 64), (1, 2, 17, 40)])
def test_memory_efficient_attention(dtype, causal, shape):
    attention_case(SDPBackend.EFFICIENT_ATTENTION, dtype, causal, shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_default_sdpa_with_a_mask(dtype):
    """No backend chosen: PyTorch picks its kernel; an additive mask too."""
    q, k, v = (randn(2, 4, 33, 64, dtype=dtype, seed=s) for s in (5, 6, 7))
    mask = randn(2, 1, 33, 33, dtype=dtype, seed=8)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask.float())
    out = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), attn_mask=mask.to(DEV))
    synchronize()
    close(out, ref, dtype, msg="default sdpa")


def test_multihead_attention_fast_path_and_encoder_layers():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    x = randn(3, 20, 64, seed=9)
    with torch.no_grad():
        want_mha, _ = mha(x, x, x, need_weights=False)
        got_mha, _ = copy.deepcopy(mha).to(DEV)(x.to(DEV), x.to(DEV), x.to(DEV), need_weights=False)
        want_eval = layer.eval()(x)
        got_eval = copy.deepcopy(layer).to(DEV).eval()(x.to(DEV))
    synchronize()
    close(got_mha, want_mha, torch.float32, 10, msg="MultiheadAttention fast path")
    close(got_eval, want_eval, torch.float32, 10, msg="encoder layer, evaluation")
    # Training: one step of SGD on both, then the same loss.
    losses = []
    for device in (CPU, DEV):
        model = copy.deepcopy(layer).to(device).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            loss = model(x.to(device)).pow(2).mean()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert abs(losses[0] - losses[1]) <= 1e-4 * abs(losses[0]), losses
