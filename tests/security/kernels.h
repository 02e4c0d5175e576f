// Hand-written PTX for the security tests and the session fuzzer's seeds:
// a kernel that fills memory (the well-behaved client checks its output) and
// one that stores through whatever pointer it is given (the attacker's).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace rgpu::security {

// fill(p, v, n): p[i] = v + i for i < n.
// poke(p): *p = 0xdeadbeef.
// `counter` is a global for moduleGetGlobal.
inline constexpr std::string_view kKernelsPtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .global .align 4 .u32 counter;

.visible .entry fill(.param .u64 p, .param .u32 v, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.u32 %r7, %r1, %r6;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}

.visible .entry poke(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, 0xdeadbeef;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

// The image bytes of kKernelsPtx as a module load sends them.
inline std::vector<uint8_t> kernels_image() { return {kKernelsPtx.begin(), kKernelsPtx.end()}; }

// Parameter buffers, laid out as the .entry lines declare them.
inline std::vector<uint8_t> fill_params(uint64_t p, uint32_t v, uint32_t n) {
  std::vector<uint8_t> out(16);
  std::memcpy(out.data(), &p, 8);
  std::memcpy(out.data() + 8, &v, 4);
  std::memcpy(out.data() + 12, &n, 4);
  return out;
}
inline std::vector<uint8_t> poke_params(uint64_t p) {
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), &p, 8);
  return out;
}

}  // namespace rgpu::security
