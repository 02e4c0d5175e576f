// Frame checks, limits, reordering and header pairing of the UCX receive side.
#include "frame_assembler.h"

#include <cstring>
#include <string>
#include <utility>

namespace rgpu::transport::ucx {
namespace {

Status exceeded(const char* limit, uint64_t got, uint64_t max) {
  return failed(std::string("peer exceeded ") + limit + " (" + std::to_string(got) + " > " + std::to_string(max) +
                ")");
}

Status protocol_error(const char* why) { return failed(std::string("protocol error: ") + why); }

}  // namespace

CopiedPayload::CopiedPayload(const void* data, size_t size)
    : data_(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + size) {}

Status CopiedPayload::receive(void* dst) {
  if (taken_) return invalid_argument("payload already received");
  taken_ = true;
  if (data_.empty()) return Status::ok();
  if (dst == nullptr) return invalid_argument("null receive buffer");
  std::memcpy(dst, data_.data(), data_.size());
  return Status::ok();
}

Status FrameAssembler::fail(Status status) {
  if (error_.is_ok()) error_ = std::move(status);
  return error_;
}

FeedResult FrameAssembler::feed(const Frame& frame, const FrameBytes& in, RndvSource* rndv) {
  FeedResult out;
  if (failed()) {
    out.status = error_;
    return out;
  }
  if (ended_) {
    out.status = fail(protocol_error("frame after bye"));
    return out;
  }
  // Where the user header travels decides what the frame may carry.
  const uint32_t flags = frame.flags;
  const bool header_in_data = flags == kHeaderInData || flags == kHeaderPart;
  size_t header_size = 0;
  if (flags == kBye) {
    if (in.header_len != 0 || in.length != 0) {
      out.status = fail(protocol_error("malformed bye"));
      return out;
    }
  } else if (header_in_data) {
    if (in.header_len != 0) {
      out.status = fail(protocol_error("malformed frame"));
      return out;
    }
    header_size = in.length;
  } else if (flags == kHeaderInline || flags == kHeaderFromPrev) {
    if (flags == kHeaderFromPrev && in.header_len != 0) {
      out.status = fail(protocol_error("malformed frame"));
      return out;
    }
    header_size = in.header_len;
  } else {
    out.status = fail(protocol_error("unknown frame flags"));
    return out;
  }
  if (header_size > limits_.max_header) {
    out.status = fail(exceeded("max_header", header_size, limits_.max_header));
    return out;
  }
  if (frame.seq < next_ || frame.seq == UINT64_MAX) {
    out.status = fail(protocol_error("sequence number out of order"));
    return out;
  }
  if (parked_.count(frame.seq) != 0) {
    out.status = fail(protocol_error("duplicate sequence number"));
    return out;
  }
  const bool fetch = header_in_data && in.rndv && in.length != 0;
  const bool keep_rndv = !header_in_data && flags != kBye && in.rndv && in.length != 0;
  // What this frame holds in memory here: its header and an eager payload.
  size_t bytes = header_size;
  if (!header_in_data && !in.rndv) bytes += in.length;
  const bool park = frame.seq != next_ || fetch;
  // What is held already counts too: limits may have been lowered since.
  const uint64_t frames = parked_.size() + (park ? 1 : 0);
  if (frames > limits_.max_parked_frames) {
    out.status = fail(exceeded("max_parked_frames", frames, limits_.max_parked_frames));
    return out;
  }
  if (held_bytes() + bytes > limits_.max_parked_bytes) {
    out.status = fail(exceeded("max_parked_bytes", held_bytes() + bytes, limits_.max_parked_bytes));
    return out;
  }
  if (keep_rndv && rndv == nullptr) {
    out.status = fail(protocol_error("rendezvous data without a receiver"));
    return out;
  }

  Slot slot;
  slot.flags = flags;
  slot.bytes = bytes;
  slot.ready = !fetch;
  if (header_in_data) {
    if (!fetch) slot.message.header.assign(in.data, in.data + in.length);
  } else if (flags != kBye) {
    if (in.header_len != 0) slot.message.header.assign(in.header, in.header + in.header_len);
    if (keep_rndv) {
      slot.message.payload = rndv->take();
      out.payload_kept = true;
    } else if (in.length != 0) {
      slot.message.payload = std::make_unique<CopiedPayload>(in.data, in.length);
    }
  }
  out.fetch_header = fetch;
  if (park) {
    parked_bytes_ += bytes;
    parked_.emplace(frame.seq, std::move(slot));
    return out;
  }
  out.status = deliver(frame.seq, std::move(slot));
  if (out.status.is_ok()) out.status = drain();
  return out;
}

Status FrameAssembler::header_fetched(uint64_t seq, std::vector<std::byte> header) {
  if (failed()) return error_;
  auto it = parked_.find(seq);
  if (it == parked_.end() || it->second.ready) return Status::ok();  // dropped by a reset
  if (header.size() > it->second.bytes) return fail(protocol_error("fetched header larger than announced"));
  it->second.message.header = std::move(header);
  it->second.ready = true;
  return drain();
}

Status FrameAssembler::drain() {
  while (!parked_.empty() && parked_.begin()->first == next_ && parked_.begin()->second.ready) {
    auto node = parked_.extract(parked_.begin());
    parked_bytes_ -= node.mapped().bytes;
    Status st = deliver(node.key(), std::move(node.mapped()));
    if (!st.is_ok()) return st;
    if (ended_) break;
  }
  return Status::ok();
}

Status FrameAssembler::deliver(uint64_t seq, Slot slot) {
  next_ = seq + 1;
  if (slot.flags == kHeaderPart) {
    if (holding_header_) return fail(protocol_error("header part without its payload"));
    holding_header_ = true;
    held_header_ = std::move(slot.message.header);
    return Status::ok();
  }
  if (slot.flags == kHeaderFromPrev) {
    if (!holding_header_) return fail(protocol_error("payload without its header"));
    slot.bytes += held_header_.size();
    slot.message.header = std::move(held_header_);
    held_header_ = {};
    holding_header_ = false;
  } else if (holding_header_) {
    return fail(protocol_error("header part without its payload"));
  }
  if (slot.flags == kBye) {
    ended_ = true;
    // Nothing may follow a bye: whatever was parked beyond it is dropped.
    parked_.clear();
    parked_bytes_ = 0;
    sink_.peer_bye();
    return Status::ok();
  }
  pending_bytes_ += slot.bytes;
  sink_.deliver(seq, std::move(slot.message), slot.bytes);
  return Status::ok();
}

void FrameAssembler::reset() {
  parked_.clear();
  parked_bytes_ = 0;
  held_header_ = {};
  holding_header_ = false;
  pending_bytes_ = 0;
}

}  // namespace rgpu::transport::ucx
