"""CUDA graphs: torch.cuda.CUDAGraph capture and replay, and
torch.cuda.graphs.make_graphed_callables, against the same computation run
eagerly on PyTorch's CPU from the same inputs and initial weights, within
the suite's float32 matmul tolerance (conftest.TOLERANCES).

A captured graph replays the recorded kernels, copies and memsets in order on
the device (rgpu's CPU device implements graphs); replays read their static
inputs as they are at replay time.
"""

import copy

import pytest
import torch

from conftest import DEV, SELF_CHECK, assert_close, randn

pytestmark = pytest.mark.skipif(SELF_CHECK, reason="CUDA graphs are a torch.cuda feature")

REPLAYS = 10


def step(x, w, b):
    y = torch.relu(x @ w + b)
    return (y * 0.5 + y.sum(dim=1, keepdim=True)).tanh()


def test_cuda_graph_replays_equal_cpu():
    w_cpu, b_cpu = randn(16, 24, seed=1), randn(24, seed=2)
    w, b = w_cpu.to(DEV), b_cpu.to(DEV)
    static_x = torch.zeros(8, 16, device=DEV)
    side = torch.cuda.Stream()
    # Warm-up on a side stream, as PyTorch asks before capturing.
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step(static_x, w, b)
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = step(static_x, w, b)
    for r in range(REPLAYS):
        x = randn(8, 16, seed=100 + r)
        static_x.copy_(x.to(DEV))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(static_y, step(x, w_cpu, b_cpu), "matmul", f"replay {r}")
    graph.reset()


def test_capture_records_instead_of_running():
    static = torch.zeros(1000, device=DEV)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static.add_(1)
    # Capturing did not run the add; each replay does, once.
    assert static.sum().item() == 0
    for _ in range(REPLAYS):
        graph.replay()
    torch.cuda.synchronize()
    assert static.sum().item() == REPLAYS * 1000


def make_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


def test_make_graphed_callables_mlp_forward_backward_equal_cpu():
    # The same initial weights on both sides: the CPU module is the reference.
    reference = make_mlp()
    graphed = copy.deepcopy(reference).to(DEV)
    sample = randn(16, 32, seed=5).to(DEV).requires_grad_(True)
    graphed = torch.cuda.make_graphed_callables(graphed, (sample,))
    for r in range(REPLAYS // 2):
        x = randn(16, 32, seed=200 + r)
        target = randn(16, 10, seed=300 + r)
        xc = x.clone().requires_grad_(True)
        xg = x.to(DEV).requires_grad_(True)
        loss_c = torch.nn.functional.mse_loss(reference(xc), target)
        loss_g = torch.nn.functional.mse_loss(graphed(xg), target.to(DEV))
        loss_c.backward()
        loss_g.backward()
        torch.cuda.synchronize()
        assert_close(loss_g.detach(), loss_c.detach(), "matmul", f"loss step {r}")
        assert_close(xg.grad, xc.grad, "matmul", f"input gradient step {r}")
        for (name, pc), pg in zip(reference.named_parameters(), graphed.parameters()):
            assert_close(pg.grad, pc.grad, "matmul", f"{name} gradient step {r}")
            pc.grad = None
            pg.grad = None
