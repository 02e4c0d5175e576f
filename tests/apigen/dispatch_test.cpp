// The generated calls end to end in one process: the client's pack
// function, the wire bytes, the server's row against a fake session and a
// fake driver, and the client's unpack of the reply. One test per kind of
// annotation, and the refusals a hostile client must get.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string_view>

#include "../../protocol/generated/driver_pack.h"
#include "apigen_test_pack.h"
#include "fakes.h"
#include "rgpu/protocol/library_sizes.h"

namespace rgpu::server::apigen_test {
namespace {

namespace d = apigen::driver;
namespace t = apigen::test;
using protocol::ArgReader;
using protocol::ArgWriter;
using protocol::HandleKind;
using protocol::make_handle;

std::span<const std::byte> view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

class GeneratedCalls : public ::testing::Test {
 protected:
  void SetUp() override { driver_log() = DriverLog{}; }

  InvokeOutcome run(const DispatchRow* row, ArgWriter& w) {
    EXPECT_NE(nullptr, row);
    if (!row) return {};
    return row->run(env, view(w.bytes()));
  }

  FakeEnv env{fake_driver()};
  const uint64_t function = make_handle(HandleKind::kFunction, 0x300);
  const uint64_t event = make_handle(HandleKind::kEvent, 0x301);
  const uint64_t stream = make_handle(HandleKind::kStream, 0x302);
  const uint64_t module = make_handle(HandleKind::kModule, 0x303);
};

TEST_F(GeneratedCalls, RowsAreFoundByTheirLockedOrdinal) {
  EXPECT_STREQ("cuMemGetInfo_v2", find_driver_row(1)->name);
  EXPECT_STREQ("cuMemGetAddressRange_v2", find_driver_row(2)->name);
  EXPECT_EQ(nullptr, find_driver_row(0));
  EXPECT_EQ(nullptr, find_driver_row(100000));
  EXPECT_EQ(find_driver_row(d::k_cuFuncGetName), find_row(wire::Api::DRIVER, d::k_cuFuncGetName));
  EXPECT_EQ(nullptr, find_row(wire::Api::CUDNN, d::k_cuFuncGetName));  // no generated cuDNN calls
  ASSERT_NE(nullptr, find_row(wire::Api::CUBLAS, 1));                  // cublas.lock's first
  EXPECT_STREQ("cublasCreate_v2", find_row(wire::Api::CUBLAS, 1)->name);
  EXPECT_EQ(wire::Api::CUBLAS, find_row(wire::Api::CUBLAS, 1)->api);
  for (size_t i = 0; const DispatchRow* row = find_driver_row_at(i); ++i) {
    EXPECT_EQ(row, find_driver_row(row->function)) << row->name;
    EXPECT_EQ(wire::Api::DRIVER, row->api);
  }
}

TEST_F(GeneratedCalls, OutScalarsRoundTrip) {
  size_t free_bytes = 0, total = 0;
  ArgWriter w;
  d::pack_cuMemGetInfo_v2(w, &free_bytes, &total);
  InvokeOutcome out = run(find_driver_row(d::k_cuMemGetInfo_v2), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code) << out.message;
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuMemGetInfo_v2(r, &free_bytes, &total));
  EXPECT_EQ(100u, free_bytes);
  EXPECT_EQ(200u, total);
}

TEST_F(GeneratedCalls, OptionalOutsReachTheDriverAsNull) {
  int least = 9;
  ArgWriter w;
  d::pack_cuCtxGetStreamPriorityRange(w, &least, nullptr);
  InvokeOutcome out = run(find_driver_row(d::k_cuCtxGetStreamPriorityRange), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  EXPECT_TRUE(driver_log().got_null_out);
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuCtxGetStreamPriorityRange(r, &least, nullptr));
  EXPECT_EQ(0, least);
}

TEST_F(GeneratedCalls, DevicePointerIsCheckedAgainstTheLedger) {
  const uint64_t mem = env.allocate(256);
  CUdeviceptr base = 0;
  size_t size = 0;
  ArgWriter w;
  d::pack_cuMemGetAddressRange_v2(w, &base, &size, mem + 10);
  InvokeOutcome out = run(find_driver_row(d::k_cuMemGetAddressRange_v2), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuMemGetAddressRange_v2(r, &base, &size, mem + 10));
  EXPECT_EQ(0x100u, size);

  // Memory that is not this context's (another context's, or none): the
  // fake ledger does not know it; CUDA answers NOT_FOUND, the driver is not asked.
  driver_log() = DriverLog{};
  ArgWriter other;
  d::pack_cuMemGetAddressRange_v2(other, &base, &size, mem + 4096);
  EXPECT_EQ(CUDA_ERROR_NOT_FOUND, run(find_driver_row(d::k_cuMemGetAddressRange_v2), other).code);
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, StringOutAndFunctionHandle) {
  env.put(HandleKind::kFunction, function, reinterpret_cast<void*>(uintptr_t{0xF0}));
  std::string_view name;
  ArgWriter w;
  d::pack_cuFuncGetName(w, &name, function);
  InvokeOutcome out = run(find_driver_row(d::k_cuFuncGetName), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  EXPECT_EQ(reinterpret_cast<CUfunction>(uintptr_t{0xF0}), driver_log().function);
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuFuncGetName(r, &name, function));
  EXPECT_EQ("vector_add", name);
}

TEST_F(GeneratedCalls, ForgedAndWrongKindHandlesAreRefused) {
  env.put(HandleKind::kEvent, event, reinterpret_cast<void*>(uintptr_t{0xE0}));
  env.put(HandleKind::kFunction, function, reinterpret_cast<void*>(uintptr_t{0xF0}));
  std::string_view name;
  for (uint64_t h : {make_handle(HandleKind::kFunction, 0x999), event, uint64_t{0},
                     protocol::serial_of(function) /* the serial without its kind */}) {
    ArgWriter w;
    d::pack_cuFuncGetName(w, &name, h);
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, run(find_driver_row(d::k_cuFuncGetName), w).code) << std::hex << h;
  }
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, AFunctionTheDriverLacksIsNotSupported) {
  auto table = fake_driver();
  table->cuFuncGetName = nullptr;
  FakeEnv bare(table);
  bare.put(HandleKind::kFunction, function, reinterpret_cast<void*>(uintptr_t{0xF0}));
  std::string_view name;
  ArgWriter w;
  d::pack_cuFuncGetName(w, &name, function);
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, find_driver_row(d::k_cuFuncGetName)->run(bare, view(w.bytes())).code);
}

TEST_F(GeneratedCalls, CreateRegistersAndDestroyRemoves) {
  ArgWriter w;
  t::pack_cuEventCreate(w, event, CU_EVENT_DISABLE_TIMING);
  ASSERT_EQ(CUDA_SUCCESS, run(find_test_row(t::k_cuEventCreate), w).code);
  EXPECT_EQ(unsigned{CU_EVENT_DISABLE_TIMING}, driver_log().flags);
  EXPECT_EQ(reinterpret_cast<void*>(uintptr_t{0xE0E0}), env.find(HandleKind::kEvent, event));

  ArgWriter again;  // the same handle twice: the object made is destroyed, not leaked
  t::pack_cuEventCreate(again, event, 0);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuEventCreate), again).code);
  EXPECT_EQ(1u, driver_log().destroyed.size());

  ArgWriter destroy;
  t::pack_cuEventDestroy_v2(destroy, event);
  ASSERT_EQ(CUDA_SUCCESS, run(find_test_row(t::k_cuEventDestroy_v2), destroy).code);
  EXPECT_EQ(2u, driver_log().destroyed.size());
  EXPECT_EQ(nullptr, env.find(HandleKind::kEvent, event));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, run(find_test_row(t::k_cuEventDestroy_v2), destroy).code);
}

TEST_F(GeneratedCalls, CreateWithAHandleOfAnotherKindIsRefusedBeforeTheDriver) {
  for (uint64_t h : {stream, make_handle(HandleKind::kEvent, 5) /* reserved serial */}) {
    ArgWriter w;
    t::pack_cuEventCreate(w, h, 0);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuEventCreate), w).code);
  }
  EXPECT_EQ(0, driver_log().calls);
  EXPECT_EQ(0u, env.handle_count());
}

TEST_F(GeneratedCalls, EventFlagsOutsideTheMaskAreRefusedBeforeTheDriver) {
  ArgWriter create;
  d::pack_cuEventCreate(create, event, CU_EVENT_DISABLE_TIMING | 0x40);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_driver_row(d::k_cuEventCreate), create).code);
  env.put(HandleKind::kEvent, event, reinterpret_cast<void*>(uintptr_t{0xE0}));
  ArgWriter record;
  d::pack_cuEventRecordWithFlags(record, event, protocol::kNullStream, CU_EVENT_RECORD_EXTERNAL << 1);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_driver_row(d::k_cuEventRecordWithFlags), record).code);
  EXPECT_EQ(0, driver_log().calls);
  ArgWriter external;
  d::pack_cuEventRecordWithFlags(external, event, protocol::kNullStream, CU_EVENT_RECORD_EXTERNAL);
  EXPECT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuEventRecordWithFlags), external).code);
  EXPECT_EQ(unsigned{CU_EVENT_RECORD_EXTERNAL}, driver_log().flags);
}

TEST_F(GeneratedCalls, AnEventIsRecordedOnlyInItsOwnContext) {
  // Registered under another context than the call's (its check= hook).
  ASSERT_TRUE(env.add(HandleKind::kEvent, event, reinterpret_cast<void*>(uintptr_t{0xE0}),
                      protocol::primary_context(1), nullptr));
  for (uint32_t ordinal : {d::k_cuEventRecord, d::k_cuEventRecordWithFlags}) {
    ArgWriter w;
    if (ordinal == d::k_cuEventRecord) {
      d::pack_cuEventRecord(w, event, protocol::kNullStream);
    } else {
      d::pack_cuEventRecordWithFlags(w, event, protocol::kNullStream, 0);
    }
    InvokeOutcome out = run(find_driver_row(ordinal), w);
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, out.code) << out.message;
  }
  EXPECT_EQ(0, driver_log().calls);
  // Its own context's, on the per-thread stream (what cuEventRecord_ptsz sends for NULL).
  const uint64_t own = make_handle(HandleKind::kEvent, 0x310);
  env.put(HandleKind::kEvent, own, reinterpret_cast<void*>(uintptr_t{0xE1}));
  ArgWriter w;
  d::pack_cuEventRecord(w, own, protocol::kPerThreadStream);
  ASSERT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuEventRecord), w).code);
  EXPECT_EQ(CU_STREAM_PER_THREAD, driver_log().stream);
}

TEST_F(GeneratedCalls, ACreatePastTheHandleLimitIsOutOfMemoryBeforeTheDriver) {
  for (uint64_t n = 0; env.handle_room(); ++n) {
    env.put(HandleKind::kStream, make_handle(HandleKind::kStream, 0x1000 + n), reinterpret_cast<void*>(uintptr_t{1}));
  }
  ArgWriter w;
  d::pack_cuEventCreate(w, event, 0);
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, run(find_driver_row(d::k_cuEventCreate), w).code);
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, ElapsedTimeTravelsAsAnOutScalar) {
  env.put(HandleKind::kEvent, event, reinterpret_cast<void*>(uintptr_t{0xE0}));
  float ms = 0;
  ArgWriter w;
  d::pack_cuEventElapsedTime_v2(w, &ms, event, event);
  InvokeOutcome out = run(find_driver_row(d::k_cuEventElapsedTime_v2), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code) << out.message;
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuEventElapsedTime_v2(r, &ms, event, event));
  EXPECT_FLOAT_EQ(2.5f, ms);
  EXPECT_TRUE(d::reports_async_errors(d::k_cuEventQuery));
  EXPECT_FALSE(d::reports_async_errors(d::k_cuEventElapsedTime_v2));
}

TEST_F(GeneratedCalls, TwoDimensionalMemsetsAreCheckedForTheirWholeRegion) {
  const uint64_t mem = env.allocate(256);
  auto* bytes = reinterpret_cast<unsigned char*>(mem);
  std::memset(bytes, 0, 256);
  // 4 rows of 8 bytes, 16 apart: 56 bytes from mem, the gaps untouched.
  ArgWriter w;
  d::pack_cuMemsetD2D8_v2(w, mem, 16, 0xAB, 8, 4);
  ASSERT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuMemsetD2D8_v2), w).code);
  EXPECT_EQ(0xAB, bytes[0]);
  EXPECT_EQ(0xAB, bytes[7]);
  EXPECT_EQ(0, bytes[8]);
  EXPECT_EQ(0xAB, bytes[48]);
  EXPECT_EQ(0xAB, bytes[55]);
  EXPECT_EQ(0, bytes[56]);
  const int calls = driver_log().calls;
  // The last row past the allocation's end (16 * 3 + 12 bytes from mem +
  // 200, 56 left): refused before the driver, nothing written.
  ArgWriter past;
  d::pack_cuMemsetD2D32Async(past, mem + 200, 16, 0x01010101, 3, 4, protocol::kNullStream);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_driver_row(d::k_cuMemsetD2D32Async), past).code);
  EXPECT_EQ(0, bytes[200]);
  // The same region one element narrower fits exactly.
  ArgWriter exact;
  d::pack_cuMemsetD2D32Async(exact, mem + 200, 16, 0x01010101, 2, 4, protocol::kNullStream);
  EXPECT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuMemsetD2D32Async), exact).code);
  EXPECT_EQ(1, bytes[255]);
  // Rows longer than the pitch overlap: refused.
  ArgWriter overlap;
  d::pack_cuMemsetD2D16_v2(overlap, mem, 8, 1, 5, 2);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_driver_row(d::k_cuMemsetD2D16_v2), overlap).code);
  // Sizes whose product wraps: refused.
  ArgWriter wraps;
  d::pack_cuMemsetD2D8_v2(wraps, mem, uint64_t{1} << 63, 1, 1, 3);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_driver_row(d::k_cuMemsetD2D8_v2), wraps).code);
  EXPECT_EQ(calls + 1, driver_log().calls);  // only the exact one reached the driver
  // One row: its pitch is not read; nothing at all: nothing checked past mem.
  ArgWriter one, none;
  d::pack_cuMemsetD2D16_v2(one, mem + 128, 0, 0x0102, 4, 1);
  EXPECT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuMemsetD2D16_v2), one).code);
  EXPECT_EQ(0x02, bytes[128]);
  d::pack_cuMemsetD2D8_v2(none, mem, 16, 1, 0, 1000);
  EXPECT_EQ(CUDA_SUCCESS, run(find_driver_row(d::k_cuMemsetD2D8_v2), none).code);
  static_assert(rgpu_pitch_bytes(16, 8, 4, 1) == 56);
  static_assert(rgpu_pitch_bytes(0, 3, 1, 4) == 12);
  static_assert(rgpu_pitch_bytes(8, 5, 2, 2) == kNoExtent);
  static_assert(rgpu_pitch_bytes(16, 0, 9, 4) == 0);
  static_assert(rgpu_pitch_bytes(uint64_t{1} << 63, 1, 3, 1) == kNoExtent);
}

TEST_F(GeneratedCalls, EveryDriverRowHasAValidCall) {
  // The fuzzers' seeds and the undecodable-input tests start from these.
  std::set<const DispatchRow*> seeded;
  for (const ValidCall& call : valid_calls(env)) seeded.insert(call.row);
  for (size_t i = 0; const DispatchRow* row = find_driver_row_at(i); ++i) {
    EXPECT_TRUE(seeded.count(row)) << row->name << " has no valid call in fakes.cpp";
  }
}

TEST_F(GeneratedCalls, AQuickCallNamesWhereItsStreamIs) {
  // rgpud runs a quick call on its executor when the stream is the
  // per-thread one; the row says where to look.
  EXPECT_EQ(0, find_driver_row(d::k_cuStreamQuery)->stream_item);
  EXPECT_EQ(0, find_driver_row(d::k_cuStreamGetFlags)->stream_item);
  EXPECT_EQ(-1, find_driver_row(d::k_cuEventQuery)->stream_item);
  EXPECT_EQ(-1, find_driver_row(d::k_cuStreamSetAttribute)->stream_item);  // not quick
  env.put(HandleKind::kStream, stream, reinterpret_cast<void*>(uintptr_t{0x5E}));
  unsigned flags = 0;
  ArgWriter w;
  d::pack_cuStreamGetFlags(w, stream, &flags);
  ASSERT_EQ(uint64_t{stream}, *reinterpret_cast<const uint64_t*>(w.bytes().data()));
  InvokeOutcome out = run(find_driver_row(d::k_cuStreamGetFlags), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code) << out.message;
  ArgReader r(view(out.out));
  ASSERT_TRUE(d::unpack_cuStreamGetFlags(r, stream, &flags));
  EXPECT_EQ(unsigned{CU_STREAM_NON_BLOCKING}, flags);
}

TEST_F(GeneratedCalls, StreamArguments) {
  env.put(HandleKind::kStream, stream, reinterpret_cast<void*>(uintptr_t{0x5E}));
  env.put(HandleKind::kEvent, event, reinterpret_cast<void*>(uintptr_t{0xE0}));
  struct Case {
    uint64_t handle;
    CUresult code;
    CUstream seen;
  } cases[] = {{protocol::kNullStream, CUDA_ERROR_NOT_READY, nullptr},
               {0, CUDA_ERROR_INVALID_HANDLE, nullptr},  // untyped: not a stream
               {1, CUDA_ERROR_INVALID_HANDLE, nullptr},
               {protocol::kLegacyStream, CUDA_ERROR_NOT_READY, CU_STREAM_LEGACY},
               {protocol::kPerThreadStream, CUDA_ERROR_NOT_READY, CU_STREAM_PER_THREAD},
               {stream, CUDA_ERROR_NOT_READY, reinterpret_cast<CUstream>(uintptr_t{0x5E})},
               {event, CUDA_ERROR_INVALID_HANDLE, nullptr},
               {make_handle(HandleKind::kStream, 0x777), CUDA_ERROR_INVALID_HANDLE, nullptr}};
  for (const Case& c : cases) {
    driver_log() = DriverLog{};
    ArgWriter w;
    t::pack_cuStreamQuery(w, c.handle);
    EXPECT_EQ(c.code, run(find_test_row(t::k_cuStreamQuery), w).code) << std::hex << c.handle;
    if (c.code == CUDA_ERROR_NOT_READY) EXPECT_EQ(c.seen, driver_log().stream);
    else EXPECT_EQ(0, driver_log().calls);
  }
}

TEST_F(GeneratedCalls, DeviceRangesWithLengths) {
  const uint64_t mem = env.allocate(64);
  ArgWriter ok;
  t::pack_cuMemsetD8_v2(ok, mem + 8, 0xAB, 56);
  ASSERT_EQ(CUDA_SUCCESS, run(find_test_row(t::k_cuMemsetD8_v2), ok).code);
  EXPECT_EQ(0xAB, reinterpret_cast<unsigned char*>(mem)[63]);
  EXPECT_EQ(0, reinterpret_cast<unsigned char*>(mem)[7]);

  driver_log() = DriverLog{};
  ArgWriter past;  // one byte past the allocation
  t::pack_cuMemsetD8_v2(past, mem + 8, 0xCD, 57);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuMemsetD8_v2), past).code);
  ArgWriter wrap;  // a length that wraps the address space
  t::pack_cuMemsetD8_v2(wrap, mem + 8, 0xCD, ~size_t{0});
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuMemsetD8_v2), wrap).code);
  unsigned char elsewhere[16];
  ArgWriter foreign;  // an address the session's ledger does not have
  t::pack_cuMemsetD8_v2(foreign, reinterpret_cast<CUdeviceptr>(elsewhere), 0, 1);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuMemsetD8_v2), foreign).code);
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, HostBuffersInAndOut) {
  const uint64_t mem = env.allocate(32);
  const unsigned char src[5] = {1, 2, 3, 4, 5};
  ArgWriter in;
  t::pack_cuMemcpyHtoD_v2(in, mem + 3, src, sizeof src);
  ASSERT_EQ(CUDA_SUCCESS, run(find_test_row(t::k_cuMemcpyHtoD_v2), in).code);

  unsigned char dst[8] = {};
  ArgWriter out_args;
  t::pack_cuMemcpyDtoH_v2(out_args, dst, mem + 2, sizeof dst);
  InvokeOutcome out = run(find_test_row(t::k_cuMemcpyDtoH_v2), out_args);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  ArgReader r(view(out.out));
  ASSERT_TRUE(t::unpack_cuMemcpyDtoH_v2(r, dst, mem + 2, sizeof dst));
  const unsigned char want[8] = {0, 1, 2, 3, 4, 5, 0, 0};
  EXPECT_EQ(0, std::memcmp(want, dst, sizeof dst));
}

TEST_F(GeneratedCalls, ABufferWhoseLengthDisagreesIsRefused) {
  const uint64_t mem = env.allocate(32);
  const unsigned char src[8] = {};
  ArgWriter w;  // claims 8 bytes, carries 4
  w.u64(mem);
  w.buffer(src, 4);
  w.scalar(size_t{8});
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuMemcpyHtoD_v2), w).code);

  unsigned char big[1];
  const uint64_t huge = env.allocate(d::kMaxOutBytes + 8);
  static_assert(d::kMaxOutBytes + 8 <= FakeEnv::kMaxAllocation);
  ArgWriter too_long;  // more than a reply carries
  t::pack_cuMemcpyDtoH_v2(too_long, big, huge, d::kMaxOutBytes + 1);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuMemcpyDtoH_v2), too_long).code);
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, EnumsAreCheckedAgainstTheHeader) {
  env.put(HandleKind::kFunction, function, reinterpret_cast<void*>(uintptr_t{0xF0}));
  ArgWriter ok;
  t::pack_cuFuncSetAttribute(ok, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096);
  ASSERT_EQ(CUDA_SUCCESS, run(find_test_row(t::k_cuFuncSetAttribute), ok).code);
  EXPECT_EQ(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, driver_log().attribute);
  EXPECT_EQ(4096, driver_log().value);
  // The count past the last attribute, a value no attribute has, and one
  // that does not fit the enum's integer at all (written raw: no C++ value
  // of the enum type can hold it).
  for (int64_t bad : {int64_t{CU_FUNC_ATTRIBUTE_MAX}, int64_t{9999}, int64_t{-1}, int64_t{1} << 40}) {
    driver_log() = DriverLog{};
    ArgWriter w;
    w.u64(function);
    w.scalar(bad);
    w.scalar(1);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuFuncSetAttribute), w).code);
    EXPECT_EQ(0, driver_log().calls);
  }
}

TEST_F(GeneratedCalls, FixedStructOut) {
  CUuuid uuid{};
  ArgWriter w;
  t::pack_cuDeviceGetUuid_v2(w, &uuid, 3);
  InvokeOutcome out = run(find_test_row(t::k_cuDeviceGetUuid_v2), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  ArgReader r(view(out.out));
  ASSERT_TRUE(t::unpack_cuDeviceGetUuid_v2(r, &uuid, 3));
  EXPECT_EQ(3, uuid.bytes[0]);
  EXPECT_EQ(18, uuid.bytes[15]);
}

TEST_F(GeneratedCalls, StringInAndModuleHandle) {
  env.put(HandleKind::kModule, module, reinterpret_cast<void*>(uintptr_t{0xA0}));
  CUdeviceptr ptr = 0;
  ArgWriter w;
  t::pack_cuModuleGetGlobal_v2(w, &ptr, nullptr, module, "counter");
  InvokeOutcome out = run(find_test_row(t::k_cuModuleGetGlobal_v2), w);
  ASSERT_EQ(CUDA_SUCCESS, out.code);
  EXPECT_TRUE(driver_log().got_null_out);
  ArgReader r(view(out.out));
  ASSERT_TRUE(t::unpack_cuModuleGetGlobal_v2(r, &ptr, nullptr, module, nullptr));
  EXPECT_EQ(0x2000u, ptr);

  driver_log() = DriverLog{};
  ArgWriter nul;  // a name with a NUL inside is not a C string
  nul.u64(1);
  nul.u64(0);
  nul.u64(module);
  nul.string(std::string_view("coun\0ter", 8));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, run(find_test_row(t::k_cuModuleGetGlobal_v2), nul).code);
  EXPECT_EQ(0, driver_log().calls);
}

TEST_F(GeneratedCalls, UndecodableArgumentsAreRefusedForEveryRow) {
  for (const ValidCall& call : valid_calls(env)) {
    ASSERT_NE(nullptr, call.row);
    SCOPED_TRACE(call.row->name);
    const uint32_t invalid = invalid_value_code(call.row->api);  // the row's own API's
    for (size_t cut = 0; cut < call.args.size(); ++cut) {
      auto code = call.row->run(env, std::span<const std::byte>(call.args.data(), cut)).code;
      EXPECT_EQ(invalid, code) << "cut at " << cut;
    }
    auto longer = call.args;
    longer.resize(longer.size() + 8);
    EXPECT_EQ(invalid, call.row->run(env, view(longer)).code) << "a trailing item";
  }
}

TEST_F(GeneratedCalls, ValidCallsSucceed) {
  for (const ValidCall& call : valid_calls(env)) {
    auto code = call.row->run(env, view(call.args)).code;
    if (call.row->api != wire::Api::DRIVER) {
      // A library's call passes every check, then finds no library table here.
      EXPECT_EQ(not_supported_code(call.row->api), code) << call.row->name;
      continue;
    }
    EXPECT_TRUE(code == CUDA_SUCCESS || code == CUDA_ERROR_NOT_READY) << call.row->name << " " << code;
  }
}

}  // namespace
}  // namespace rgpu::server::apigen_test
