// The asynchronous copy and warp-wide matrix instructions that PyTorch's and
// CUTLASS's sm_80 kernels use: cp.async (src-size zero fill, ignore-src, no
// read past src-size), ldmatrix and stmatrix (plain and .trans), movmatrix
// and mma.sync, checked against a reference computed from PTX's fragment
// layouts; a warp that does not arrive whole is refused. And bmsk, which CUB's radix sort (thrust::sort)
// uses from sm_75.
#include <cmath>
#include <cstring>
#include <string>

#include "float_bits.h"
#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

// Small values whose products and sums are exact in f32.
float value(int i, int salt) { return static_cast<float>(((i * 7 + salt * 13) % 9) - 4) * 0.5f; }

const char* kCpAsync = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry cp_async_k(.param .u64 src, .param .u64 out, .param .u32 valid)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<10>;
  .reg .pred %p<3>;
  .shared .align 16 .b8 buf[640];
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [valid];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 16;
  add.u64 %rd4, %rd1, %rd3;
  mov.u32 %r3, buf;
  shl.b32 %r4, %r2, 4;
  add.u32 %r5, %r3, %r4;
  setp.lt.u32 %p1, %r2, %r1;
  setp.eq.u32 %p2, %r2, %r1;
  selp.u32 %r6, 8, 0, %p2;
  selp.u32 %r6, 16, %r6, %p1;
  cp.async.cg.shared.global.L2::128B [%r5], [%rd4], 16, %r6;
  and.b32 %r7, %r2, 1;
  setp.ne.u32 %p1, %r7, 0;
  mul.wide.u32 %rd5, %r2, 4;
  add.u64 %rd6, %rd1, %rd5;
  shl.b32 %r8, %r2, 2;
  add.u32 %r8, %r8, 512;
  add.u32 %r8, %r3, %r8;
  cp.async.ca.shared.global [%r8], [%rd6], 4, %p1;
  cp.async.commit_group;
  cp.async.wait_group 0;
  cp.async.wait_all;
  bar.sync 0;
  mul.wide.u32 %rd7, %r2, 20;
  add.u64 %rd8, %rd2, %rd7;
  ld.shared.u32 %r9, [%r5];
  ld.shared.u32 %r10, [%r5+4];
  ld.shared.u32 %r11, [%r5+8];
  ld.shared.u32 %r12, [%r5+12];
  ld.shared.u32 %r13, [%r8];
  st.global.u32 [%rd8], %r9;
  st.global.u32 [%rd8+4], %r10;
  st.global.u32 [%rd8+8], %r11;
  st.global.u32 [%rd8+12], %r12;
  st.global.u32 [%rd8+16], %r13;
  ret;
}
)";

TEST(Tensor, CpAsyncFillsPastSrcSizeAndReadsNothingBeyond) {
  Module m(kCpAsync);
  const uint32_t valid = 9;  // threads 0..8 copy 16 bytes, thread 9 eight, the rest none
  // Exactly the bytes the copies may read: a read past them would fault.
  std::vector<uint32_t> src(valid * 4 + 2);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 0x1000u + static_cast<uint32_t>(i);
  std::vector<uint32_t> out(32 * 5, 0xdeadbeef);
  DeviceTable mem;
  auto args = m.args("cp_async_k");
  args.add(mem.add(src)).add(mem.add(out)).add(valid);
  // The 4-byte copies of even threads read src[tid]: inside src for tid < 38.
  LaunchResult r = m.launch("cp_async_k", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (uint32_t t = 0; t < 32; ++t) {
    for (uint32_t w = 0; w < 4; ++w) {
      const uint32_t want = t < valid || (t == valid && w < 2) ? 0x1000u + 4 * t + w : 0u;
      EXPECT_EQ(out[5 * t + w], want) << "thread " << t << " word " << w;
    }
    EXPECT_EQ(out[5 * t + 4], t % 2 ? 0u : 0x1000u + t) << "thread " << t << " (ignore-src)";
  }
}

// One warp: A (16x16 f16, row-major) and B (16x8) through shared memory with
// ldmatrix, D = A B + C by mma.m16n8k16 (f32 accumulators), C and D in
// global memory by the accumulator layout. B is given as B^T (8x16,
// row-major: the "col" operand) for ldmatrix, or as B (16x8, row-major) for
// ldmatrix.trans.
std::string mma_ldmatrix_ptx(bool trans) {
  std::string b_rows = trans ? R"(
  // B (16x8 row-major): lane l < 16 gives row k = l, 16 bytes each.
  mul.lo.u32 %r20, %r1, 16;
  add.u32 %r21, %r3, %r20;
  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%b0, %b1}, [%r21];)"
                             : R"(
  // B^T (8x16 row-major): lane l < 16 gives row n = l % 8, columns 8 (l / 8).
  and.b32 %r20, %r1, 7;
  shr.u32 %r22, %r1, 3;
  mul.lo.u32 %r20, %r20, 32;
  mul.lo.u32 %r22, %r22, 16;
  add.u32 %r20, %r20, %r22;
  add.u32 %r21, %r3, %r20;
  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%b0, %b1}, [%r21];)";
  return std::string(R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry mma_k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
  .reg .b32 %r<40>;
  .reg .b32 %a<4>;
  .reg .b32 %b<2>;
  .reg .f32 %c<4>;
  .reg .f32 %d<4>;
  .reg .b64 %rd<20>;
  .shared .align 16 .b8 sa[512];
  .shared .align 16 .b8 sb[256];
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u64 %rd4, [d];
  mov.u32 %r1, %tid.x;
  // Stage A (512 bytes) and B (256 bytes) in shared memory, 16 + 8 bytes a lane.
  mul.wide.u32 %rd5, %r1, 16;
  add.u64 %rd6, %rd1, %rd5;
  ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd6];
  mov.u32 %r2, sa;
  mov.u32 %r3, sb;
  shl.b32 %r8, %r1, 4;
  add.u32 %r9, %r2, %r8;
  st.shared.v4.u32 [%r9], {%r4, %r5, %r6, %r7};
  mul.wide.u32 %rd7, %r1, 8;
  add.u64 %rd8, %rd2, %rd7;
  ld.global.v2.u32 {%r4, %r5}, [%rd8];
  shl.b32 %r8, %r1, 3;
  add.u32 %r9, %r3, %r8;
  st.shared.v2.u32 [%r9], {%r4, %r5};
  bar.sync 0;
  // A: lane l gives row (l % 8) + 8 ((l / 8) & 1), column 8 (l / 16).
  and.b32 %r10, %r1, 7;
  shr.u32 %r11, %r1, 3;
  and.b32 %r12, %r11, 1;
  shl.b32 %r12, %r12, 3;
  add.u32 %r10, %r10, %r12;
  shr.u32 %r13, %r1, 4;
  shl.b32 %r13, %r13, 3;
  mul.lo.u32 %r10, %r10, 32;
  shl.b32 %r13, %r13, 1;
  add.u32 %r10, %r10, %r13;
  add.u32 %r14, %r2, %r10;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%a0, %a1, %a2, %a3}, [%r14];)") +
         b_rows + R"(
  // C and D: lane l holds 4 floats, in the order the test lays them out.
  mul.wide.u32 %rd9, %r1, 16;
  add.u64 %rd10, %rd3, %rd9;
  ld.global.v4.f32 {%c0, %c1, %c2, %c3}, [%rd10];
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, {%b0, %b1}, {%c0, %c1, %c2, %c3};
  add.u64 %rd11, %rd4, %rd9;
  st.global.v4.f32 [%rd11], {%d0, %d1, %d2, %d3};
  ret;
}
)";
}

// Row and column of accumulator element i (0..3) of lane t.
int acc_row(int t, int i) { return (t >> 2) + 8 * (i >> 1); }
int acc_col(int t, int i) { return 2 * (t & 3) + (i & 1); }

void check_ldmatrix_mma(bool trans) {
  Module m(mma_ldmatrix_ptx(trans));
  float A[16][16], B[16][8], C[16][8];
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) A[r][k] = value(r * 16 + k, 1);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = value(k * 8 + n, 2);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) C[r][n] = value(r * 8 + n, 3);
  std::vector<uint16_t> a(256), b(128);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) a[r * 16 + k] = to_f16(A[r][k]);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) {
      if (trans) b[k * 8 + n] = to_f16(B[k][n]);
      else b[n * 16 + k] = to_f16(B[k][n]);
    }
  std::vector<float> c(128), d(128, -999.0f);
  for (int t = 0; t < 32; ++t)
    for (int i = 0; i < 4; ++i) c[4 * t + i] = C[acc_row(t, i)][acc_col(t, i)];
  DeviceTable mem;
  auto args = m.args("mma_k");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(mem.add(d));
  LaunchResult r = m.launch("mma_k", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 4; ++i) {
      const int row = acc_row(t, i), col = acc_col(t, i);
      float want = C[row][col];
      for (int k = 0; k < 16; ++k) want += A[row][k] * B[k][col];
      EXPECT_EQ(d[4 * t + i], want) << "D[" << row << "][" << col << "] (lane " << t << ", trans " << trans << ")";
    }
  }
}

TEST(Tensor, LdmatrixAndMmaF16ComputeTheProduct) { check_ldmatrix_mma(false); }
TEST(Tensor, LdmatrixTransAndMmaF16ComputeTheProduct) { check_ldmatrix_mma(true); }

// stmatrix (.x4, plain or .trans) from fragments the test lays out lane by
// lane, into shared rows 32 bytes apart (16 of them padding that must stay
// untouched), copied out whole; and movmatrix.trans of the first fragment.
std::string stmatrix_ptx(bool trans) {
  return std::string(R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry st_k(.param .u64 in, .param .u64 out, .param .u64 moved)
{
  .reg .b32 %r<24>;
  .reg .b64 %rd<12>;
  .shared .align 16 .b8 sm[1024];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u64 %rd3, [moved];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sm;
  shl.b32 %r3, %r1, 5;
  add.u32 %r4, %r2, %r3;
  mov.u32 %r5, -1;
  st.shared.v4.u32 [%r4], {%r5, %r5, %r5, %r5};
  st.shared.v4.u32 [%r4+16], {%r5, %r5, %r5, %r5};
  bar.sync 0;
  mul.wide.u32 %rd4, %r1, 16;
  add.u64 %rd5, %rd1, %rd4;
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd5];
  stmatrix.sync.aligned.m8n8.x4)") +
         (trans ? ".trans" : "") + R"(.shared.b16 [%r4], {%r6, %r7, %r8, %r9};
  bar.sync 0;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4];
  ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [%r4+16];
  mul.wide.u32 %rd6, %r1, 32;
  add.u64 %rd7, %rd2, %rd6;
  st.global.v4.u32 [%rd7], {%r10, %r11, %r12, %r13};
  st.global.v4.u32 [%rd7+16], {%r14, %r15, %r16, %r17};
  movmatrix.sync.aligned.m8n8.trans.b16 %r18, %r6;
  mul.wide.u32 %rd8, %r1, 4;
  add.u64 %rd9, %rd3, %rd8;
  st.global.u32 [%rd9], %r18;
  ret;
}
)";
}

// Element (r, c) of the fragment-defined matrix j: distinct 16-bit values.
uint16_t frag_value(int j, int r, int c) { return static_cast<uint16_t>(0x1000 + j * 64 + r * 8 + c); }

void check_stmatrix(bool trans) {
  Module m(stmatrix_ptx(trans));
  std::vector<uint32_t> in(128), out(256, 0), moved(32, 0);
  // Lane t's register j: row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1.
  for (int t = 0; t < 32; ++t)
    for (int j = 0; j < 4; ++j)
      in[4 * t + j] = frag_value(j, t / 4, 2 * (t % 4)) | static_cast<uint32_t>(frag_value(j, t / 4, 2 * (t % 4) + 1))
                                                              << 16;
  DeviceTable mem;
  auto args = m.args("st_k");
  args.add(mem.add(in)).add(mem.add(out)).add(mem.add(moved));
  LaunchResult r = m.launch("st_k", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  const auto* rows = reinterpret_cast<const uint16_t*>(out.data());
  for (int j = 0; j < 4; ++j)
    for (int row = 0; row < 8; ++row) {
      const uint16_t* at = rows + (8 * j + row) * 16;  // 32 bytes a row
      for (int c = 0; c < 8; ++c)
        EXPECT_EQ(at[c], trans ? frag_value(j, c, row) : frag_value(j, row, c))
            << "matrix " << j << " row " << row << " column " << c << " (trans " << trans << ")";
      for (int c = 8; c < 16; ++c) EXPECT_EQ(at[c], 0xffff) << "padding of row " << row << " written";
    }
  for (int t = 0; t < 32; ++t) {
    const uint32_t want = frag_value(0, 2 * (t % 4), t / 4) | static_cast<uint32_t>(frag_value(0, 2 * (t % 4) + 1, t / 4))
                                                                 << 16;
    EXPECT_EQ(moved[t], want) << "movmatrix lane " << t;
  }
}

TEST(Tensor, StmatrixStoresTheFragmentsRowByRow) { check_stmatrix(false); }
TEST(Tensor, StmatrixTransStoresTheirTranspose) { check_stmatrix(true); }

TEST(Tensor, StmatrixOfOtherShapesIsRefusedAtLaunch) {
  Module m(R"(
.version 8.6
.target sm_100a
.address_size 64
.visible .entry st_b8(.param .u64 p)
{
  .reg .b32 %r<4>;
  mov.u32 %r1, 0;
  stmatrix.sync.aligned.m16n8.x1.trans.shared.b8 [%r1], {%r1};
  ret;
}
)");
  std::vector<uint32_t> p(4);
  DeviceTable mem;
  auto args = m.args("st_b8");
  args.add(mem.add(p));
  LaunchResult r = m.launch("st_b8", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported);
  EXPECT_NE(r.message.find("this shape or type of stmatrix"), std::string::npos) << r.message;
}

// mma with fragments the test lays out itself, lane by lane: each lane loads
// na, nb and nc words and stores nd.
std::string mma_direct_ptx(const std::string& shape_types, int na, int nb, int nc, int nd) {
  auto regs = [](const char* p, int n) {
    std::string s = "{";
    for (int i = 0; i < n; ++i) s += std::string(i ? ", " : "") + "%" + p + std::to_string(i);
    return s + "}";
  };
  std::string s = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry mma_direct(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
  .reg .b32 %r<4>;
  .reg .b32 %a<4>;
  .reg .b32 %b<2>;
  .reg .b32 %c<4>;
  .reg .b32 %d<4>;
  .reg .b64 %rd<12>;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 16;
  ld.param.u64 %rd2, [a];
  add.u64 %rd2, %rd2, %rd1;
  ld.param.u64 %rd3, [b];
  add.u64 %rd3, %rd3, %rd1;
  ld.param.u64 %rd4, [c];
  add.u64 %rd4, %rd4, %rd1;
  ld.param.u64 %rd5, [d];
  add.u64 %rd5, %rd5, %rd1;
)";
  for (int i = 0; i < na; ++i) s += "  ld.global.u32 %a" + std::to_string(i) + ", [%rd2+" + std::to_string(4 * i) + "];\n";
  for (int i = 0; i < nb; ++i) s += "  ld.global.u32 %b" + std::to_string(i) + ", [%rd3+" + std::to_string(4 * i) + "];\n";
  for (int i = 0; i < nc; ++i) s += "  ld.global.u32 %c" + std::to_string(i) + ", [%rd4+" + std::to_string(4 * i) + "];\n";
  s += "  mma.sync.aligned." + shape_types + " " + regs("d", nd) + ", " + regs("a", na) + ", " + regs("b", nb) + ", " +
       regs("c", nc) + ";\n";
  for (int i = 0; i < nd; ++i) s += "  st.global.u32 [%rd5+" + std::to_string(4 * i) + "], %d" + std::to_string(i) + ";\n";
  return s + "  ret;\n}\n";
}

// Runs mma_direct on the lanes' words and checks every element of D against
// C + A B computed from the matrices (k products in order, in float32).
template <class FA, class FB, class FC>
void expect_product(Module& m, std::vector<uint32_t>& a, std::vector<uint32_t>& b, std::vector<uint32_t>& c, int K,
                    FA A, FB B, FC C) {
  std::vector<uint32_t> d(128);
  DeviceTable mem;
  auto args = m.args("mma_direct");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(mem.add(d));
  LaunchResult r = m.launch("mma_direct", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 4; ++i) {
      const int row = acc_row(t, i), col = acc_col(t, i);
      float want = C(row, col);
      for (int k = 0; k < K; ++k) want += A(row, k) * B(k, col);
      EXPECT_EQ(from_bits(d[4 * t + i]), want) << "D[" << row << "][" << col << "]";
    }
  }
}

TEST(Tensor, MmaBf16M16N8K16ByItsFragmentLayout) {
  Module m(mma_direct_ptx("m16n8k16.row.col.f32.bf16.bf16.f32", 4, 2, 4, 4));
  float A[16][16], B[16][8], C[16][8];
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) A[r][k] = value(r * 16 + k, 4);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = value(k * 8 + n, 5);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) C[r][n] = value(r * 8 + n, 6);
  std::vector<uint32_t> a(128), b(128), c(128);
  for (int t = 0; t < 32; ++t) {
    const int g = t >> 2, q = t & 3;
    for (int i = 0; i < 8; ++i) {  // a_i: row g + 8 ((i >> 1) & 1), column 2q + (i & 1) + 8 (i >> 2)
      const uint32_t h = to_bf16(A[g + 8 * ((i >> 1) & 1)][2 * q + (i & 1) + 8 * (i >> 2)]);
      a[4 * t + i / 2] |= h << (16 * (i & 1));
    }
    for (int i = 0; i < 4; ++i) {  // b_i: row 2q + (i & 1) + 8 (i >> 1), column g
      const uint32_t h = to_bf16(B[2 * q + (i & 1) + 8 * (i >> 1)][g]);
      b[4 * t + i / 2] |= h << (16 * (i & 1));
    }
    for (int i = 0; i < 4; ++i) c[4 * t + i] = bits(C[acc_row(t, i)][acc_col(t, i)]);
  }
  expect_product(m, a, b, c, 16, [&](int r, int k) { return A[r][k]; }, [&](int k, int n) { return B[k][n]; },
                 [&](int r, int n) { return C[r][n]; });
}

TEST(Tensor, MmaTf32M16N8K8ReadsNineteenBits) {
  Module m(mma_direct_ptx("m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, 4, 4));
  float A[16][8], B[8][8], C[16][8];
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 8; ++k) A[r][k] = value(r * 8 + k, 7);
  for (int k = 0; k < 8; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = value(k * 8 + n, 8);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) C[r][n] = value(r * 8 + n, 9);
  std::vector<uint32_t> a(128), b(128), c(128);
  for (int t = 0; t < 32; ++t) {
    const int g = t >> 2, q = t & 3;
    // a0 (g, q), a1 (g + 8, q), a2 (g, q + 4), a3 (g + 8, q + 4); b0 (q, g), b1 (q + 4, g).
    // The low 13 bits are noise the instruction must not read.
    for (int i = 0; i < 4; ++i) a[4 * t + i] = bits(A[g + 8 * (i & 1)][q + 4 * (i >> 1)]) | 0x1fffu;
    for (int i = 0; i < 2; ++i) b[4 * t + i] = bits(B[q + 4 * i][g]) | 0x0fffu;
    for (int i = 0; i < 4; ++i) c[4 * t + i] = bits(C[acc_row(t, i)][acc_col(t, i)]);
  }
  expect_product(m, a, b, c, 8, [&](int r, int k) { return A[r][k]; }, [&](int k, int n) { return B[k][n]; },
                 [&](int r, int n) { return C[r][n]; });
}

TEST(Tensor, MmaF16AccumulatorsRoundToHalf) {
  Module m(mma_direct_ptx("m16n8k8.row.col.f16.f16.f16.f16", 2, 1, 2, 2));
  std::vector<uint32_t> a(128), b(128), c(128), d(128);
  // A = 1 everywhere, B = 0.5, C = 0.25: each D = 8 * 0.5 + 0.25 = 4.25.
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 2; ++i) a[4 * t + i] = to_f16(1.0f) | to_f16(1.0f) << 16;
    b[4 * t] = to_f16(0.5f) | to_f16(0.5f) << 16;
    for (int i = 0; i < 2; ++i) c[4 * t + i] = to_f16(0.25f) | to_f16(0.25f) << 16;
  }
  DeviceTable mem;
  auto args = m.args("mma_direct");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(mem.add(d));
  LaunchResult r = m.launch("mma_direct", {1}, {32}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  const uint32_t want = to_f16(4.25f) | static_cast<uint32_t>(to_f16(4.25f)) << 16;
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(d[4 * t], want) << "lane " << t;
    EXPECT_EQ(d[4 * t + 1], want) << "lane " << t;
  }
}

TEST(Tensor, APartOfAWarpIsRefusedNotComputed) {
  Module m(mma_direct_ptx("m16n8k16.row.col.f32.f16.f16.f32", 4, 2, 4, 4));
  std::vector<uint32_t> a(128), b(128), c(128), d(128, 0x7777u);
  DeviceTable mem;
  auto args = m.args("mma_direct");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(c)).add(mem.add(d));
  LaunchResult r = m.launch("mma_direct", {1}, {16}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported) << r.message;
  EXPECT_NE(r.message.find("part of a warp"), std::string::npos) << r.message;
  for (uint32_t v : d) EXPECT_EQ(v, 0x7777u);
}

TEST(Tensor, ShapesAndFormsNotProvidedAreRefusedAtLaunch) {
  // An integer mma and a bulk copy: decoded, refused when launched.
  Module m(R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry int_mma(.param .u64 p)
{
  .reg .b32 %r<12>;
  mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, {%r8, %r9}, {%r0, %r1, %r2, %r3};
  ret;
}
)");
  std::vector<uint32_t> p(4);
  DeviceTable mem;
  auto args = m.args("int_mma");
  args.add(mem.add(p));
  LaunchResult r = m.launch("int_mma", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported);
  EXPECT_NE(r.message.find("this shape or type of mma"), std::string::npos) << r.message;
}

// What flash attention's masking and CUTLASS's tf32 GEMMs also need:
// comparisons of packed halves, and rounding f32 to tf32.
const char* kPackedAndTf32 = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry packed(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.u32 %r1, [%rd1];
  ld.global.u32 %r2, [%rd1+4];
  ld.global.u32 %r3, [%rd1+8];
  set.le.u32.f16x2 %r4, %r1, %r2;
  set.lt.f16x2.f16x2 %r5, %r1, %r2;
  setp.gt.f16x2 %p1|%p2, %r1, %r2;
  selp.u32 %r6, 1, 0, %p1;
  selp.u32 %r7, 1, 0, %p2;
  cvt.rna.tf32.f32 %r8, %r3;
  cvt.rn.tf32.f32 %r9, %r3;
  cvt.rz.tf32.f32 %r10, %r3;
  set.eq.u32.bf16x2 %r11, %r1, %r1;
  st.global.u32 [%rd2], %r4;
  st.global.u32 [%rd2+4], %r5;
  st.global.u32 [%rd2+8], %r6;
  st.global.u32 [%rd2+12], %r7;
  st.global.u32 [%rd2+16], %r8;
  st.global.u32 [%rd2+20], %r9;
  st.global.u32 [%rd2+24], %r10;
  st.global.u32 [%rd2+28], %r11;
  ret;
}
)";

TEST(Tensor, PackedHalfComparisonsAndTf32Rounding) {
  Module m(kPackedAndTf32);
  // a = (1.0, 3.0), b = (2.0, 3.0): low 1 <= 2 and 1 < 2; high 3 <= 3, not 3 < 3.
  const uint32_t a = to_f16(1.0f) | static_cast<uint32_t>(to_f16(3.0f)) << 16;
  const uint32_t b = to_f16(2.0f) | static_cast<uint32_t>(to_f16(3.0f)) << 16;
  struct Case {
    uint32_t in, rna, rn, rz;
  };
  // Halfway cases of the 13 dropped bits: ties away, ties to even, toward zero.
  const Case cases[] = {{0x3f801000u, 0x3f802000u, 0x3f800000u, 0x3f800000u},
                        {0x3f803000u, 0x3f804000u, 0x3f804000u, 0x3f802000u},
                        {0xbf801001u, 0xbf802000u, 0xbf802000u, 0xbf800000u},
                        {0x7fc00001u, 0x7fffe000u, 0x7fffe000u, 0x7fffe000u},
                        {0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u}};
  for (const Case& c : cases) {
    std::vector<uint32_t> in = {a, b, c.in}, out(8, 0xdeadbeef);
    DeviceTable mem;
    auto args = m.args("packed");
    args.add(mem.add(in)).add(mem.add(out));
    LaunchResult r = m.launch("packed", {1}, {1}, args, mem);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(out[0], 0xffffffffu);
    EXPECT_EQ(out[1], static_cast<uint32_t>(to_f16(1.0f)));
    EXPECT_EQ(out[2], 0u);
    EXPECT_EQ(out[3], 0u);
    EXPECT_EQ(out[4], c.rna) << std::hex << c.in;
    EXPECT_EQ(out[5], c.rn) << std::hex << c.in;
    EXPECT_EQ(out[6], c.rz) << std::hex << c.in;
    EXPECT_EQ(out[7], 0xffffffffu);
  }
}

const char* kBmsk = R"(
.version 7.8
.target sm_75
.address_size 64
.visible .entry bmsk_k(.param .u64 in, .param .u64 out)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 8;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r2, [%rd4];
  ld.global.u32 %r3, [%rd4+4];
  bmsk.clamp.b32 %r4, %r2, %r3;
  bmsk.wrap.b32 %r5, %r2, %r3;
  add.u64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r4;
  st.global.u32 [%rd5+4], %r5;
  ret;
}
)";

TEST(Tensor, BmskClampsOrWraps) {
  Module m(kBmsk);
  // {start, width}: in range, running past bit 31, 32 and past, wrapping.
  const uint32_t cases[][2] = {{0, 0}, {0, 1}, {4, 8}, {28, 8}, {0, 32}, {3, 40}, {33, 2}, {35, 3}};
  const uint32_t clamp[] = {0x0u, 0x1u, 0xff0u, 0xf0000000u, 0xffffffffu, 0xfffffff8u, 0x0u, 0x0u};
  const uint32_t wrap[] = {0x0u, 0x1u, 0xff0u, 0xf0000000u, 0x0u, 0x7f8u, 0x6u, 0x38u};
  const int n = 8;
  std::vector<uint32_t> in, out(2 * n, 0xdeadbeef);
  for (const auto& c : cases) in.insert(in.end(), {c[0], c[1]});
  DeviceTable mem;
  auto args = m.args("bmsk_k");
  args.add(mem.add(in)).add(mem.add(out));
  LaunchResult r = m.launch("bmsk_k", {1}, {n}, args, mem);
  ASSERT_TRUE(r.ok()) << r.message;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(out[2 * i], clamp[i]) << "clamp " << cases[i][0] << ", " << cases[i][1];
    EXPECT_EQ(out[2 * i + 1], wrap[i]) << "wrap " << cases[i][0] << ", " << cases[i][1];
  }
}

}  // namespace
}  // namespace rgpu::ptx::testing
