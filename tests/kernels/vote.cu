// Warp votes: ballot, all, any, and counting with popc.
extern "C" __global__ void vote_ballot(const int* in, unsigned* ballots, int* flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  unsigned b = __ballot_sync(0xffffffffu, v > 0);
  int all = __all_sync(0xffffffffu, v >= 0);
  int any = __any_sync(0xffffffffu, v > 100);
  if ((threadIdx.x & 31) == 0) {
    int w = i >> 5;
    ballots[w] = b;
    flags[2 * w] = all;
    flags[2 * w + 1] = any + __popc(b) * 2;
  }
}
