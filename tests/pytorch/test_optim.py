"""SGD and Adam (and AdamW), with their single-tensor, foreach and fused kernels.

The CPU reference is always the single-tensor implementation; the device
under test runs the variant named in the case.
"""

import pytest
import torch

from conftest import CPU, DEV, assert_close, randn

SHAPES = [(37,), (16, 8), (5, 5, 5), (1,)]
STEPS = 8

OPTIMIZERS = {
    "sgd": (torch.optim.SGD, dict(lr=0.05)),
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, dampening=0)),
    "adam": (torch.optim.Adam, dict(lr=1e-2)),
    "adam_amsgrad_wd": (torch.optim.Adam, dict(lr=1e-2, amsgrad=True, weight_decay=1e-2)),
    "adamw": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
}


def train(cls, options, device, variant):
    """STEPS steps on fixed parameters and gradients; returns the parameters
    and the optimizer's state tensors."""
    params = [randn(*s, seed=i).to(device).requires_grad_() for i, s in enumerate(SHAPES)]
    kwargs = dict(options)
    if variant == "foreach":
        kwargs["foreach"] = True
    elif variant == "fused":
        kwargs["fused"] = True
    else:
        kwargs["foreach"] = False
    opt = cls(params, **kwargs)
    for step in range(STEPS):
        opt.zero_grad()
        for i, p in enumerate(params):
            p.grad = randn(*p.shape, seed=100 * step + i, scale=0.5).to(device)
        opt.step()
    state = []
    for p in params:
        for key, value in sorted(opt.state[p].items()):
            if isinstance(value, torch.Tensor) and key != "step":
                state.append(value.detach())
    return [p.detach() for p in params], state


@pytest.mark.parametrize("variant", ["single_tensor", "foreach", "fused"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer(name, variant):
    cls, options = OPTIMIZERS[name]
    params_dev, state_dev = train(cls, options, DEV, variant)
    params_cpu, state_cpu = train(cls, options, CPU, "single_tensor")
    assert len(state_dev) == len(state_cpu)
    assert_close(tuple(params_dev), tuple(params_cpu), "optim", f"{name} {variant} parameters")
    assert_close(tuple(state_dev), tuple(state_cpu), "optim", f"{name} {variant} state")
    # The parameters did move.
    assert not torch.equal(params_cpu[0], randn(*SHAPES[0], seed=0))


def test_zero_grad_and_lr_scheduler():
    p = randn(50, seed=7).to(DEV).requires_grad_()
    opt = torch.optim.SGD([p], lr=0.1, foreach=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    expected = randn(50, seed=7)
    lr = 0.1
    for step in range(5):
        opt.zero_grad()
        assert p.grad is None
        (p * p).sum().backward()
        expected = expected - lr * 2 * expected
        opt.step()
        sched.step()
        lr = 0.1 * 0.5 ** ((step + 1) // 2)
    assert_close(p.detach(), expected, "optim")
