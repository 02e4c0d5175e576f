// Cooperative groups' tiles wider than a warp (sm_80 and later): their
// scratch lives in the reserved shared memory (%reserved_smem_offset_1) and
// their sync has warps of a block spin on each other's flags.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_tiles(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<64>(block);
  int sum = cg::reduce(tile, v, cg::plus<int>());
  int fifth = tile.shfl(v, 5);
  int any = tile.any(v > 900);
  int rank = static_cast<int>(tile.meta_group_rank());
#else
  __shared__ int vals[1024];
  vals[threadIdx.x] = v;
  __syncthreads();
  int base = threadIdx.x & ~63, sum = 0, any = 0;
  for (int k = 0; k < 64; ++k) {
    sum += vals[base + k];
    any |= vals[base + k] > 900;
  }
  int fifth = vals[base + 5];
  int rank = threadIdx.x / 64;
#endif
  out[3 * i] = sum;
  out[3 * i + 1] = fifth;
  out[3 * i + 2] = any + 2 * rank;
}
