// Tests of events: records, queries, synchronization and elapsed time.
#include <chrono>
#include <thread>

#include "cuda_lib.h"
#include "gate.h"

namespace rgpu::cpudev::test {
namespace {

using CpuDeviceEvent = CpuDeviceTest;

void CUDA_CB sleep_20ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

TEST_F(CpuDeviceEvent, ElapsedTimeMeasuresTheStream) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUevent start, stop;
  CU_OK(cu.cuEventCreate(&start, 0));
  CU_OK(cu.cuEventCreate(&stop, CU_EVENT_BLOCKING_SYNC));
  CU_OK(cu.cuEventRecord(start, s));
  CU_OK(cu.cuLaunchHostFunc(s, &sleep_20ms, nullptr));
  CU_OK(cu.cuEventRecord(stop, s));
  CU_OK(cu.cuEventSynchronize(stop));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuEventQuery(stop));
  float ms = -1;
  CU_OK(cu.cuEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 5000.0f);
  CU_OK(cu.cuEventElapsedTime(&ms, stop, start));
  EXPECT_LE(ms, -19.0f);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuEventElapsedTime(nullptr, start, stop));
  CU_OK(cu.cuEventDestroy(start));
  CU_OK(cu.cuEventDestroy(stop));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceEvent, DisableTimingAndUnrecordedEvents) {
  CUevent timed, untimed, fresh;
  CU_OK(cu.cuEventCreate(&timed, 0));
  CU_OK(cu.cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  CU_OK(cu.cuEventCreate(&fresh, 0));
  CU_OK(cu.cuEventRecord(timed, nullptr));
  CU_OK(cu.cuEventRecord(untimed, nullptr));
  CU_OK(cu.cuEventSynchronize(untimed));
  CU_OK(cu.cuEventSynchronize(timed));
  float ms = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventElapsedTime(&ms, timed, untimed));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventElapsedTime(&ms, timed, fresh));
  // Never recorded: complete as far as queries go.
  EXPECT_EQ(CUDA_SUCCESS, cu.cuEventQuery(fresh));
  CU_OK(cu.cuEventSynchronize(fresh));
  CU_OK(cu.cuEventElapsedTime(&ms, timed, timed));
  EXPECT_EQ(0.0f, ms);
  CU_OK(cu.cuEventDestroy(timed));
  CU_OK(cu.cuEventDestroy(untimed));
  CU_OK(cu.cuEventDestroy(fresh));
}

TEST_F(CpuDeviceEvent, QueryIsNotReadyUntilTheStreamGetsThere) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent a, b;
  CU_OK(cu.cuEventCreate(&a, 0));
  CU_OK(cu.cuEventCreate(&b, 0));
  CU_OK(cu.cuEventRecord(a, s));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  CU_OK(cu.cuEventRecord(b, s));
  ASSERT_TRUE(gate.wait_entered(1));
  CU_OK(cu.cuEventSynchronize(a));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuEventQuery(a));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuEventQuery(b));
  float ms = 0;
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuEventElapsedTime(&ms, a, b));
  // Re-recording `a` behind the gate makes it pending again.
  CU_OK(cu.cuEventRecord(a, s));
  EXPECT_EQ(CUDA_ERROR_NOT_READY, cu.cuEventQuery(a));
  gate.open();
  CU_OK(cu.cuEventSynchronize(a));
  EXPECT_EQ(CUDA_SUCCESS, cu.cuEventQuery(b));
  CU_OK(cu.cuEventElapsedTime(&ms, b, a));
  EXPECT_GE(ms, 0.0f);
  CU_OK(cu.cuEventDestroy(a));
  CU_OK(cu.cuEventDestroy(b));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceEvent, DestroyedAndInvalidEvents) {
  CUevent e;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuEventCreate(nullptr, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuEventCreate(&e, 0x100));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cu.cuEventCreate(&e, CU_EVENT_INTERPROCESS));
  CU_OK(cu.cuEventCreate(&e, 0));
  CU_OK(cu.cuEventDestroy(e));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventDestroy(e));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventRecord(e, nullptr));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventQuery(e));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventSynchronize(e));
  float ms;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventElapsedTime(&ms, e, e));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventQuery(nullptr));
}

TEST_F(CpuDeviceEvent, DestroyingAPendingEventIsSafe) {
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, 0));
  Gate gate;
  CU_OK(cu.cuLaunchHostFunc(s, &Gate::hold, &gate));
  CU_OK(cu.cuEventRecord(e, s));
  CU_OK(cu.cuEventDestroy(e));
  gate.open();
  CU_OK(cu.cuStreamSynchronize(s));
  CU_OK(cu.cuStreamDestroy(s));
}

TEST_F(CpuDeviceEvent, EventOfAnotherContextCannotBeRecordedHere) {
  CUevent e;
  CU_OK(cu.cuEventCreate(&e, 0));
  CUcontext other;
  CU_OK(cu.cuCtxCreate(&other, nullptr, 0, 0));
  CUstream s;
  CU_OK(cu.cuStreamCreate(&s, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventRecord(e, s));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cu.cuEventRecord(e, nullptr));
  CU_OK(cu.cuCtxDestroy(other));
  CU_OK(cu.cuEventDestroy(e));
}

}  // namespace
}  // namespace rgpu::cpudev::test
