// Operator requests and replies on the wire (protocol/src/admin.cpp): what
// both sides write reads back the same, and a reply past the client's
// bounds is refused, naming the bound, never half-read.
#include <gtest/gtest.h>

#include "rgpu/protocol/admin.h"
#include "rgpu/protocol/codec.h"

namespace rgpu::protocol {
namespace {

SessionSummary sample() {
  SessionSummary s;
  s.id = 42;
  s.tenant = "team-a";
  s.hostname = "node7";
  s.program = "train.py";
  s.pid = 1234;
  s.devices = {0, 3};
  s.memory_bytes = 3ull << 30;
  s.age_ms = 61000;
  s.calls = 99;
  s.lease = 7;
  return s;
}

TEST(Admin, RequestsRoundTrip) {
  for (const AdminRequest& in : {AdminRequest{AdminCommand::kListSessions, 0},
                                 AdminRequest{AdminCommand::kEndSession, 0xfedcba9876543210ull}}) {
    capnp::MallocMessageBuilder b;
    write_admin_request(in, b.initRoot<wire::AdminRequest>());
    auto out = read_admin_request(b.getRoot<wire::AdminRequest>().asReader());
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(out.value().command, in.command);
    EXPECT_EQ(out.value().session, in.session);
  }
  capnp::MallocMessageBuilder none;
  auto empty = read_admin_request(none.initRoot<wire::AdminRequest>().asReader());
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("no operator request"), std::string::npos);
}

TEST(Admin, SessionsRoundTrip) {
  capnp::MallocMessageBuilder b;
  write_sessions({sample(), SessionSummary{}}, b.initRoot<wire::AdminReply>());
  auto out = read_sessions(b.getRoot<wire::AdminReply>().asReader());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out.value().size(), 2u);
  const SessionSummary& s = out.value()[0];
  const SessionSummary want = sample();
  EXPECT_EQ(s.id, want.id);
  EXPECT_EQ(s.tenant, want.tenant);
  EXPECT_EQ(s.hostname, want.hostname);
  EXPECT_EQ(s.program, want.program);
  EXPECT_EQ(s.pid, want.pid);
  EXPECT_EQ(s.devices, want.devices);
  EXPECT_EQ(s.memory_bytes, want.memory_bytes);
  EXPECT_EQ(s.age_ms, want.age_ms);
  EXPECT_EQ(s.calls, want.calls);
  EXPECT_EQ(s.lease, want.lease);
  EXPECT_TRUE(out.value()[1].devices.empty());
}

TEST(Admin, AReplyPastTheBoundsIsRefused) {
  SessionSummary long_name = sample();
  long_name.program.assign(kMaxSummaryText + 1, 'p');
  SessionSummary many_devices = sample();
  many_devices.devices.assign(kMaxSummaryDevices + 1, 1);
  const std::pair<SessionSummary, const char*> cases[] = {{long_name, "program is longer than"},
                                                          {many_devices, "devices, over the limit"}};
  for (const auto& [bad, why] : cases) {
    capnp::MallocMessageBuilder b;
    write_sessions({sample(), bad}, b.initRoot<wire::AdminReply>());
    auto out = read_sessions(b.getRoot<wire::AdminReply>().asReader());
    ASSERT_FALSE(out.is_ok()) << why;
    EXPECT_NE(out.status().message().find(why), std::string::npos) << out.status().to_string();
  }
  SessionSummary at_bound = sample();
  at_bound.tenant.assign(kMaxSummaryText, 't');
  capnp::MallocMessageBuilder b;
  write_sessions({at_bound}, b.initRoot<wire::AdminReply>());
  EXPECT_TRUE(read_sessions(b.getRoot<wire::AdminReply>().asReader()).is_ok()) << "the bound itself is allowed";
}

}  // namespace
}  // namespace rgpu::protocol
