// Reads PTX's predefined identifiers and special registers, and uses the
// reserved shared memory region next to static and dynamic shared memory.
// (Lambdas, not GNU statement expressions, so that NVRTC compiles it too.)
#define SREG32(name) ([] { unsigned r_; asm volatile("mov.u32 %0, " name ";" : "=r"(r_)); return r_; }())
#define SREG64(name) ([] { unsigned long long r_; asm volatile("mov.u64 %0, " name ";" : "=l"(r_)); return r_; }())
#define NREGS 32

extern "C" __global__ void special_regs(unsigned* out, unsigned long long* out64) {
  extern __shared__ int dyn[];
  __shared__ int stat[40];
  unsigned t = threadIdx.x;
  unsigned* o = out + NREGS * (blockIdx.x * blockDim.x + t);
  unsigned long long* o64 = out64 + 4 * (blockIdx.x * blockDim.x + t);
  unsigned long long c0 = SREG64("%%clock64");
  unsigned g0 = SREG32("%%globaltimer_lo");
  o[0] = SREG32("WARP_SZ");
  o[1] = SREG32("%%dynamic_smem_size");
  o[2] = SREG32("%%total_smem_size");
  o[3] = SREG32("%%nsmid");
  o[4] = SREG32("%%smid");
  o[5] = SREG32("%%lanemask_eq");
  o[6] = SREG32("%%lanemask_le");
  o[7] = SREG32("%%lanemask_lt");
  o[8] = SREG32("%%lanemask_ge");
  o[9] = SREG32("%%lanemask_gt");
  o[10] = SREG32("%%envreg0") | SREG32("%%envreg31");
  o[11] = SREG32("%%pm0") | SREG32("%%pm7");
  o[12] = SREG32("%%clock");
  o[13] = SREG32("%%globaltimer_hi");
  o[14] = SREG32("%%warpid");
  o[15] = SREG32("%%nwarpid");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned begin = SREG32("%%reserved_smem_offset_begin");
  o[16] = begin;
  o[17] = SREG32("%%reserved_smem_offset_end");
  o[18] = SREG32("%%reserved_smem_offset_cap");
  o[19] = SREG32("%%reserved_smem_offset_0");
  unsigned r1 = SREG32("%%reserved_smem_offset_1");
  o[20] = r1;
  int* reserved;
  asm volatile("{ .reg .u64 e; cvt.u64.u32 e, %1; cvta.shared.u64 %0, e; }" : "=l"(reserved) : "r"(r1));
#else
  for (int k = 16; k <= 20; ++k) o[k] = ~0u;
  __shared__ int fallback[256];
  int* reserved = fallback;
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  o[21] = SREG32("%%aggr_smem_size");
  o[22] = SREG32("%%clusterid.x") + 1000 * SREG32("%%nclusterid.x");
  o[23] = SREG32("%%cluster_ctaid.x") + SREG32("%%cluster_ctaid.y") + SREG32("%%cluster_ctaid.z") +
          SREG32("%%cluster_ctarank");
  o[24] = SREG32("%%cluster_nctaid.x") * SREG32("%%cluster_nctaid.y") * SREG32("%%cluster_nctaid.z") +
          10 * SREG32("%%cluster_nctarank");
  unsigned explicit_cluster;
  asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(explicit_cluster));
  o[25] = explicit_cluster;
#else
  o[21] = ~0u;
  o[22] = blockIdx.x + 1000 * gridDim.x;
  o[23] = 0;
  o[24] = 11;
  o[25] = 0;
#endif
  // Shared memory: static, dynamic and reserved hold their own values.
  stat[t % 40] = 7;
  dyn[t] = static_cast<int>(t) * 5;
  reserved[t] = static_cast<int>(t) * 3;
  __syncthreads();
  unsigned next = (t + 1) % blockDim.x;
  o[26] = static_cast<unsigned>(reserved[next] + dyn[next] + stat[next % 40]);
  unsigned long long c1 = SREG64("%%clock64");
  unsigned g1 = SREG32("%%globaltimer_lo");
  o[27] = c1 >= c0;
  o[28] = g1 - g0 < 1000000000u;
  o64[0] = SREG64("%%pm0_64") | SREG64("%%pm7_64");
  o64[1] = SREG64("%%current_graph_exec");
  o64[2] = SREG64("%%gridid");
  o64[3] = SREG64("%%globaltimer");
}
