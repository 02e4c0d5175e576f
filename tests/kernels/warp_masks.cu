// Lanes of one warp passing different membermasks: groups formed by
// match.any.sync, each reducing, voting and shuffling within its own group;
// disjoint masks in divergent branches; __syncwarp in two branches that
// exchange data through shared memory.
#define OUTS 14
extern "C" __global__ void warp_masks(const int* in, int* out) {
  __shared__ int buf[1024];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = in[i];
  int* o = out + OUTS * i;
  unsigned group = __match_any_sync(0xffffffffu, v & 3);
  int leader = __ffs(group) - 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  o[0] = __reduce_add_sync(group, v);
  o[1] = __reduce_min_sync(group, v);
  o[2] = __reduce_max_sync(group, v);
  o[3] = static_cast<int>(__reduce_or_sync(group, static_cast<unsigned>(v)));
#else
  int s = 0, mn = v, mx = v;
  unsigned orv = 0;
  for (unsigned r = group; r; r &= r - 1) {
    int x = __shfl_sync(group, v, __ffs(r) - 1);
    s += x;
    mn = min(mn, x);
    mx = max(mx, x);
    orv |= static_cast<unsigned>(x);
  }
  o[0] = s;
  o[1] = mn;
  o[2] = mx;
  o[3] = static_cast<int>(orv);
#endif
  o[4] = static_cast<int>(__ballot_sync(group, v > 0));
  o[5] = __all_sync(group, v > -500) + 2 * __any_sync(group, v > 900) + 4 * __uni_sync(group, v >= 0);
  int pred = 0;
  o[6] = static_cast<int>(__match_all_sync(group, v & 4, &pred));
  o[7] = pred;
  o[8] = __shfl_sync(group, v, leader);
  o[9] = static_cast<int>(group);
  // Disjoint masks in divergent branches: odd and even lanes.
  if (lane & 1) {
    o[10] = static_cast<int>(__ballot_sync(0xaaaaaaaau, v > 0));
  } else {
    o[10] = static_cast<int>(__ballot_sync(0x55555555u, v < 0));
  }
  // Two halves meet at different __syncwarp calls before reading each
  // other's writes.
  if (lane < 16) {
    buf[threadIdx.x] = v;
    __syncwarp();
    o[11] = buf[threadIdx.x + 16];
  } else {
    buf[threadIdx.x] = 2 * v;
    __syncwarp();
    o[11] = buf[threadIdx.x - 16];
  }
  // Masks naming part of the lanes that execute together: lanes 0..7 and
  // 8..23 vote separately; lanes 24..31 see only themselves as active.
  if (lane < 24) {
    o[12] = static_cast<int>(__ballot_sync(lane < 8 ? 0xffu : 0x00ffff00u, v > 0));
  } else {
    o[12] = static_cast<int>(__activemask());
  }
  // shfl.down with a partial mask: lane 31 reads past the end and keeps its own value.
  o[13] = lane >= 8 ? __shfl_down_sync(0xffffff00u, v, 1) : -1;
}
