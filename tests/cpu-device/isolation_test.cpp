// Tests of isolation groups (rgpuCtxSetIsolationGroup): kernels, copies,
// memsets, frees and pointer queries reach only memory of their own group.
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "cuda_lib.h"

namespace rgpu::cpudev::test {
namespace {

using SetGroupFn = decltype(&::rgpuCtxSetIsolationGroup);

// One context of a group, with the test kernels loaded and an int buffer.
struct Tenant {
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  CUdeviceptr buf = 0;
};

class CpuDeviceIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(nullptr, cu.handle);
    set_group_ = cu.rgpuCtxSetIsolationGroup;
    ASSERT_NE(nullptr, set_group_);
    std::ifstream in(RGPU_CPUDEV_TEST_FATBIN, std::ios::binary);
    fatbin_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ASSERT_GT(fatbin_.size(), 16u);
  }
  void TearDown() override {
    for (CUcontext c : made_) EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxDestroy(c));
  }

  // A new context in `group` (none set when group < 0), current afterwards,
  // with its module and a 4-int buffer holding `fill` in every int.
  Tenant tenant(long long group, int fill) {
    Tenant t;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxCreate(&t.ctx, nullptr, 0, 0));
    made_.push_back(t.ctx);
    if (group >= 0) {
      EXPECT_EQ(CUDA_SUCCESS, set_group_(t.ctx, static_cast<unsigned long long>(group)));
    }
    EXPECT_EQ(CUDA_SUCCESS, cu.cuModuleLoadData(&t.mod, fatbin_.data()));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&t.buf, 16));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemsetD32(t.buf, static_cast<unsigned>(fill), 4));
    return t;
  }
  CUfunction fn(const Tenant& t, const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuModuleGetFunction(&f, t.mod, name));
    return f;
  }
  // Launches `name` with one thread in `t` (made current) and synchronizes.
  CUresult run(const Tenant& t, const char* name, void** args) {
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(t.ctx));
    CUresult r = cu.cuLaunchKernel(fn(t, name), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
    if (r != CUDA_SUCCESS) return r;
    return cu.cuCtxSynchronize();
  }
  int read_int(const Tenant& t, CUdeviceptr p) {
    int v = -1;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(t.ctx));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(&v, p, 4));
    return v;
  }
  CUdeviceptr global(const Tenant& t, const char* name) {
    CUdeviceptr p = 0;
    size_t size = 0;
    EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(t.ctx));
    EXPECT_EQ(CUDA_SUCCESS, cu.cuModuleGetGlobal(&p, &size, t.mod, name));
    return p;
  }

  CudaLib& cu = lib();
  SetGroupFn set_group_ = nullptr;
  std::vector<char> fatbin_;
  std::vector<CUcontext> made_;
};

TEST_F(CpuDeviceIsolation, KernelsCannotReachAnotherGroupsMemory) {
  Tenant victim = tenant(2, 0x1111);
  CUdeviceptr counter = global(victim, "g_counter");
  ASSERT_EQ(5, read_int(victim, counter));
  long long zero = 0;

  // A store into the victim's allocation.
  Tenant a = tenant(1, 0);
  void* store_args[] = {&victim.buf, &zero};
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, run(a, "poke", store_args));
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuCtxSynchronize());  // sticky for the attacker

  // A load from it into the attacker's own buffer.
  Tenant b = tenant(1, 0);
  void* load_args[] = {&victim.buf, &b.buf};
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, run(b, "peek", load_args));

  // An atomic on it.
  Tenant c = tenant(1, 0);
  void* atomic_args[] = {&victim.buf};
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, run(c, "bump", atomic_args));

  // A store into a global of the victim's module.
  Tenant e = tenant(1, 0);
  void* global_args[] = {&counter, &zero};
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, run(e, "poke", global_args));

  // The victim's bytes are unchanged and the victim is unaffected.
  EXPECT_EQ(0x1111, read_int(victim, victim.buf));
  EXPECT_EQ(5, read_int(victim, counter));
  void* own_args[] = {&victim.buf};
  EXPECT_EQ(CUDA_SUCCESS, run(victim, "bump", own_args));
  EXPECT_EQ(0x1112, read_int(victim, victim.buf));
  // The attacker's own buffer kept its value (the faulting load wrote nothing).
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(b.ctx));
  int v = -1;
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cu.cuMemcpyDtoH(&v, b.buf, 4));  // b is sticky now
}

TEST_F(CpuDeviceIsolation, SameGroupSharesMemory) {
  Tenant owner = tenant(3, 7);
  CUdeviceptr counter = global(owner, "g_counter");
  Tenant peer = tenant(3, 0);
  void* load_args[] = {&owner.buf, &peer.buf};
  EXPECT_EQ(CUDA_SUCCESS, run(peer, "peek", load_args));
  EXPECT_EQ(7, read_int(peer, peer.buf));
  void* atomic_args[] = {&counter};
  EXPECT_EQ(CUDA_SUCCESS, run(peer, "bump", atomic_args));
  EXPECT_EQ(6, read_int(owner, counter));
  // Copies between the two contexts' memory are allowed too.
  EXPECT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(peer.ctx));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoD(owner.buf, peer.buf, 16));
}

TEST_F(CpuDeviceIsolation, GroupZeroIsTheDefault) {
  // Contexts never given a group share group 0, as before groups existed.
  Tenant x = tenant(-1, 9);
  Tenant y = tenant(-1, 0);
  void* load_args[] = {&x.buf, &y.buf};
  EXPECT_EQ(CUDA_SUCCESS, run(y, "peek", load_args));
  EXPECT_EQ(9, read_int(y, y.buf));
  // Explicitly setting 0 is the same group.
  Tenant z = tenant(0, 0);
  void* bump_args[] = {&x.buf};
  EXPECT_EQ(CUDA_SUCCESS, run(z, "bump", bump_args));
  EXPECT_EQ(10, read_int(x, x.buf));
  // But group 0 kernels do not reach another group either.
  Tenant other = tenant(4, 1);
  Tenant w = tenant(-1, 0);
  void* steal_args[] = {&other.buf, &w.buf};
  EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, run(w, "peek", steal_args));
  EXPECT_EQ(1, read_int(other, other.buf));
}

TEST_F(CpuDeviceIsolation, CopiesMemsetsFreesAndQueriesStayInTheGroup) {
  Tenant victim = tenant(6, 0x2222);
  Tenant a = tenant(5, 0x3333);
  ASSERT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(a.ctx));
  int host[4] = {};
  int junk[4] = {9, 9, 9, 9};
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoH(host, victim.buf, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyHtoD(victim.buf, junk, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoD(a.buf, victim.buf, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoD(victim.buf, a.buf, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpy(a.buf, victim.buf, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyAsync(victim.buf, a.buf, 16, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpyDtoHAsync(host, victim.buf, 16, nullptr));
  // The victim's memory named as "host" memory of a copy.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cu.cuMemcpyHtoD(a.buf, reinterpret_cast<const void*>(static_cast<uintptr_t>(victim.buf)), 16));
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = junk;
  c.srcPitch = 16;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = victim.buf;
  c.dstPitch = 16;
  c.WidthInBytes = 16;
  c.Height = 1;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemcpy2D(&c));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD8(victim.buf, 0, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD32Async(victim.buf, 0, 4, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemsetD2D8(victim.buf, 16, 0, 16, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuMemFree(victim.buf));
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cu.cuMemGetAddressRange(&base, &size, victim.buf));
  CUcontext owner = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, victim.buf));
  // The context's own memory works as usual.
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(host, a.buf, 16));
  EXPECT_EQ(0x3333, host[0]);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemGetAddressRange(&base, &size, a.buf + 4));
  EXPECT_EQ(a.buf, base);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, a.buf));
  EXPECT_EQ(a.ctx, owner);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuStreamSynchronize(nullptr));
  // Nothing of the victim changed, and it is still allocated.
  std::vector<int> seen(4);
  ASSERT_EQ(CUDA_SUCCESS, cu.cuCtxSetCurrent(victim.ctx));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemcpyDtoH(seen.data(), victim.buf, 16));
  EXPECT_EQ(std::vector<int>(4, 0x2222), seen);
  EXPECT_EQ(CUDA_SUCCESS, cu.cuMemGetAddressRange(&base, &size, victim.buf));
}

TEST_F(CpuDeviceIsolation, GroupIsFixedOnceTheContextOwnsMemory) {
  CUcontext ctx;
  ASSERT_EQ(CUDA_SUCCESS, cu.cuCtxCreate(&ctx, nullptr, 0, 0));
  made_.push_back(ctx);
  EXPECT_EQ(CUDA_SUCCESS, set_group_(ctx, 11));
  EXPECT_EQ(CUDA_SUCCESS, set_group_(ctx, 12));  // nothing allocated yet
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, set_group_(ctx, ~0ull));
  CUdeviceptr p;
  ASSERT_EQ(CUDA_SUCCESS, cu.cuMemAlloc(&p, 8));
  EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, set_group_(ctx, 13));
  EXPECT_EQ(CUDA_SUCCESS, set_group_(ctx, 12));  // the same group again is fine
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, set_group_(reinterpret_cast<CUcontext>(0x10), 1));
}

}  // namespace
}  // namespace rgpu::cpudev::test
