// Bit manipulation intrinsics.
extern "C" __global__ void bits(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned* o = out + 12 * i;
  o[0] = __byte_perm(x, y, 0x5140);
  o[1] = __funnelshift_l(x, y, y & 31);
  o[2] = __funnelshift_r(x, y, y & 31);
  o[3] = __brev(x);
  o[4] = __popc(x) + 64 * __clz(y);
  o[5] = __ffs(x);
  o[6] = __umulhi(x, y);
  o[7] = static_cast<unsigned>(__umul64hi(static_cast<unsigned long long>(x) << 20, y));
  o[8] = __sad(x & 0xffff, y & 0xffff, 7);
  o[9] = __umul24(x, y);
  o[10] = (x >> (y & 7)) & ((1u << ((y >> 3) & 15)) - 1);
  o[11] = __popcll(static_cast<unsigned long long>(x) * y);
}
