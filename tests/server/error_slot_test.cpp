// ErrorSlot: which reason goes with which error, and that none outlives it.
#include "error_slot.h"

#include <gtest/gtest.h>

#include <capnp/message.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "rgpu/common/reason.h"
#include "server_metrics.h"

namespace rgpu::server {
namespace {

// A stand-in for the CPU device's rgpuTakeErrorReason: one note, taken once.
CUresult g_device_code = CUDA_SUCCESS;
std::string g_device_text;
int g_device_takes = 0;

CUresult take_device_reason(CUresult code, char* text, size_t size, size_t* length) {
  ++g_device_takes;
  size_t n = 0;
  if (code == g_device_code) {
    n = std::min(g_device_text.size(), size - 1);
    std::memcpy(text, g_device_text.data(), n);
  }
  text[n] = '\0';
  *length = n;
  g_device_code = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

class ErrorSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_reason();
    g_device_code = CUDA_SUCCESS;
    g_device_text.clear();
    g_device_takes = 0;
  }
};

TEST_F(ErrorSlotTest, TheServersNoteComesFirstAndNamesTheCall) {
  ErrorSlot slot(&take_device_reason);
  g_device_code = CUDA_ERROR_OUT_OF_MEMORY;
  g_device_text = "the device's";
  note_reason(CUDA_ERROR_OUT_OF_MEMORY, "past the quota");
  EXPECT_EQ(slot.reason(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), "cuMemAlloc: past the quota");
  EXPECT_EQ(g_device_takes, 1);  // the device's note is cleared all the same
  EXPECT_EQ(slot.reason(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), "");
}

TEST_F(ErrorSlotTest, ANoteOfAnotherCodeIsNotThisErrorsReason) {
  ErrorSlot slot(nullptr);
  note_reason(CUDA_ERROR_OUT_OF_MEMORY, "past the quota");
  EXPECT_EQ(slot.reason(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc"), "");
  // ...and it is gone: the next call's error does not take it.
  EXPECT_EQ(slot.reason(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), "");
}

TEST_F(ErrorSlotTest, ClearReasonDropsANoteBeforeTheNextCall) {
  ErrorSlot slot(nullptr);
  note_reason(CUDA_ERROR_NOT_SUPPORTED, "stale");
  clear_reason();
  EXPECT_EQ(slot.reason(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel"), "");
}

TEST_F(ErrorSlotTest, NotesStayOnTheirThread) {
  ErrorSlot slot(nullptr);
  std::thread other([] { note_reason(CUDA_ERROR_NOT_SUPPORTED, "another thread's"); });
  other.join();
  EXPECT_EQ(slot.reason(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel"), "");
}

TEST_F(ErrorSlotTest, TheDevicesNoteThenAFaultOfTheSameCode) {
  ErrorSlot slot(&take_device_reason);
  g_device_code = CUDA_ERROR_NOT_SUPPORTED;
  g_device_text = "kernel k cannot run on the CPU device: unsupported instruction";
  EXPECT_EQ(slot.reason(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel"),
            "cuLaunchKernel: kernel k cannot run on the CPU device: unsupported instruction");
  // A fault arrives from the device's thread; the reply reporting its code takes it, once.
  std::thread device([&] {
    const char text[] = "kernel k: illegal address at 0x10";
    ErrorSlot::device_fault(&slot, CUDA_ERROR_ILLEGAL_ADDRESS, text, sizeof text - 1);
  });
  device.join();
  EXPECT_EQ(slot.reason(CUDA_ERROR_LAUNCH_FAILED, ""), "");
  EXPECT_EQ(slot.reason(CUDA_ERROR_ILLEGAL_ADDRESS, ""), "kernel k: illegal address at 0x10");
  EXPECT_EQ(slot.reason(CUDA_ERROR_ILLEGAL_ADDRESS, ""), "");
}

TEST_F(ErrorSlotTest, ADetailThatNamesItsCallIsNotNamedTwice) {
  ErrorSlot slot(nullptr);
  note_reason(3000, "cudnnCreate: not on this server");
  EXPECT_EQ(slot.reason(3000, "cudnnCreate"), "cudnnCreate: not on this server");
  note_reason(3000, "cudnnCreateX: other");
  EXPECT_EQ(slot.reason(3000, "cudnnCreate"), "cudnnCreate: cudnnCreateX: other");
}

TEST_F(ErrorSlotTest, ReasonsAreBoundedAndPrintable) {
  ErrorSlot slot(nullptr);
  note_reason(CUDA_ERROR_NOT_SUPPORTED, "kernel \x1b[31mred\n" + std::string(4000, 'x'));
  const std::string why = slot.reason(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel");
  EXPECT_EQ(why.size(), kMaxReasonBytes);
  EXPECT_EQ(why.find('\x1b'), std::string::npos);
  EXPECT_EQ(why.find('\n'), std::string::npos);
  ErrorSlot::device_fault(&slot, CUDA_ERROR_ILLEGAL_ADDRESS, std::string(4000, 'y').c_str(), 4000);
  EXPECT_EQ(slot.reason(CUDA_ERROR_ILLEGAL_ADDRESS, "").size(), kMaxReasonBytes);
}

TEST_F(ErrorSlotTest, TheFirstAsyncErrorIsKeptWithItsReasonUntilTaken) {
  ErrorSlot slot(nullptr);
  note_reason(CUDA_ERROR_NOT_SUPPORTED, "kernel k refused");
  slot.record(7, CUDA_ERROR_NOT_SUPPORTED, wire::Api::DRIVER, "cuLaunchKernel");
  note_reason(CUDA_ERROR_INVALID_VALUE, "second");
  slot.record(8, CUDA_ERROR_INVALID_VALUE, wire::Api::DRIVER, "cuMemsetD8");
  capnp::MallocMessageBuilder builder;
  auto reply = builder.initRoot<wire::Reply>();
  slot.take(reply);
  EXPECT_EQ(reply.getAsyncError(), static_cast<uint32_t>(CUDA_ERROR_NOT_SUPPORTED));
  EXPECT_EQ(reply.getAsyncErrorCall(), 7u);
  EXPECT_EQ(std::string(reply.getAsyncErrorReason().cStr()), "cuLaunchKernel: kernel k refused");
  auto again = builder.initRoot<wire::Reply>();
  slot.take(again);
  EXPECT_EQ(again.getAsyncError(), 0u);
  EXPECT_FALSE(again.hasAsyncErrorReason());
}

TEST(CallApiName, SpellsTheTypedCallsAsTheApiDoes) {
  EXPECT_EQ(call_api_name(wire::Call::LAUNCH_KERNEL), "cuLaunchKernel");
  EXPECT_EQ(call_api_name(wire::Call::MEM_ALLOC), "cuMemAlloc");
  EXPECT_EQ(call_api_name(wire::Call::STREAM_SYNCHRONIZE), "cuStreamSynchronize");
  EXPECT_EQ(call_api_name(wire::Call::GRAPH), "");  // many functions: the reason names its own
}

}  // namespace
}  // namespace rgpu::server
