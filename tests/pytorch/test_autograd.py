"""Autograd: backward through the ops of the other files, gradients compared with the CPU's."""

import pytest
import torch
import torch.nn.functional as F

from conftest import CPU, DEV, assert_close, randint, randn, skip_bf16_if_unsupported, synchronize


def grads(fn, inputs, device):
    """Outputs of fn and the gradients of a weighted sum of them with respect
    to every floating-point input, computed on device."""
    leaves = [t.to(device).requires_grad_(t.is_floating_point()) if isinstance(t, torch.Tensor) else t
              for t in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = 0
    for i, o in enumerate(outs):
        if o.is_floating_point():
            # Fixed weights, so that each output element gets its own upstream gradient.
            w = randn(*o.shape, dtype=o.dtype, seed=1000 + i).to(device)
            loss = loss + (o * w).float().sum()
    loss.backward()
    synchronize()
    return [o.detach() for o in outs], [t.grad for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


CASES = {
    "elementwise": (lambda x, y: (torch.exp(x) * y, torch.tanh(x) + torch.sigmoid(y), F.gelu(x) / (y.abs() + 1),
                                  torch.where(x > 0, x, y), x.clamp(-0.5, 0.5) ** 2),
                    lambda: [randn(30, 20, seed=1), randn(30, 20, seed=2)], "elementwise"),
    "broadcast": (lambda x, b, c: (x * b, x + c[:, None]),
                  lambda: [randn(30, 20, seed=3), randn(20, seed=4), randn(30, seed=25)], "reduction"),
    "reductions": (lambda x: (x.sum(1), x.mean(0), x.max(1).values, x.var(1), x.norm(dim=0), x.amax(0),
                              torch.logsumexp(x, 1), x.cumsum(1)),
                   lambda: [randn(24, 10, seed=5)], "reduction"),
    "prod": (lambda x: (x.prod(1),), lambda: [randn(24, 10, seed=5)], "reduction"),
    "indexing": (lambda x, src, idx, mask, rows: (x[idx], torch.gather(x, 1, idx[:, None].expand(-1, 4) % 16),
                                                  x.scatter_add(0, rows[:, None].expand(-1, 16), src),
                                                  x.index_add(0, rows, src), x.masked_fill(mask, 0),
                                                  torch.cat([x, src]), torch.stack([x, x * 2]),
                                                  torch.where(mask, x, src[:20]), x.index_select(1, idx % 16)),
                 lambda: [randn(20, 16, seed=6), randn(40, 16, seed=7), randint(0, 20, 12, seed=8),
                          randn(20, 16, seed=9) > 0, randint(0, 20, 40, seed=10)], "reduction"),
    "nn": (lambda x, w, e, t, ids: (F.softmax(x, 1), F.log_softmax(x, 1), F.cross_entropy(x, t),
                                    F.embedding(ids, e).sum(1), F.layer_norm(x, (10,), w),
                                    F.cross_entropy(x, t, label_smoothing=0.1, reduction="sum")),
           lambda: [randn(32, 10, seed=11), randn(10, seed=12), randn(50, 10, seed=13), randint(0, 10, 32, seed=14),
                    randint(0, 50, 32, 6, seed=15)], "reduction"),
    "matmul": (lambda a, b, c, bias, x3: (a @ b, torch.addmm(bias, a, b), torch.bmm(x3, x3.transpose(1, 2)),
                                          F.linear(a, b.t(), bias), torch.baddbmm(c, x3, x3.transpose(1, 2))),
               lambda: [randn(16, 32, seed=16), randn(32, 8, seed=17), randn(3, 5, 5, seed=18), randn(8, seed=19),
                        randn(3, 5, 12, seed=20)], "matmul"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward(name):
    fn, make, kind = CASES[name]
    inputs = make()
    out_dev, grad_dev = grads(fn, inputs, DEV)
    out_cpu, grad_cpu = grads(fn, inputs, CPU)
    assert len(grad_dev) == len(grad_cpu) > 0
    assert all(g is not None for g in grad_dev)
    assert_close(tuple(out_dev), tuple(out_cpu), kind, f"{name} outputs")
    assert_close(tuple(grad_dev), tuple(grad_cpu), kind, f"{name} gradients")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_backward_reduced_precision_linear(dtype):
    skip_bf16_if_unsupported(dtype)
    inputs = [randn(16, 32, dtype=dtype, seed=21), randn(8, 32, dtype=dtype, seed=22, scale=0.3),
              randn(8, dtype=dtype, seed=23)]

    def fn(x, w, b):
        return (F.relu(F.linear(x, w, b)),)

    out_dev, grad_dev = grads(fn, inputs, DEV)
    out_cpu, grad_cpu = grads(fn, inputs, CPU)
    assert_close(tuple(out_dev), tuple(out_cpu), "matmul", "outputs")
    assert_close(tuple(grad_dev), tuple(grad_cpu), "matmul", "gradients")


def test_second_backward_accumulates_and_no_grad():
    x_cpu = randn(100, seed=24)
    x = x_cpu.to(DEV).requires_grad_()
    (x * x).sum().backward()
    (x * 3).sum().backward()
    assert_close(x.grad, 2 * x_cpu + 3)
    with torch.no_grad():
        y = x * 2
    assert not y.requires_grad
    g, = torch.autograd.grad((x.sin()).sum(), x)
    assert_close(g, x_cpu.cos())
