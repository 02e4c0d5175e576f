"""Recurrent layers through cuDNN's RNN API (nn.LSTM, nn.GRU, nn.RNN), forward
and backward, against PyTorch's CPU with the same weights and inputs:
one and two layers, uni- and bidirectional, packed sequences of several
lengths, an LSTM with a projection, a few training steps of a small word
language model, and float16 and bfloat16 forwards.

Tolerances (stated here, not in conftest: a recurrence compounds a
matmul's rounding over its steps): float32 outputs and gradients within
rtol 2e-4, atol 2e-5; the float16 forward within 1e-2 (bfloat16: 4e-2) of
the float32 CPU result on the same (rounded) inputs and weights; the language model's losses within
rtol 1e-4 at every step."""

import pytest
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from conftest import CPU, DEV, SELF_CHECK, randint, randn, skip_bf16_if_unsupported, synchronize

RTOL, ATOL = 2e-4, 2e-5


def close(actual, expected, msg, rtol=RTOL, atol=ATOL):
    torch.testing.assert_close(actual.detach().cpu().float(), expected.detach().cpu().float(), rtol=rtol, atol=atol,
                               msg=lambda m: f"{msg}: {m}")


def went_through_cudnn(t):
    """Whether the autograd graph behind t holds cuDNN's RNN node."""
    seen, todo = set(), [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if "CudnnRnn" in type(fn).__name__:
            return True
        todo.extend(f for f, _ in fn.next_functions)
    return False


def make(cls, seed, **kwargs):
    torch.manual_seed(seed)
    return cls(**kwargs)


def run(module, x, h0, device):
    """Output, final state(s) and every gradient of a weighted sum of them."""
    m = module.to(device)
    m.zero_grad()
    xx = x.to(device).requires_grad_()
    hh = tuple(h.to(device).requires_grad_() for h in h0) if isinstance(h0, tuple) else h0.to(device).requires_grad_()
    out, state = m(xx, hh)
    states = state if isinstance(state, tuple) else (state,)
    loss = (out * randn(*out.shape, seed=90).to(device)).sum()
    for i, s in enumerate(states):
        loss = loss + (s * randn(*s.shape, seed=91 + i).to(device)).sum()
    loss.backward()
    synchronize()
    inputs = hh if isinstance(hh, tuple) else (hh,)
    return out, states, xx.grad, [h.grad for h in inputs], [p.grad.clone() for p in m.parameters()]


def compare(cls, kwargs, x, h0, name):
    dev = make(cls, 1, **kwargs)
    cpu = make(cls, 1, **kwargs)
    got = run(dev, x, h0, DEV)
    want = run(cpu, x, h0, CPU)
    if not SELF_CHECK:
        assert went_through_cudnn(got[0]), f"{name}: the device did not run cuDNN's RNN"
    close(got[0], want[0], f"{name} output")
    for i, (a, b) in enumerate(zip(got[1], want[1])):
        close(a, b, f"{name} final state {i}")
    close(got[2], want[2], f"{name} input gradient")
    for i, (a, b) in enumerate(zip(got[3], want[3])):
        close(a, b, f"{name} initial state gradient {i}")
    names = [n for n, _ in cpu.named_parameters()]
    for n, a, b in zip(names, got[4], want[4]):
        close(a, b, f"{name} gradient of {n}")


def states(cls, layers, dirs, batch, hidden, proj=0, seed=10):
    h = randn(layers * dirs, batch, proj or hidden, seed=seed, scale=0.5)
    if cls is nn.LSTM:
        return (h, randn(layers * dirs, batch, hidden, seed=seed + 1, scale=0.5))
    return h


CASES = {
    "lstm": (nn.LSTM, dict()),
    "gru": (nn.GRU, dict()),
    "rnn_tanh": (nn.RNN, dict(nonlinearity="tanh")),
    "rnn_relu": (nn.RNN, dict(nonlinearity="relu")),
}


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_backward(name, layers, bidirectional):
    cls, extra = CASES[name]
    kwargs = dict(input_size=5, hidden_size=7, num_layers=layers, bidirectional=bidirectional, **extra)
    x = randn(6, 3, 5, seed=2)
    compare(cls, kwargs, x, states(cls, layers, 2 if bidirectional else 1, 3, 7), f"{name} {layers}l")


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_batch_first_without_initial_state(name):
    cls, extra = CASES[name]
    dev = make(cls, 3, input_size=4, hidden_size=6, batch_first=True, **extra)
    cpu = make(cls, 3, input_size=4, hidden_size=6, batch_first=True, **extra)
    x = randn(2, 5, 4, seed=4)
    out, _ = dev.to(DEV)(x.to(DEV))
    synchronize()
    close(out, cpu(x)[0], f"{name} batch_first output")


def test_lstm_with_projection():
    kwargs = dict(input_size=5, hidden_size=8, proj_size=3, num_layers=2, bidirectional=True)
    compare(nn.LSTM, kwargs, randn(4, 2, 5, seed=5), states(nn.LSTM, 2, 2, 2, 8, proj=3), "lstm proj")


@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_packed_sequence(name, enforce_sorted):
    cls, extra = CASES[name]
    lengths = [6, 4, 3, 1] if enforce_sorted else [3, 6, 1, 4]
    x = randn(6, 4, 5, seed=6)
    results = {}
    for device in (DEV, CPU):
        m = make(cls, 7, input_size=5, hidden_size=6, num_layers=2, bidirectional=True, **extra).to(device)
        xx = x.to(device).requires_grad_()
        packed = pack_padded_sequence(xx, torch.tensor(lengths), enforce_sorted=enforce_sorted)
        out, state = m(packed)
        padded, _ = pad_packed_sequence(out)
        h = state[0] if isinstance(state, tuple) else state
        loss = (padded * randn(*padded.shape, seed=8).to(device)).sum() + (h * randn(*h.shape, seed=9).to(device)).sum()
        loss.backward()
        synchronize()
        results[device.type] = (padded, h, xx.grad, [p.grad for p in m.parameters()])
    got, want = results[DEV.type], results["cpu"]
    close(got[0], want[0], f"{name} packed output")
    close(got[1], want[1], f"{name} packed final state")
    close(got[2], want[2], f"{name} packed input gradient")
    for i, (a, b) in enumerate(zip(got[3], want[3])):
        close(a, b, f"{name} packed parameter gradient {i}")


def test_dropout_between_layers_trains():
    """Dropout's masks come from the device's own generator, so only the
    shape of the result and a finite gradient are compared; in eval mode
    the result is the CPU's."""
    m = make(nn.LSTM, 11, input_size=4, hidden_size=8, num_layers=2, dropout=0.5).to(DEV)
    x = randn(5, 3, 4, seed=12).to(DEV)
    out, _ = m(x)
    out.sum().backward()
    synchronize()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())
    m.eval()
    cpu = make(nn.LSTM, 11, input_size=4, hidden_size=8, num_layers=2, dropout=0.5).eval()
    with torch.no_grad():
        close(m(x)[0], cpu(x.cpu())[0], "eval output with dropout")


class WordModel(nn.Module):
    def __init__(self, vocab=40, emb=16, hidden=24):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, num_layers=2)
        self.decode = nn.Linear(hidden, vocab)

    def forward(self, tokens, state):
        out, state = self.rnn(self.embed(tokens), state)
        return self.decode(out), state


def train_word_model(device, steps=4):
    torch.manual_seed(13)
    model = WordModel().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    data = randint(0, 40, 9, 4, seed=14).to(device)
    state = (torch.zeros(2, 4, 24, device=device), torch.zeros(2, 4, 24, device=device))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits, new_state = model(data[:-1], state)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 40), data[1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        state = tuple(s.detach() for s in new_state)
        losses.append(loss.item())
    synchronize()
    return torch.tensor(losses), [p.detach() for p in model.parameters()]


def test_word_language_model_training_steps():
    got, got_params = train_word_model(DEV)
    want, want_params = train_word_model(CPU)
    close(got, want, "losses", rtol=1e-4, atol=1e-5)
    assert want[-1] < want[0]
    for i, (a, b) in enumerate(zip(got_params, want_params)):
        close(a, b, f"parameter {i} after training", rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_forward(dtype):
    skip_bf16_if_unsupported(dtype)
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    x = randn(5, 3, 6, seed=16, dtype=dtype)
    ref = make(nn.LSTM, 15, input_size=6, hidden_size=8, num_layers=2).to(dtype)
    # the float32 reference uses the weights rounded to the 16-bit type, as the device does
    m = make(nn.LSTM, 15, input_size=6, hidden_size=8, num_layers=2)
    m.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    want, _ = m(x.float())
    if SELF_CHECK:
        got = want
    else:
        got, _ = ref.to(DEV)(x.to(DEV))
        synchronize()
        assert got.dtype == dtype
        # PyTorch 2.6 runs bfloat16 RNNs with its own kernels, not cuDNN.
        assert dtype == torch.bfloat16 or went_through_cudnn(got), "the device did not run cuDNN's RNN"
    close(got, want, f"{dtype} output", rtol=tol, atol=tol)
