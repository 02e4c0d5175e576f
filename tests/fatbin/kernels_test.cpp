// Kernel parameter layouts and attributes from cubin .nv.info and PTX
// .entry; both sources must agree for the same kernel.
#include "test_util.h"

namespace rgpu::fatbin {
namespace {

using testing::find_kernel;
using testing::layout;
using testing::Layout;
using testing::load;
using testing::text;

constexpr char kMixed[] = "_Z5mixedc5MixedsPdx";
constexpr char kWide[] = "_Z4wideh4WidePi";
constexpr char kFilled[] = "_Z6filledILi3EEvPi";

std::vector<KernelInfo> cubin_kernels(const std::string& file) {
  std::vector<std::uint8_t> elf = load(file);
  Result<std::vector<KernelInfo>> ks = kernels_from_cubin(Bytes(elf));
  EXPECT_TRUE(ks) << ks.status().to_string();
  return ks ? std::move(*ks) : std::vector<KernelInfo>{};
}

std::vector<KernelInfo> ptx_kernels(const std::vector<std::uint8_t>& ptx) {
  Result<std::vector<KernelInfo>> ks = kernels_from_ptx(text(ptx));
  EXPECT_TRUE(ks) << ks.status().to_string();
  return ks ? std::move(*ks) : std::vector<KernelInfo>{};
}

TEST(CubinKernels, LayoutsAndAttributes) {
  std::vector<KernelInfo> ks = cubin_kernels("kernels_sm80.cubin");
  ASSERT_EQ(ks.size(), 5u);

  const KernelInfo* axpy = find_kernel(ks, "axpy");
  ASSERT_NE(axpy, nullptr);
  EXPECT_EQ(layout(*axpy), (Layout{{0, 0, 4}, {1, 8, 8}, {2, 16, 8}, {3, 24, 4}}));
  EXPECT_EQ(axpy->param_size, 28u);
  EXPECT_EQ(axpy->max_threads, 0u);
  EXPECT_GT(axpy->registers, 0u);
  EXPECT_EQ(axpy->static_shared, 0u);

  const KernelInfo* mixed = find_kernel(ks, kMixed);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(layout(*mixed), (Layout{{0, 0, 1}, {1, 8, 24}, {2, 32, 2}, {3, 40, 8}, {4, 48, 8}}));
  EXPECT_EQ(mixed->param_size, 56u);
  EXPECT_EQ(mixed->static_shared, 1024u);

  const KernelInfo* wide = find_kernel(ks, kWide);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(layout(*wide), (Layout{{0, 0, 1}, {1, 16, 32}, {2, 48, 8}}));
  EXPECT_EQ(wide->param_size, 56u);

  const KernelInfo* filled = find_kernel(ks, kFilled);
  ASSERT_NE(filled, nullptr);
  EXPECT_EQ(layout(*filled), (Layout{{0, 0, 8}}));
  EXPECT_EQ(filled->max_threads, 128u);
  EXPECT_EQ(filled->max_ntid, (std::array<std::uint32_t, 3>{128, 1, 1}));

  const KernelInfo* noargs = find_kernel(ks, "noargs");
  ASSERT_NE(noargs, nullptr);
  EXPECT_TRUE(noargs->params.empty());
  EXPECT_EQ(noargs->param_size, 0u);
}

TEST(CubinKernels, ElfSectionsAndSymbols) {
  std::vector<std::uint8_t> elf = load("kernels_sm80.cubin");
  Result<ElfFile> f = ElfFile::parse(Bytes(elf));
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_EQ(f->arch(), 80u);
  const ElfSection* text_axpy = f->find_section(".text.axpy");
  ASSERT_NE(text_axpy, nullptr);
  EXPECT_GT(f->section_data(*text_axpy).size(), 0u);
  const ElfSection* shared = f->find_section(std::string(".nv.shared.") + kMixed);
  ASSERT_NE(shared, nullptr);
  EXPECT_TRUE(f->section_data(*shared).empty());  // NOBITS
  bool found = false;
  for (const ElfSymbol& s : f->symbols()) {
    if (s.name == kFilled) {
      found = true;
      EXPECT_EQ(s.type, 2);  // STT_FUNC
      ASSERT_LT(s.section, f->sections().size());
      EXPECT_EQ(f->sections()[s.section].name, std::string(".text.") + kFilled);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(f->find_section(".no.such"), nullptr);
}

// The same kernels, described by nvcc's PTX and by ptxas's cubin.
TEST(PtxKernels, AgreeWithCubinForEveryKernel) {
  std::vector<KernelInfo> from_cubin = cubin_kernels("kernels_sm80.cubin");
  std::vector<KernelInfo> from_ptx = ptx_kernels(load("kernels_sm80.ptx"));
  ASSERT_EQ(from_ptx.size(), from_cubin.size());
  for (const KernelInfo& c : from_cubin) {
    SCOPED_TRACE(c.name);
    const KernelInfo* p = find_kernel(from_ptx, c.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(layout(*p), layout(c));
    EXPECT_EQ(p->param_size, c.param_size);
    EXPECT_EQ(p->max_threads, c.max_threads);
  }
}

TEST(PtxKernels, HandWrittenDirectivesAndPaddingAgreeWithPtxas) {
  std::vector<KernelInfo> from_ptx = ptx_kernels(load("launch.ptx", RGPU_FATBIN_TEST_SRC));
  std::vector<KernelInfo> from_cubin = cubin_kernels("launch_sm80.cubin");
  ASSERT_EQ(from_ptx.size(), 3u);  // the .func is not a kernel

  const KernelInfo* req = find_kernel(from_ptx, "req");
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(layout(*req), (Layout{{0, 0, 8}, {1, 16, 40}, {2, 56, 2}}));
  EXPECT_EQ(req->param_size, 58u);
  EXPECT_EQ(req->req_ntid, (std::array<std::uint32_t, 3>{64, 2, 1}));
  EXPECT_EQ(req->max_threads, 128u);

  const KernelInfo* bounded = find_kernel(from_ptx, "bounded");
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(layout(*bounded), (Layout{{0, 0, 4}, {1, 8, 8}}));
  EXPECT_EQ(bounded->max_threads, 256u);

  const KernelInfo* packed = find_kernel(from_ptx, "packed");
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(layout(*packed), (Layout{{0, 0, 1}, {1, 4, 6}, {2, 10, 2}, {3, 16, 8}}));

  for (const KernelInfo& p : from_ptx) {
    SCOPED_TRACE(p.name);
    const KernelInfo* c = find_kernel(from_cubin, p.name);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(layout(*c), layout(p));
    EXPECT_EQ(c->param_size, p.param_size);
    EXPECT_EQ(c->max_ntid, p.max_ntid);
    EXPECT_EQ(c->req_ntid, p.req_ntid);
    EXPECT_EQ(c->max_threads, p.max_threads);
  }
}

TEST(PtxKernels, SyntaxVariants) {
  const char* ptx = R"(
    .version 8.0 .target sm_80 .address_size 64
    // .entry commented_out(.param .u64 x)
    /* .entry also_commented(
         .param .u64 y) */
    .extern .func ext(.param .b64 a);
    .weak .entry w (  .param .s8 a , .param .align 8 .b8 b [ 3 ][ 4 ] , .param .u64 .ptr .align 16 c )
    .maxntid 32, 4
    .pragma "nounroll; { not a brace";
    { { ret; } }
    .entry bare { ret; }
    .entry declared_only(.param .b32 z);
  )";
  Result<std::vector<KernelInfo>> ks = kernels_from_ptx(ptx);
  ASSERT_TRUE(ks) << ks.status().to_string();
  ASSERT_EQ(ks->size(), 3u);
  EXPECT_EQ((*ks)[0].name, "w");
  EXPECT_EQ(layout((*ks)[0]), (Layout{{0, 0, 1}, {1, 8, 12}, {2, 32, 8}}));
  EXPECT_EQ((*ks)[0].param_size, 40u);
  EXPECT_EQ((*ks)[0].max_threads, 128u);
  EXPECT_EQ((*ks)[1].name, "bare");
  EXPECT_TRUE((*ks)[1].params.empty());
  EXPECT_EQ((*ks)[2].name, "declared_only");
  EXPECT_EQ(layout((*ks)[2]), (Layout{{0, 0, 4}}));
}

TEST(PtxKernels, MalformedEntriesAreErrors) {
  const char* bad[] = {
      ".entry (.param .u64 a) {}",
      ".entry k(.param a) {}",
      ".entry k(.param .u64) {}",
      ".entry k(.param .u64 a .param .u64 b) {}",
      ".entry k(.param .align 3 .b8 a[4]) {}",
      ".entry k(.param .b8 a[zz]) {}",
      ".entry k(.param .b8 a[4) {}",
      ".entry k(.param .b8 a[2147483647][2147483647]) {}",
      ".entry k(.u64 a) {}",
      ".entry k(.param .u64 a",
      ".entry k() .maxntid x {}",
      "}",
  };
  for (const char* b : bad) {
    Result<std::vector<KernelInfo>> ks = kernels_from_ptx(b);
    EXPECT_FALSE(ks) << b;
    if (!ks) {
      EXPECT_NE(ks.status().message().find("ptx line"), std::string::npos);
    }
  }
}

TEST(ImageKernels, FatbinCubinAndPtxEntriesAgree) {
  std::vector<std::uint8_t> fb = load("multi.fatbin");
  Result<std::vector<KernelInfo>> c = kernels_from_image(Bytes(fb), 80);
  Result<std::vector<KernelInfo>> p = kernels_from_image(Bytes(fb), 80, SelectPolicy::kPtxOnly);
  ASSERT_TRUE(c) << c.status().to_string();
  ASSERT_TRUE(p) << p.status().to_string();
  ASSERT_EQ(c->size(), 5u);
  ASSERT_EQ(p->size(), 5u);
  for (const KernelInfo& k : *c) {
    const KernelInfo* q = find_kernel(*p, k.name);
    ASSERT_NE(q, nullptr) << k.name;
    EXPECT_EQ(layout(k), layout(*q)) << k.name;
    EXPECT_EQ(k.param_size, q->param_size) << k.name;
  }
  EXPECT_FALSE(kernels_from_image(Bytes(fb), 70));
}

}  // namespace
}  // namespace rgpu::fatbin
