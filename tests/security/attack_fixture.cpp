// AttackTest: server, transport and the good client for each test.
#include "attack_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace rgpu::security {

void AttackTest::start(const std::vector<std::string>& extra) {
  char tmpl[] = "/tmp/rgpu-keys-XXXXXX";
  const int fd = mkstemp(tmpl);  // created 0600
  ASSERT_GE(fd, 0);
  close(fd);
  key_file_ = tmpl;
  std::ofstream(key_file_) << "# tenants of the attack suite\nalice " << kAliceKey << "\nbob " << kBobKey
                           << "\nmallory " << kMalloryKey << "\n";
  std::vector<std::string> args = {"--auth-file", key_file_};
  args.insert(args.end(), extra.begin(), extra.end());
  server_ = std::make_unique<RgpudProcess>(args);
  ASSERT_TRUE(server_->ok()) << "rgpud did not start: " << server_->log_tail();
  auto t = transport::make_ucx_transport();
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  transport_ = std::move(t.value());
  good_ = std::make_unique<GoodClient>(server_->address(), "alice", kAliceKey);
  ASSERT_TRUE(good_->start()) << good_->tally().first_problem;
  ASSERT_TRUE(good_->wait_rounds(1)) << "the good client made no progress";
}

void AttackTest::TearDown() {
  if (good_) {
    // It must still be served after the attack, and have seen nothing wrong.
    EXPECT_TRUE(good_->wait_rounds(2)) << "the good client stalled";
    const GoodClient::Tally t = good_->stop();
    EXPECT_EQ(t.wrong, 0u) << t.first_problem;
    EXPECT_EQ(t.errors, 0u) << t.first_problem;
    EXPECT_GT(t.rounds, 0u);
  }
  if (server_) {
    EXPECT_TRUE(server_->alive()) << "rgpud " << server_->exit_description() << "\n" << server_->log_tail();
    if (HasFailure()) std::fprintf(stderr, "---- rgpud log ----\n%s\n", server_->log_tail().c_str());
  }
  good_.reset();
  transport_.reset();
  server_.reset();
  if (!key_file_.empty()) unlink(key_file_.c_str());
}

std::unique_ptr<RawPeer> AttackTest::peer() { return RawPeer::connect(*transport_, server_->address()); }

std::unique_ptr<RawPeer> AttackTest::session(const std::string& tenant, const std::string& key) {
  auto p = peer();
  if (!p) {
    ADD_FAILURE() << "cannot connect";
    return nullptr;
  }
  auto h = p->handshake(tenant, key);
  if (!h.welcomed) {
    ADD_FAILURE() << "handshake: " << h.last.describe();
    return nullptr;
  }
  EXPECT_TRUE(h.server_proof_ok) << "the server's proof is wrong";
  if (!p->open_context()) return nullptr;
  return p;
}

void AttackTest::expect_server_serving() {
  EXPECT_TRUE(server_->alive()) << "rgpud " << server_->exit_description() << "\n" << server_->log_tail();
  EXPECT_TRUE(good_->wait_rounds(1)) << "the good client stalled";
  const GoodClient::Tally t = good_->tally();
  EXPECT_EQ(t.wrong + t.errors, 0u) << t.first_problem;
}

}  // namespace rgpu::security
