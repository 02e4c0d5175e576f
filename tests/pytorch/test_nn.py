"""softmax, log_softmax, cross_entropy, embedding, dropout (fixed seed), and friends."""

import pytest
import torch
import torch.nn.functional as F

from conftest import DEV, FLOATS, assert_close, check, randint, randn, skip_bf16_if_unsupported, synchronize


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_log_softmax(dtype):
    skip_bf16_if_unsupported(dtype)
    x = randn(64, 100, dtype=dtype, seed=1, scale=3.0)

    def f(x):
        return (F.softmax(x, dim=1), F.softmax(x, dim=0), F.log_softmax(x, dim=1), F.log_softmax(x, dim=0),
                F.softmax(x, dim=1, dtype=torch.float32))

    check(f, x, kind="reduction")


def test_softmax_wide_rows():
    # Rows longer than one block's worth of elements take another kernel.
    check(lambda x: (F.softmax(x, -1), F.log_softmax(x, -1)), randn(4, 3000, seed=2, scale=4.0), kind="reduction")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cross_entropy(dtype):
    skip_bf16_if_unsupported(dtype)
    logits = randn(64, 10, dtype=dtype, seed=3, scale=2.0)
    target = randint(0, 10, 64, seed=4)
    target[::7] = -100  # ignored
    weight = randn(10, seed=5).abs().to(dtype) + 0.5

    def f(logits, target, weight):
        return (F.cross_entropy(logits, target), F.cross_entropy(logits, target, reduction="sum"),
                F.cross_entropy(logits, target, reduction="none"), F.cross_entropy(logits, target, weight=weight),
                F.cross_entropy(logits, target.clamp(min=0), label_smoothing=0.1),
                F.nll_loss(F.log_softmax(logits, 1), target))

    check(f, logits, target, weight, kind="reduction")


def test_cross_entropy_probabilities_and_losses():
    logits = randn(32, 10, seed=6)
    probs = F.softmax(randn(32, 10, seed=7), 1)
    y = randn(32, 10, seed=8)

    def f(logits, probs, y):
        return (F.cross_entropy(logits, probs), F.mse_loss(logits, y), F.l1_loss(logits, y),
                F.binary_cross_entropy_with_logits(logits, probs), F.smooth_l1_loss(logits, y))

    check(f, logits, probs, y, kind="reduction")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding(dtype):
    skip_bf16_if_unsupported(dtype)
    weight = randn(100, 16, dtype=dtype, seed=9)
    ids = randint(0, 100, 8, 12, seed=10)

    def f(weight, ids):
        return (F.embedding(ids, weight), F.embedding(ids, weight, padding_idx=3),
                F.embedding_bag(ids, weight, mode="mean"), F.embedding_bag(ids, weight, mode="sum"))

    check(f, weight, ids, kind="reduction")


def test_embedding_module():
    torch.manual_seed(11)
    emb = torch.nn.Embedding(50, 8, padding_idx=0)
    ids = randint(0, 50, 4, 9, seed=12)
    emb_dev = torch.nn.Embedding(50, 8, padding_idx=0).to(DEV)
    emb_dev.load_state_dict(emb.state_dict())
    assert_close(emb_dev(ids.to(DEV)), emb(ids))


def test_dropout_fixed_seed():
    x = randn(4096, seed=13)
    d = x.to(DEV)
    p = 0.3
    torch.manual_seed(42)
    a = F.dropout(d, p, training=True)
    torch.manual_seed(42)
    b = F.dropout(d, p, training=True)
    synchronize()
    # The same seed gives the same mask on the device.
    assert torch.equal(a.cpu(), b.cpu())
    kept = a.cpu() != 0
    # Kept values are scaled by 1/(1-p) exactly as on the CPU; the fraction dropped is about p.
    assert_close(a[kept.to(DEV)], x[kept] / (1 - p))
    dropped = 1 - kept.float().mean().item()
    assert abs(dropped - p) < 0.05, dropped
    torch.manual_seed(43)
    assert not torch.equal(F.dropout(d, p, training=True).cpu(), a.cpu())
    # Not training: the identity.
    assert_close(F.dropout(d, p, training=False), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_normalization_and_activations(dtype):
    skip_bf16_if_unsupported(dtype)
    x = randn(32, 64, dtype=dtype, seed=14)
    w = randn(64, dtype=dtype, seed=15)
    b = randn(64, dtype=dtype, seed=16)

    def f(x, w, b):
        return (F.layer_norm(x, (64,), w, b), F.relu(x), F.gelu(x), F.leaky_relu(x, 0.1), F.softplus(x),
                F.hardtanh(x), F.normalize(x, dim=1))

    check(f, x, w, b, kind="reduction")
