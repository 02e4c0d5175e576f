"""torchvision's models, as users train them first: three SGD steps of
resnet18, of mobilenet_v3_small and of a small VisionTransformer (vit_b_16's
architecture) on batches of eight generated 64x64 images (no download),
on the device and on PyTorch's CPU from the same weights and data, in
training mode (batch norm with batch statistics), so that every
convolution, batch norm, pooling and linear layer goes forward and backward
through rgpu. The losses agree step by step within 1e-3 relative, as the
suite's own CNN's do. And one encoder block of vit_b_16 at full size,
forward and backward.

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

from torch.nn.attention import SDPBackend

from conftest import CPU, DEV, SELF_CHECK, randint, randn, synchronize

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


def build(name):
    torch.manual_seed(0)
    if name == "vision_transformer":
        # vit_b_16's architecture at a size the CPU device trains in seconds:
        # 16x16 patches of the 64x64 images (16 tokens and the class token),
        # two encoder blocks.
        return torchvision.models.VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4,
                                                    hidden_dim=64, mlp_dim=128, num_classes=10)
    return getattr(torchvision.models, name)(weights=None, num_classes=10, **MODELS[name])


@pytest.mark.parametrize("name", sorted(MODELS) + ["vision_transformer"])
def test_model_trains_like_cpu(name):
    model = build(name)
    losses_dev = train(model, DEV)
    losses_cpu = train(model, CPU)
    for s, (a, e) in enumerate(zip(losses_dev, losses_cpu)):
        assert abs(a - e) <= RTOL * abs(e), f"{name} step {s}: {a} vs {e} (device {losses_dev}, cpu {losses_cpu})"


def test_vit_b_16_encoder_block_like_cpu():
    """One encoder block of vit_b_16 at its own size (hidden 768, 12 heads,
    MLP 3072) on its sequence (197 tokens: a 224x224 image in 16x16 patches
    and the class token), two images, in training mode: attention goes
    through PyTorch's default scaled_dot_product_attention kernel. Output
    and gradients against the CPU, within float32 matmul tolerances for
    sums of up to 3072 terms."""
    from torchvision.models.vision_transformer import EncoderBlock

    # The attention's shape (2 images, 12 heads, 197 tokens, 64 per head)
    # is one PyTorch sends to a fused kernel (memory-efficient in float32),
    # not to its math path (PyTorch 2.6's own choice function).
    q = randn(2, 12, 197, 64, seed=7).to(DEV)
    if not SELF_CHECK:
        assert torch._fused_sdp_choice(q, q, q) != int(SDPBackend.MATH)

    torch.manual_seed(0)
    block = EncoderBlock(num_heads=12, hidden_dim=768, mlp_dim=3072, dropout=0.0, attention_dropout=0.0)
    x, g = randn(2, 197, 768, seed=5), randn(2, 197, 768, seed=6)
    results = []
    for device in (CPU, DEV):
        b = copy.deepcopy(block).to(device).train()
        xi = x.to(device).detach().requires_grad_()
        y = b(xi)
        y.backward(g.to(device))
        results.append((y, xi.grad, b.self_attention.in_proj_weight.grad, b.mlp[0].weight.grad))
    synchronize()
    for what, want, got in zip(("output", "input gradient", "attention weights' gradient", "MLP weights' gradient"),
                               *results):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4, msg=lambda m: f"{what}: {m}")
