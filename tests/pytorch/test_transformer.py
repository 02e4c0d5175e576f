"""Inference of a small transformer block on the device under test, against
PyTorch's CPU: attention through scaled_dot_product_attention's math path,
layer norm, a GELU MLP, residuals; and torch.nn.TransformerEncoderLayer,
whose evaluation mode takes PyTorch's fused encoder kernel on CUDA."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from conftest import CPU, DEV, assert_close, randn, skip_bf16_if_unsupported, synchronize

D_MODEL = 64
HEADS = 4
SEQ = 24
BATCH = 3


class Block(torch.nn.Module):
    """A pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.ln1 = torch.nn.LayerNorm(D_MODEL)
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = torch.nn.LayerNorm(D_MODEL)
        self.fc1 = torch.nn.Linear(D_MODEL, 4 * D_MODEL)
        self.fc2 = torch.nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x, mask=None):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D_MODEL, dim=-1)
        heads = lambda t: t.view(b, s, HEADS, D_MODEL // HEADS).transpose(1, 2)
        a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask,
                                           is_causal=self.causal and mask is None)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, D_MODEL))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def seeded(module):
    torch.manual_seed(0)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=1.0 / math.sqrt(p.shape[-1]))
    return module.eval()


def infer(model, x, device, **kwargs):
    model = copy.deepcopy(model).to(device)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        out = model(x.to(device), **{k: v.to(device) for k, v in kwargs.items()})
    synchronize()
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_block_inference_matches_cpu(causal):
    model = seeded(Block(causal))
    x = randn(BATCH, SEQ, D_MODEL, seed=3)
    assert_close(infer(model, x, DEV), infer(model, x, CPU), "matmul", f"block causal={causal}")


def test_block_with_padding_mask():
    # A boolean mask that hides the last keys of every sequence but the first.
    model = seeded(Block(False))
    x = randn(BATCH, SEQ, D_MODEL, seed=4)
    keep = torch.ones(BATCH, 1, 1, SEQ, dtype=torch.bool)
    keep[1:, ..., SEQ - 5:] = False
    assert_close(infer(model, x, DEV, mask=keep), infer(model, x, CPU, mask=keep), "matmul", "masked block")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_block_reduced_precision_close_to_fp32(dtype):
    # Half-precision inference differs from fp32 by rounding only: compare the
    # device's result with the CPU's fp32 result at a tolerance for the dtype.
    skip_bf16_if_unsupported(dtype)
    model = seeded(Block(True))
    x = randn(BATCH, SEQ, D_MODEL, seed=5)
    expected = infer(model, x, CPU)
    actual = infer(model.to(dtype), x.to(dtype), DEV).float().cpu()
    tol = 3e-2 if dtype == torch.float16 else 1.5e-1
    torch.testing.assert_close(actual, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_inference_matches_cpu(norm_first):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=2 * D_MODEL, dropout=0.0,
                                             batch_first=True, norm_first=norm_first).eval()
    x = randn(BATCH, SEQ, D_MODEL, seed=6)
    assert_close(infer(layer, x, DEV), infer(layer, x, CPU), "matmul", f"encoder layer norm_first={norm_first}")


def test_sdpa_math_matches_explicit_softmax():
    # The math path on the device, against causal attention written out on
    # PyTorch's CPU from the same inputs.
    q, k, v = (randn(2, HEADS, SEQ, 16, seed=s) for s in (7, 8, 9))
    with sdpa_kernel(SDPBackend.MATH):
        got = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), is_causal=True)
    synchronize()
    scores = q @ k.transpose(-2, -1) / math.sqrt(16)
    scores = scores.masked_fill(torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1), float("-inf"))
    want = scores.softmax(-1) @ v
    assert_close(got, want, "matmul", "causal attention")
