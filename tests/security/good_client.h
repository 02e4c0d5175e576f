// The well-behaved client that runs beside every attack: an authenticated
// rgpu client looping alloc, copy in, copy out, compare, free, and a small
// kernel, counting wrong results and errors. Its tally must stay clean.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>


namespace rgpu::security {

// Runs its loop on its own thread from start() until stop(). Thread-safe.
class GoodClient {
 public:
  struct Tally {
    uint64_t rounds = 0;
    uint64_t wrong = 0;   // results that differ from what was written
    uint64_t errors = 0;  // calls that failed
    std::string first_problem;
  };

  // The client makes a UCX transport of its own: a shim::Client's handlers
  // point at it, and only its own transport's end guarantees that none runs
  // after it is gone.
  GoodClient(std::string address, std::string tenant, std::string secret);
  ~GoodClient();
  GoodClient(const GoodClient&) = delete;
  GoodClient& operator=(const GoodClient&) = delete;

  // Connects and starts the loop; false (with the reason in the tally) when
  // the client cannot connect or set up.
  bool start();
  // Waits (at most `limit_ms`) until `n` more rounds have completed.
  bool wait_rounds(uint64_t n, int limit_ms = 20000);
  // Stops the loop and returns the tally.
  Tally stop();
  Tally tally();

 private:
  void run();
  void problem(bool wrong, const std::string& what);

  const std::string address_, tenant_, secret_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::mutex mu_;
  Tally tally_;
  struct State;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace rgpu::security
