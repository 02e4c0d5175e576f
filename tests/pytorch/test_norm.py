"""Normalization and pooling layers, forward and backward, against PyTorch's
CPU: batch_norm through cuDNN (training, with the running statistics it
updates, and inference; spatial and per-activation), layer_norm and
group_norm (PyTorch's own kernels), max and avg pooling, interpolate."""

import pytest
import torch
import torch.nn.functional as F

from conftest import CPU, DEV, assert_close, randn, synchronize


def grads_of(fn, inputs, device):
    leaves = [t.to(device).detach().requires_grad_() if t.is_floating_point() else t.to(device) for t in inputs]
    out = fn(*leaves)
    weight = randn(*out.shape, seed=98).to(device)
    (out * weight).sum().backward()
    if device.type == "cuda":
        synchronize()
    return out.detach(), [t.grad for t in leaves if t.requires_grad]


def check_fb(fn, *inputs, kind="reduction"):
    out, grads = grads_of(fn, inputs, DEV)
    out_cpu, grads_cpu = grads_of(fn, inputs, CPU)
    assert_close(out, out_cpu, kind, "output")
    for i, (g, e) in enumerate(zip(grads, grads_cpu)):
        assert_close(g, e, kind, f"grad {i}")


@pytest.mark.parametrize("shape", [(4, 3, 6, 5), (8, 5), (2, 3, 4, 4, 3)], ids=["2d", "1d", "3d"])
def test_batch_norm_training(shape):
    c = shape[1]
    x = randn(*shape, seed=1, scale=2.0) + 0.5
    weight, bias = randn(c, seed=2), randn(c, seed=3)
    stats = {}
    for dev in (DEV, CPU):
        rm, rv = torch.zeros(c, device=dev), torch.ones(c, device=dev)
        out, grads = grads_of(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1),
                              [x, weight, bias], dev)
        stats[dev.type] = (out, grads, rm, rv)
    out, grads, rm, rv = stats[DEV.type]
    out_cpu, grads_cpu, rm_cpu, rv_cpu = stats["cpu"]
    assert_close(out, out_cpu, "reduction", "output")
    for i, (g, e) in enumerate(zip(grads, grads_cpu)):
        assert_close(g, e, "reduction", f"grad {i}")
    assert_close(rm, rm_cpu, "reduction", "running mean")
    assert_close(rv, rv_cpu, "reduction", "running var")


def test_batch_norm_inference():
    x = randn(4, 3, 5, 5, seed=4)
    rm, rv = randn(3, seed=5), randn(3, seed=6).abs() + 0.5
    w, b = randn(3, seed=7), randn(3, seed=8)
    check_fb(lambda x: F.batch_norm(x, rm.to(x.device), rv.to(x.device), w.to(x.device), b.to(x.device),
                                    training=False), x)


def test_batch_norm_channels_last():
    x = randn(2, 4, 5, 6, seed=9).contiguous(memory_format=torch.channels_last)
    m = torch.nn.BatchNorm2d(4)
    check_fb(lambda x: torch.func.functional_call(m.to(x.device), {}, (x,)), x)


def test_layer_norm():
    x = randn(6, 7, 16, seed=10)
    w, b = randn(16, seed=11), randn(16, seed=12)
    check_fb(lambda x, w, b: F.layer_norm(x, (16,), w, b), x, w, b)


def test_group_norm():
    x = randn(3, 6, 4, 5, seed=13)
    w, b = randn(6, seed=14), randn(6, seed=15)
    check_fb(lambda x, w, b: F.group_norm(x, 3, w, b), x, w, b)


def test_max_pool():
    x = randn(2, 3, 9, 8, seed=16)
    check_fb(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), x, kind="elementwise")
    check_fb(lambda x: F.max_pool2d(x, 2), x, kind="elementwise")


def test_avg_pool():
    x = randn(2, 3, 9, 8, seed=17)
    check_fb(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), x)
    check_fb(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), x)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate(mode):
    x = randn(2, 3, 5, 6, seed=18)
    kw = {} if mode == "nearest" else {"align_corners": False}
    check_fb(lambda x: F.interpolate(x, scale_factor=2, mode=mode, **kw), x)
