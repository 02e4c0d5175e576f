// Whether this thread is running a session's calls right now (its executor,
// a batch run inline, or a device poller answering a completion). Such a
// thread may drive the transport while it waits for a transfer of its own,
// and the handlers of other connections then run on it: they must not run
// their batches here too, which would switch the current context under the
// call in progress (a copy would then be issued in another session's
// context, its completion event never recorded), and would hold a shared
// thread (a poller) hostage to one client's transfer.
#pragma once

namespace rgpu::server {

inline thread_local bool t_executing = false;

// Marks the calling thread as executing for a scope.
class Executing {
 public:
  Executing() : was_(t_executing) { t_executing = true; }
  ~Executing() { t_executing = was_; }
  Executing(const Executing&) = delete;
  Executing& operator=(const Executing&) = delete;

 private:
  const bool was_;
};

}  // namespace rgpu::server
