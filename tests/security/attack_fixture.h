// The fixture every attack runs in: a real rgpud with keys, rgpu's UCX
// transport for the attackers, and the well-behaved client running beside
// them, whose tally and the server's life are checked after each test.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "good_client.h"
#include "raw_peer.h"
#include "rgpud_process.h"

namespace rgpu::security {

// Tenants in the server's key file: the good client is alice, attackers
// are mallory (a real tenant with a key, misbehaving) or victims (bob).
inline const std::string kAliceKey = "alice-secret-0123456789";
inline const std::string kBobKey = "bob-secret-9876543210";
inline const std::string kMalloryKey = "mallory-secret-5555";

class AttackTest : public ::testing::Test {
 protected:
  void TearDown() override;

  // Starts rgpud with the key file and `extra` arguments, and the good client.
  void start(const std::vector<std::string>& extra = {});
  // A fresh connection (null when the transport refused it).
  std::unique_ptr<RawPeer> peer();
  // An authenticated attacker session (tenant mallory) with context kCtx.
  std::unique_ptr<RawPeer> session(const std::string& tenant = "mallory", const std::string& key = kMalloryKey);
  // The server is still running; the good client still completes rounds.
  void expect_server_serving();

  std::string key_file_;
  std::unique_ptr<RgpudProcess> server_;
  std::shared_ptr<transport::Transport> transport_;
  std::unique_ptr<GoodClient> good_;
};

}  // namespace rgpu::security
