// CallbackGate: lets an object hand callbacks to something that may outlive
// it (a shared transport calls a server's handlers after the server is gone).
// Each callback captures the gate by shared_ptr and runs inside a Pass; the
// owner's destructor calls close(), which waits for the callbacks already
// running and turns every later one away.
#pragma once

#include <condition_variable>
#include <mutex>

namespace rgpu {

class CallbackGate {
 public:
  // Admits one callback while the gate is open; `entered()` says whether.
  // Passes may nest on one thread (a handler whose send calls another).
  class Pass {
   public:
    explicit Pass(CallbackGate& gate) : gate_(gate), entered_(gate.enter()) {}
    ~Pass() {
      if (entered_) gate_.leave();
    }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    bool entered() const { return entered_; }

   private:
    CallbackGate& gate_;
    const bool entered_;
  };

  // Turns later callbacks away and waits for the running ones. Must not be
  // called from inside a Pass (it would wait for itself).
  void close() {
    std::unique_lock<std::mutex> lock(mu_);
    open_ = false;
    idle_.wait(lock, [this] { return running_ == 0; });
  }

 private:
  bool enter() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return false;
    ++running_;
    return true;
  }
  void leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) idle_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable idle_;
  bool open_ = true;
  int running_ = 0;
};

}  // namespace rgpu
