// Sending cuDNN's hand-written calls (cudnn_client.h).
#include "cudnn_client.h"

#include "rgpu/protocol/codec.h"

namespace rgpu::shim::cudnn {

namespace {
constexpr auto kApi = wire::Api::CUDNN;
constexpr uint64_t kMaxReply = 64 * 1024;  // a heuristics reply of 64 configs is far below
}  // namespace

void send_async(Shim* shim, uint64_t ctx, uint32_t function, const protocol::ArgWriter& args) {
  const auto& bytes = args.bytes();
  shim->client().call_async(ctx, [&](wire::Call::Builder call) {
    protocol::set_invoke(call, kApi, function, bytes, false);
  });
}

cudnnStatus_t send_sync(Shim* shim, uint64_t ctx, uint32_t function, const protocol::ArgWriter& args,
                        std::vector<std::byte>* reply) {
  const auto& bytes = args.bytes();
  std::vector<std::byte> buf(kMaxReply);
  uint64_t got = 0;
  SyncResult r = shim->client().call_sync(
      ctx, [&](wire::Call::Builder call) { protocol::set_invoke(call, kApi, function, bytes, true); }, {},
      OutBuffer{buf.data(), buf.size(), &got});
  if (r.code != 0) return static_cast<cudnnStatus_t>(library_status(r, kApi, CUDNN_STATUS_EXECUTION_FAILED));
  buf.resize(got);
  if (reply) *reply = std::move(buf);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace rgpu::shim::cudnn
