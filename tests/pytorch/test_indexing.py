"""Indexing, gather, scatter, index_add, masked ops, cat, stack, where."""

import pytest
import torch

from conftest import DEV, assert_close, check, randint, randn

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64]


def data(dtype, *shape, seed=0):
    if dtype.is_floating_point:
        return randn(*shape, dtype=dtype, seed=seed)
    return randint(-100, 100, *shape, seed=seed)


def perm(n, seed):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_slicing_and_advanced_indexing(dtype):
    x = data(dtype, 40, 30, seed=1)
    idx = randint(0, 40, 25, seed=2)
    mask = randn(40, 30, seed=3) > 0

    def f(x, idx, mask):
        return x[5:30:3, ::2], x[idx], x[:, idx[:10] % 30], x[mask], x[idx, idx % 30], x[-1]

    check(f, x, idx, mask)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_and_index_select(dtype):
    x = data(dtype, 50, 40, seed=4)

    def f(x, i0, i1, sel):
        return torch.gather(x, 0, i0), torch.gather(x, 1, i1), x.index_select(0, sel), x.index_select(1, sel % 40)

    check(f, x, randint(0, 50, 20, 40, seed=5), randint(0, 40, 50, 7, seed=6), randint(0, 50, 33, seed=7))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter(dtype):
    x = data(dtype, 30, 20, seed=8)
    src = data(dtype, 30, 20, seed=9)
    # Each target written once, so the result does not depend on the order of writes.
    index = torch.stack([perm(30, 100 + j) for j in range(20)], dim=1)

    def f(x, index, src):
        return (x.scatter(0, index, src), x.scatter(0, index[:10], 7), x.clone().scatter_(0, index, src[:, :20]))

    check(f, x, index, src)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_scatter_add_and_reduce(dtype):
    x = data(dtype, 25, 16, seed=10)
    src = data(dtype, 200, 16, seed=11)
    index = randint(0, 25, 200, 16, seed=12)  # repeated targets: accumulation

    def f(x, index, src):
        return (x.scatter_add(0, index, src), x.scatter_reduce(0, index, src, "amax"),
                x.scatter_reduce(0, index, src, "sum", include_self=False))

    check(f, x, index, src, kind="reduction")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_add_copy_fill_put(dtype):
    x = data(dtype, 40, 12, seed=13)
    src = data(dtype, 100, 12, seed=14)
    rows = randint(0, 40, 100, seed=15)
    unique_rows = perm(40, 16)[:15]

    def f(x, rows, src, unique_rows):
        a = x.index_add(0, rows, src)
        b = x.index_copy(0, unique_rows, src[:15])
        c = x.index_fill(1, unique_rows % 12, 3)
        d = x.clone()
        d.index_put_((rows, rows % 12), src[:, 0], accumulate=True)
        e = x.clone()
        e[unique_rows] = src[:15]
        return a, b, c, d, e

    kind = "reduction" if dtype.is_floating_point else "elementwise"
    actual, expected = check(f, x, rows, src, unique_rows, kind=kind)
    assert actual[0].device.type == DEV.type


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked(dtype):
    x = data(dtype, 64, 33, seed=17)
    mask = randn(64, 33, seed=18) > 0.3
    src = data(dtype, 64 * 33, seed=19)

    def f(x, mask, src):
        return (x.masked_fill(mask, 5), x.masked_select(mask), x.masked_scatter(mask, src),
                torch.where(mask, x, -x), mask.nonzero(), x.masked_fill(~mask, 0).sum(1))

    check(f, x, mask, src, kind="reduction")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat_stack_split(dtype):
    a, b, c = data(dtype, 20, 30, seed=20), data(dtype, 7, 30, seed=21), data(dtype, 20, 30, seed=22)

    def f(a, b, c):
        return (torch.cat([a, b]), torch.cat([a, c], dim=1), torch.stack([a, c]), torch.stack([a, c], dim=2),
                torch.cat([a.t(), c.t()]), *torch.split(torch.cat([a, b]), 9), *a.chunk(3, dim=1),
                a.narrow(1, 4, 10), a.flip(0), a.roll(3, 1), torch.tril(a), a.repeat(2, 1))

    check(f, a, b, c)


def test_where_with_scalars_and_broadcast():
    x = randn(50, 40, seed=23)

    def f(x):
        return torch.where(x > 0, x, 0.0), torch.where(x[:, :1] > 0, x, x[0]), torch.where(x < -1)

    check(f, x)


def test_sort_topk_unique():
    x = torch.randperm(2000, generator=torch.Generator().manual_seed(24)).float().view(40, 50)

    def f(x):
        s = x.sort(1)
        t = x.topk(5, 1)
        return s.values, s.indices, t.values, t.indices, x.argsort(0), x.flatten().sort().values

    check(f, x)


def test_unique():
    x = torch.randperm(2000, generator=torch.Generator().manual_seed(24))
    check(lambda x: (torch.unique(x % 97), torch.unique(x % 13, return_counts=True)), x)


def test_sort_unique_cumsum_many_tiles():
    # Sizes past one CUB tile: radix sort runs its histogram and onesweep
    # kernels (grid sized by the occupancy API), unique's select and
    # run-length kernels and cumsum's scan chain tiles by decoupled look-back.
    # Integers, so that the scan compares exactly whatever its order of sums.
    x = randint(0, 5000, 20000, seed=25)
    y = randint(-1000, 1000, 50000, seed=26)

    def f(x, y):
        u, c = torch.unique(x, return_counts=True)
        return x.sort().values, torch.unique(x), u, c, y.cumsum(0)

    check(f, x, y)
