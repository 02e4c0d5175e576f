// wmma.load, wmma.mma and wmma.store on the CPU device: for every shape and
// type rgpu runs, a kernel loads A, B and C (row or column major, with a
// stride wider than the matrix, padding the kernel must not read), scales
// the C fragment element by element, multiplies and stores D; the test
// checks D against A B + s C computed here, and that the padding of D's
// buffer is left alone. Also the accumulator layout rgpu documents, shared
// and generic addresses, the default stride, integer wrap and .satfinite,
// and the refusal of what does not run.
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "float_bits.h"
#include "harness.h"

namespace rgpu::ptx::testing {
namespace {

struct Shape {
  const char* name;
  int m, n, k;
};
constexpr Shape kM16N16K16{"m16n16k16", 16, 16, 16};
constexpr Shape kM32N8K16{"m32n8k16", 32, 8, 16};
constexpr Shape kM8N32K16{"m8n32k16", 8, 32, 16};
constexpr Shape kM16N16K8{"m16n16k8", 16, 16, 8};

int type_bytes(const std::string& t) { return t == "f16" || t == "bf16" ? 2 : t == "s8" || t == "u8" ? 1 : 4; }

// Registers of a fragment, as the PTX ISA fixes them.
int frag_regs(const Shape& s, char matrix, const std::string& t) {
  if (matrix == 'c') return t == "f16" ? 4 : 8;
  if (t == "f16") return 8;
  const int elems = matrix == 'a' ? s.m * s.k : s.k * s.n;
  return elems / 32 / (4 / type_bytes(t));
}

// One wmma product: types, layouts and strides (in elements) of each matrix.
struct Case {
  Shape shape{};
  std::string a_type, b_type, c_type, d_type;
  bool a_col = false, b_col = false, c_col = false, d_col = false;
  int pad = 8;          // each stride is the line's length plus this
  bool scale = true;    // C's fragment scaled element-wise before the mma
  bool satfinite = false;
  std::string space = ".global";  // of every load and store; "" is generic
  bool default_stride = false;    // no stride operand (pad must be 0)
  std::string a_noise;            // mask or'ed into A's elements (tf32's ignored bits)
};

Case make(const Shape& s, const char* a, const char* b, const char* c, const char* d) {
  Case k;
  k.shape = s;
  k.a_type = a;
  k.b_type = b;
  k.c_type = c;
  k.d_type = d;
  return k;
}

bool is_int(const std::string& t) { return t == "s8" || t == "u8"; }

std::string regs(const char* p, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += std::string(i ? ", " : "") + "%" + p + std::to_string(i);
  return s + "}";
}

std::string wmma_ptx(const Case& c) {
  const Shape& s = c.shape;
  const int na = frag_regs(s, 'a', c.a_type), nb = frag_regs(s, 'b', c.b_type);
  const int nc = frag_regs(s, 'c', c.c_type), nd = frag_regs(s, 'c', c.d_type);
  auto lay = [](bool col) { return col ? ".col" : ".row"; };
  auto stride = [&](const char* reg) { return c.default_stride ? std::string() : std::string(", ") + reg; };
  std::string mma_types;
  if (c.a_type == "f16") mma_types = "." + c.d_type + "." + c.c_type;
  else mma_types = "." + c.d_type + "." + c.a_type + "." + c.b_type + "." + c.c_type;
  std::string p = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry wmma_k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d,
                       .param .u32 lda, .param .u32 ldb, .param .u32 ldc, .param .u32 ldd)
{
  .reg .b32 %a<8>, %b<8>, %c<8>, %d<8>, %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u64 %rd4, [d];
  ld.param.u32 %r1, [lda];
  ld.param.u32 %r2, [ldb];
  ld.param.u32 %r3, [ldc];
  ld.param.u32 %r4, [ldd];
)";
  p += "  wmma.load.a.sync.aligned" + std::string(lay(c.a_col)) + "." + s.name + c.space + "." + c.a_type + " " +
       regs("a", na) + ", [%rd1]" + stride("%r1") + ";\n";
  p += "  wmma.load.b.sync.aligned" + std::string(lay(c.b_col)) + "." + s.name + c.space + "." + c.b_type + " " +
       regs("b", nb) + ", [%rd2]" + stride("%r2") + ";\n";
  p += "  wmma.load.c.sync.aligned" + std::string(lay(c.c_col)) + "." + s.name + c.space + "." + c.c_type + " " +
       regs("c", nc) + ", [%rd3]" + stride("%r3") + ";\n";
  if (c.scale) {
    // What nvcuda::wmma code does for beta C: the same operation on every
    // element of the fragment, here C *= 2 (C *= 3 for s32).
    p += "  mov.b32 %r5, 0x40004000;\n";  // (2.0, 2.0) in f16x2
    for (int i = 0; i < nc; ++i) {
      const std::string r = "%c" + std::to_string(i);
      if (c.c_type == "f32") p += "  mul.f32 " + r + ", " + r + ", 0f40000000;\n";
      else if (c.c_type == "f16") p += "  mul.rn.f16x2 " + r + ", " + r + ", %r5;\n";
      else p += "  mul.lo.s32 " + r + ", " + r + ", 3;\n";
    }
  }
  p += "  wmma.mma.sync.aligned" + std::string(lay(c.a_col)) + lay(c.b_col) + "." + s.name + mma_types +
       (c.satfinite ? ".satfinite" : "") + " " + regs("d", nd) + ", " + regs("a", na) + ", " + regs("b", nb) + ", " +
       regs("c", nc) + ";\n";
  p += "  wmma.store.d.sync.aligned" + std::string(lay(c.d_col)) + "." + s.name + c.space + "." + c.d_type +
       " [%rd4], " + regs("d", nd) + stride("%r4") + ";\n";
  return p + "  ret;\n}\n";
}

// A matrix of `rows` x `cols` laid out by rows or by columns with a stride
// of its line length plus pad, the padding filled with `fill`.
struct Stored {
  int rows, cols, ld, bytes;
  bool col;
  std::vector<uint8_t> mem;
  Stored(int r, int c, bool by_cols, int pad, int elem_bytes, uint8_t fill)
      : rows(r), cols(c), ld((by_cols ? r : c) + pad), bytes(elem_bytes), col(by_cols),
        mem(static_cast<size_t>(ld) * (by_cols ? c : r) * elem_bytes, fill) {}
  size_t at(int r, int c) const { return (col ? static_cast<size_t>(c) * ld + r : static_cast<size_t>(r) * ld + c) * bytes; }
  void put(int r, int c, uint32_t v) {
    for (int i = 0; i < bytes; ++i) mem[at(r, c) + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  uint32_t get(int r, int c) const {
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(mem[at(r, c) + i]) << (8 * i);
    return v;
  }
};

// Element (r, c) of a test matrix: small values, exact in every type and
// with exact products and sums in f32.
float real_value(int r, int c, int salt) { return static_cast<float>(((r * 7 + c * 5 + salt * 13) % 11) - 5) * 0.5f; }
int64_t int_value(int r, int c, int salt, bool is_unsigned) {
  const int v = (r * 37 + c * 23 + salt * 11) % 251;
  return is_unsigned ? v : v - 125;
}

uint32_t encode(const std::string& t, float f, int64_t i) {
  if (t == "f16" || t == "bf16") return t == "bf16" ? to_bf16(f) : to_f16(f);  // the values used are exact in both
  if (t == "f32" || t == "tf32") return bits(f);
  return static_cast<uint32_t>(i);  // s8, u8, s32: the low bytes
}

// Runs case c and checks D = A B + s C element by element, and D's padding.
// `c_value` gives C's element (r, c) when the test wants particular values.
void run_case(const Case& c, std::function<int64_t(int, int)> c_value = nullptr) {
  SCOPED_TRACE(wmma_ptx(c));
  Module m(wmma_ptx(c));
  const Shape& s = c.shape;
  const int pad = c.default_stride ? 0 : c.pad;
  Stored A(s.m, s.k, c.a_col, pad, type_bytes(c.a_type), 0x7f), B(s.k, s.n, c.b_col, pad, type_bytes(c.b_type), 0x7f);
  Stored C(s.m, s.n, c.c_col, pad, type_bytes(c.c_type), 0x7f), D(s.m, s.n, c.d_col, pad, type_bytes(c.d_type), 0x5a);
  const bool integer = is_int(c.a_type);
  const uint32_t noise = c.a_noise.empty() ? 0 : static_cast<uint32_t>(std::stoul(c.a_noise, nullptr, 0));
  for (int r = 0; r < s.m; ++r)
    for (int k = 0; k < s.k; ++k)
      A.put(r, k, encode(c.a_type, real_value(r, k, 1), int_value(r, k, 1, c.a_type == "u8")) | noise);
  for (int k = 0; k < s.k; ++k)
    for (int n = 0; n < s.n; ++n) B.put(k, n, encode(c.b_type, real_value(k, n, 2), int_value(k, n, 2, c.b_type == "u8")));
  for (int r = 0; r < s.m; ++r)
    for (int n = 0; n < s.n; ++n) {
      const int64_t iv = c_value ? c_value(r, n) : int_value(r, n, 3, false) * 1000;
      C.put(r, n, encode(c.c_type, real_value(r, n, 3), iv));
    }
  const std::vector<uint8_t> d_before = D.mem;
  DeviceTable mem;
  auto args = m.args("wmma_k");
  args.add(mem.add(A.mem)).add(mem.add(B.mem)).add(mem.add(C.mem)).add(mem.add(D.mem));
  args.add(static_cast<uint32_t>(A.ld)).add(static_cast<uint32_t>(B.ld)).add(static_cast<uint32_t>(C.ld));
  args.add(static_cast<uint32_t>(D.ld));
  LaunchResult res = m.launch("wmma_k", {1}, {32}, args, mem);
  ASSERT_TRUE(res.ok()) << res.message;
  int bad = 0;
  for (int r = 0; r < s.m; ++r) {
    for (int n = 0; n < s.n; ++n) {
      const uint32_t got = D.get(r, n);
      if (integer) {
        const int64_t cv = c_value ? c_value(r, n) : int_value(r, n, 3, false) * 1000;
        int64_t want = cv * (c.scale ? 3 : 1);
        want = static_cast<int32_t>(static_cast<uint32_t>(want));  // the scaling wraps in s32
        for (int k = 0; k < s.k; ++k)
          want += int_value(r, k, 1, c.a_type == "u8") * int_value(k, n, 2, c.b_type == "u8");
        if (c.satfinite) want = want > INT32_MAX ? INT32_MAX : want < INT32_MIN ? INT32_MIN : want;
        const int32_t w = static_cast<int32_t>(static_cast<uint32_t>(want));
        if (static_cast<int32_t>(got) != w && bad++ < 5)
          ADD_FAILURE() << "D[" << r << "][" << n << "] = " << static_cast<int32_t>(got) << ", want " << w;
      } else {
        float want = real_value(r, n, 3) * (c.scale ? 2.0f : 1.0f);
        for (int k = 0; k < s.k; ++k) want += real_value(r, k, 1) * real_value(k, n, 2);
        const float g = c.d_type == "f16" ? from_f16(static_cast<uint16_t>(got)) : from_bits(got);
        if (g != want && bad++ < 5) ADD_FAILURE() << "D[" << r << "][" << n << "] = " << g << ", want " << want;
      }
    }
  }
  EXPECT_EQ(bad, 0) << "elements wrong";
  // The padding between D's lines is not written.
  std::vector<uint8_t> pad_now = D.mem, pad_before = d_before;
  for (int r = 0; r < s.m; ++r)
    for (int n = 0; n < s.n; ++n)
      for (int i = 0; i < D.bytes; ++i) pad_now[D.at(r, n) + i] = pad_before[D.at(r, n) + i] = 0;
  EXPECT_EQ(pad_now, pad_before) << "D's padding was written";
}

const Shape kHalfShapes[] = {kM16N16K16, kM32N8K16, kM8N32K16};

TEST(Wmma, F16EveryLayoutF32Accumulators) {
  for (int layouts = 0; layouts < 16; ++layouts) {
    Case c = make(kM16N16K16, "f16", "f16", "f32", "f32");
    c.a_col = layouts & 1;
    c.b_col = layouts & 2;
    c.c_col = layouts & 4;
    c.d_col = layouts & 8;
    run_case(c);
  }
}

TEST(Wmma, F16EveryShapeAndAccumulatorType) {
  const char* acc[][2] = {{"f32", "f32"}, {"f16", "f16"}, {"f32", "f16"}, {"f16", "f32"}};
  for (const Shape& s : kHalfShapes) {
    for (const auto& cd : acc) {
      Case c = make(s, "f16", "f16", cd[0], cd[1]);
      c.a_col = s.m == 32;
      c.b_col = s.n != 32;
      c.d_col = s.m == 8;
      run_case(c);
    }
  }
}

TEST(Wmma, Bf16EveryShape) {
  for (const Shape& s : kHalfShapes) {
    for (int layouts = 0; layouts < 4; ++layouts) {
      Case c = make(s, "bf16", "bf16", "f32", "f32");
      c.a_col = layouts & 1;
      c.b_col = layouts & 2;
      c.c_col = layouts & 1;
      run_case(c);
    }
  }
}

TEST(Wmma, Tf32M16N16K8IgnoresTheLowThirteenBits) {
  for (int layouts = 0; layouts < 4; ++layouts) {
    Case c = make(kM16N16K8, "tf32", "tf32", "f32", "f32");
    c.a_col = layouts & 1;
    c.b_col = layouts & 2;
    c.d_col = layouts & 1;
    c.a_noise = "0x1fff";
    run_case(c);
  }
}

TEST(Wmma, IntegerEveryShapeAndSignedness) {
  const char* ab[][2] = {{"s8", "s8"}, {"u8", "u8"}, {"s8", "u8"}, {"u8", "s8"}};
  for (const Shape& s : kHalfShapes) {
    for (const auto& t : ab) {
      for (int layouts = 0; layouts < 4; ++layouts) {
        Case c = make(s, t[0], t[1], "s32", "s32");
        c.a_col = layouts & 1;
        c.b_col = layouts & 2;
        c.c_col = layouts & 2;
        c.d_col = layouts & 1;
        run_case(c);
      }
    }
  }
}

TEST(Wmma, IntegerOverflowWrapsOrSaturates) {
  // C near the ends of the s32 range: A B's sums push it past them.
  auto near_ends = [](int r, int n) -> int64_t { return (r + n) % 2 ? INT32_MAX - 100 : INT32_MIN + 100; };
  for (bool sat : {false, true}) {
    Case c = make(kM16N16K16, "u8", "u8", "s32", "s32");
    c.scale = false;
    c.satfinite = sat;
    run_case(c, near_ends);
    Case n = make(kM16N16K16, "s8", "s8", "s32", "s32");
    n.scale = false;
    n.satfinite = sat;
    run_case(n, near_ends);
  }
}

TEST(Wmma, GenericAddressesAndDefaultStride) {
  Case g = make(kM32N8K16, "f16", "f16", "f32", "f16");
  g.space = "";
  g.a_col = true;
  run_case(g);
  Case d = make(kM8N32K16, "s8", "s8", "s32", "s32");
  d.default_stride = true;
  d.b_col = true;
  run_case(d);
  Case b = make(kM16N16K16, "bf16", "bf16", "f32", "f32");
  b.default_stride = true;
  b.space = "";
  b.c_col = true;
  run_case(b);
}

// The accumulator layout docs/ptx-interpreter.md gives: lane t holds row
// t / 2, columns 8 (t % 2) to 8 (t % 2) + 7, register i column 8 (t % 2) + i;
// for f16, register i packs columns 2i and 2i + 1 of those (low half first).
// Loaded from shared memory, which the kernel fills first.
TEST(Wmma, AccumulatorLayoutIsRowsByLaneFromSharedMemory) {
  Module m(R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry layout(.param .u64 c, .param .u64 out)
{
  .reg .b32 %c<8>, %h<4>, %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p;
  .shared .align 32 .b8 tile[2048];
  ld.param.u64 %rd1, [c];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  // Copy 2048 bytes into tile, 64 a lane.
  mov.u32 %r2, 0;
copy:
  shl.b32 %r3, %r1, 6;
  add.u32 %r3, %r3, %r2;
  cvt.u64.u32 %rd3, %r3;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r4, [%rd4];
  mov.u32 %r5, tile;
  add.u32 %r5, %r5, %r3;
  st.shared.u32 [%r5], %r4;
  add.u32 %r2, %r2, 4;
  setp.lt.u32 %p, %r2, 64;
  @%p bra copy;
  bar.sync 0;
  mov.u32 %r6, tile;
  // f32 C, 16x16 by rows with stride 24; then f16 C, by columns with stride 16, after it.
  wmma.load.c.sync.aligned.row.m16n16k16.shared.f32 {%c0, %c1, %c2, %c3, %c4, %c5, %c6, %c7}, [%r6], 24;
  add.u32 %r7, %r6, 1536;
  wmma.load.c.sync.aligned.col.m16n16k16.shared::cta.f16 {%h0, %h1, %h2, %h3}, [%r7], 16;
  mul.wide.u32 %rd5, %r1, 48;
  add.u64 %rd6, %rd2, %rd5;
  st.global.v4.u32 [%rd6], {%c0, %c1, %c2, %c3};
  st.global.v4.u32 [%rd6+16], {%c4, %c5, %c6, %c7};
  st.global.v4.u32 [%rd6+32], {%h0, %h1, %h2, %h3};
  ret;
}
)");
  std::vector<uint32_t> c(512, 0xffffffffu), out(32 * 12, 0);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) c[r * 24 + n] = static_cast<uint32_t>(r * 100 + n);
  auto* halves = reinterpret_cast<uint16_t*>(c.data() + 384);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) halves[n * 16 + r] = static_cast<uint16_t>(0x1000 + r * 16 + n);
  DeviceTable mem;
  auto args = m.args("layout");
  args.add(mem.add(c)).add(mem.add(out));
  LaunchResult res = m.launch("layout", {1}, {32}, args, mem);
  ASSERT_TRUE(res.ok()) << res.message;
  for (int t = 0; t < 32; ++t) {
    const int row = t / 2, col0 = 8 * (t % 2);
    for (int i = 0; i < 8; ++i)
      EXPECT_EQ(out[12 * t + i], static_cast<uint32_t>(row * 100 + col0 + i)) << "lane " << t << " register " << i;
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = 0x1000 + row * 16 + col0 + 2 * i;
      EXPECT_EQ(out[12 * t + 8 + i], lo | (lo + 1) << 16) << "lane " << t << " f16 register " << i;
    }
  }
}

// A kernel of one instruction: decoded, refused when launched, never run.
void expect_refused(const std::string& inst, const std::string& decl) {
  SCOPED_TRACE(inst);
  Module m(R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry refused(.param .u64 p)
{
  .reg .b32 %r<40>;
  .reg .f64 %fd<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
)" + decl + "  " + inst + "\n  st.global.u32 [%rd1], 1;\n  ret;\n}\n");
  std::vector<uint32_t> p(4, 0);
  DeviceTable mem;
  auto args = m.args("refused");
  args.add(mem.add(p));
  LaunchResult r = m.launch("refused", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported) << r.message;
  EXPECT_NE(r.message.find("this shape or type of wmma"), std::string::npos) << r.message;
  EXPECT_EQ(p[0], 0u) << "the kernel ran";
}

TEST(Wmma, SubByteDoubleAndOtherFormsAreRefusedAtLaunch) {
  expect_refused("wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd1], 32;", "");
  expect_refused("wmma.load.b.sync.aligned.col.m8n8k128.global.b1 {%r1}, [%rd1], 128;", "");
  expect_refused("wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32 {%r1, %r2}, {%r3}, {%r4}, {%r5, %r6};",
                 "");
  expect_refused("wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32 {%r1, %r2}, {%r3}, {%r4}, {%r5, %r6};", "");
  expect_refused("wmma.load.a.sync.aligned.row.m8n8k4.global.f64 {%fd1}, [%rd1], 4;", "");
  expect_refused("wmma.mma.sync.aligned.row.col.m8n8k4.rn.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd5, %fd6};",
                 "");
  // A shape of mma.sync, not of wmma; f16 accumulators with .satfinite; bf16 for C.
  expect_refused("wmma.load.a.sync.aligned.row.m16n8k16.global.f16 {%r1, %r2, %r3, %r4}, [%rd1], 16;", "");
  expect_refused("wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16.satfinite {%r1, %r2, %r3, %r4}, "
                 "{%r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12}, {%r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20}, "
                 "{%r21, %r22, %r23, %r24};",
                 "");
  expect_refused("wmma.load.c.sync.aligned.row.m16n16k16.global.bf16 {%r1, %r2, %r3, %r4}, [%rd1], 16;", "");
  // tf32 with a shape of its own only, and f16 not with it.
  expect_refused("wmma.load.a.sync.aligned.row.m16n16k16.global.tf32 {%r1, %r2, %r3, %r4}, [%rd1], 16;", "");
  expect_refused("wmma.load.a.sync.aligned.row.m16n16k8.global.f16 {%r1, %r2, %r3, %r4}, [%rd1], 8;", "");
}

TEST(Wmma, APartOfAWarpOrDifferentAddressesAreRefused) {
  Case c = make(kM16N16K16, "f16", "f16", "f32", "f32");
  Module m(wmma_ptx(c));
  std::vector<uint16_t> a(24 * 16), b(24 * 16);
  std::vector<float> cm(24 * 16), d(24 * 16, 7.0f);
  DeviceTable mem;
  auto args = m.args("wmma_k");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(cm)).add(mem.add(d));
  args.add(24u).add(24u).add(24u).add(24u);
  LaunchResult r = m.launch("wmma_k", {1}, {16}, args, mem);
  EXPECT_EQ(r.fault, Fault::kUnsupported) << r.message;
  EXPECT_NE(r.message.find("part of a warp"), std::string::npos) << r.message;
  for (float v : d) EXPECT_EQ(v, 7.0f);

  // Each lane its own address: .aligned wants one for the warp.
  Module own(R"(
.version 7.8
.target sm_80
.address_size 64
.visible .entry own(.param .u64 p)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r9, %tid.x;
  mul.wide.u32 %rd2, %r9, 4;
  add.u64 %rd3, %rd1, %rd2;
  wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd3], 16;
  ret;
}
)");
  std::vector<float> p(512);
  DeviceTable mem2;
  auto args2 = own.args("own");
  args2.add(mem2.add(p));
  r = own.launch("own", {1}, {32}, args2, mem2);
  EXPECT_EQ(r.fault, Fault::kUnsupported) << r.message;
  EXPECT_NE(r.message.find("differs across the warp"), std::string::npos) << r.message;
}

TEST(Wmma, ReadingPastAnAllocationFaults) {
  Case c = make(kM16N16K16, "f16", "f16", "f32", "f32");
  Module m(wmma_ptx(c));
  // A's buffer is one line short for its stride of 24.
  std::vector<uint16_t> a(24 * 15), b(24 * 16);
  std::vector<float> cm(24 * 16), d(24 * 16);
  DeviceTable mem;
  auto args = m.args("wmma_k");
  args.add(mem.add(a)).add(mem.add(b)).add(mem.add(cm)).add(mem.add(d));
  args.add(24u).add(24u).add(24u).add(24u);
  LaunchResult r = m.launch("wmma_k", {1}, {32}, args, mem);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
}

}  // namespace
}  // namespace rgpu::ptx::testing
