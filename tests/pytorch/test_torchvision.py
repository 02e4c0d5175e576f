"""torchvision's models, as users train them first: three SGD steps of
resnet18 and of mobilenet_v3_small on batches of eight generated 64x64
images (no download),
on the device and on PyTorch's CPU from the same weights and data, in
training mode (batch norm with batch statistics), so that every
convolution, batch norm, pooling and linear layer goes forward and backward
through rgpu. The losses agree step by step within 1e-3 relative, as the
suite's own CNN's do.

(Single parameters are not compared: a batch norm's bias gradient is a sum
of thousands of terms that cancel, so its value after one step differs
between any two correct backends by more than its own size. Batches of four
left resnet18's last batch norms 16 values each, whose statistics amplify
float rounding to 1e-3 of the loss; with eight both models agree to 1e-6.)"""

import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision

from conftest import CPU, DEV, randint, randn

BATCH = 8
STEPS = 3
RTOL = 1e-3


def train(model, device):
    model = copy.deepcopy(model).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = randn(BATCH * STEPS, 3, 64, 64, seed=3).to(device)
    y = randint(0, 10, BATCH * STEPS, seed=4).to(device)
    losses = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x[s * BATCH:(s + 1) * BATCH]), y[s * BATCH:(s + 1) * BATCH])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# Dropout off: its masks come from each device's own generator.
MODELS = {
    "resnet18": dict(),
    "mobilenet_v3_small": dict(dropout=0.0),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_trains_like_cpu(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, num_classes=10, **MODELS[name])
    losses_dev = train(model, DEV)
    losses_cpu = train(model, CPU)
    for s, (a, e) in enumerate(zip(losses_dev, losses_cpu)):
        assert abs(a - e) <= RTOL * abs(e), f"{name} step {s}: {a} vs {e} (device {losses_dev}, cpu {losses_cpu})"
