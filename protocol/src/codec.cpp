// Wire codec: flat-array Cap'n Proto framing with traversal limits.
#include "rgpu/protocol/codec.h"

#include <kj/exception.h>

#include <cstring>

namespace rgpu::protocol {
namespace {

// A header is a few hundred bytes normally; a batch of calls stays well under
// this. Larger data always travels as the payload.
constexpr uint64_t kTraversalLimitWords = 64ull << 20 >> 3;  // 64 MiB

}  // namespace

kj::Array<capnp::word> encode(capnp::MessageBuilder& message) { return capnp::messageToFlatArray(message); }

std::span<const std::byte> as_bytes(const kj::Array<capnp::word>& words) {
  return {reinterpret_cast<const std::byte*>(words.begin()), words.size() * sizeof(capnp::word)};
}

Result<std::unique_ptr<Decoded>> decode(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(capnp::word) || bytes.size() % sizeof(capnp::word) != 0) {
    return invalid_argument("wire message size " + std::to_string(bytes.size()) + " is not a whole number of words");
  }
  auto out = std::make_unique<Decoded>();
  const capnp::word* words = reinterpret_cast<const capnp::word*>(bytes.data());
  size_t count = bytes.size() / sizeof(capnp::word);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(capnp::word) != 0) {
    out->aligned_copy_ = kj::heapArray<capnp::word>(count);
    std::memcpy(out->aligned_copy_.begin(), bytes.data(), bytes.size());
    words = out->aligned_copy_.begin();
  }
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kTraversalLimitWords;
  options.nestingLimit = 16;
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&] {
    out->reader_ = std::make_unique<capnp::FlatArrayMessageReader>(kj::arrayPtr(words, count), options);
    out->root_ = out->reader_->getRoot<wire::Envelope>();
    // totalSize() walks every pointer, so later accesses cannot fail.
    (void)out->root_.totalSize();
    (void)out->root_.which();
  });
  KJ_IF_MAYBE(e, error) {
    return invalid_argument(std::string("malformed wire message: ") + e->getDescription().cStr());
  }
  return out;
}


}  // namespace rgpu::protocol
