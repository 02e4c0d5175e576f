// Graphs, stream capture and executable graphs: what cuStreamBeginCapture
// records instead of running, and what cuGraphLaunch runs again.
#pragma once

#include <atomic>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cuda_api.h"
#include "stream.h"

namespace rgpu::cpudev {

class Graph;
class Event;

// One node. A recorded operation keeps the very work the stream would have
// run (kernels, copies, memsets, host functions copy their arguments by
// value), so a replay runs it again unchanged. Event nodes name their event
// and act on the launch stream when replayed.
// Lifetime: owned by its graph. Thread safety: immutable once added.
struct GraphNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  Work work;  // null for empty and event nodes
  OpKind kind = OpKind::kDevice;
  std::shared_ptr<Event> event;  // event record and wait nodes
  std::vector<GraphNode*> deps;  // nodes of the same graph, added before this one
  Graph* graph = nullptr;
};

class GraphTables;

// A user object (cuUserObjectCreate): `destroy(ptr)` runs when its last
// reference goes, whether the program's or a graph's. Libraries tie to it
// what a captured graph must keep alive (the CPU cuBLAS stand-in: its jobs).
// Lifetime: in the driver's table until the last reference goes. Thread
// safety: thread-safe.
class UserObject {
 public:
  UserObject(GraphTables* tables, void* ptr, CUhostFn destroy, uint64_t refs)
      : tables_(tables), ptr_(ptr), destroy_(destroy), refs_(refs) {}
  void retain(uint64_t n) { refs_.fetch_add(n); }
  // Drops n references (no more than it has); the last one runs destroy.
  void release(uint64_t n);

 private:
  GraphTables* const tables_;
  void* const ptr_;
  const CUhostFn destroy_;
  std::atomic<uint64_t> refs_;
};

// References to user objects, released when the holder goes.
class UserObjectRefs {
 public:
  UserObjectRefs() = default;
  UserObjectRefs(const UserObjectRefs& other);
  UserObjectRefs& operator=(const UserObjectRefs&) = delete;
  ~UserObjectRefs();
  void add(const std::shared_ptr<UserObject>& o, uint64_t n);
  // False when fewer than n are held.
  bool drop(const std::shared_ptr<UserObject>& o, uint64_t n);

 private:
  mutable std::mutex mu_;
  std::map<std::shared_ptr<UserObject>, uint64_t> held_;
};

// A graph of one context: nodes in the order they were added, which is a
// topological order (a node depends only on nodes added before it).
// Lifetime: owned by the driver's table (CUgraph is its address); the nodes
// live as long as the graph. Thread safety: all methods are thread-safe.
class Graph {
 public:
  explicit Graph(uint64_t context) : context_(context) {}
  Graph(uint64_t context, const UserObjectRefs& users) : users_(users), context_(context) {}
  uint64_t context() const { return context_; }
  // A copy (cuGraphClone): the same nodes and edges, and references of its
  // own to the same user objects.
  std::shared_ptr<Graph> clone() const;

  // Adds a node after `deps` (which must be nodes of this graph; INVALID_VALUE
  // otherwise) and returns it.
  CUresult add(GraphNode node, const std::vector<GraphNode*>& deps, GraphNode** out);
  bool owns(const GraphNode* node) const;
  std::vector<GraphNode*> nodes() const;
  // Nodes no other node depends on.
  std::vector<GraphNode*> leaves() const;
  // Every edge as (from, to).
  std::vector<std::pair<GraphNode*, GraphNode*>> edges() const;
  // User objects the graph (and every executable graph made from it) keeps.
  UserObjectRefs& user_objects() { return users_; }

 private:
  UserObjectRefs users_;
  const uint64_t context_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<GraphNode>> nodes_;
};

// An instantiated graph: a copy of the nodes' work in a topological order,
// independent of the graph it came from.
// Lifetime: owned by the driver's table. Thread safety: immutable.
struct GraphExec {
  GraphExec(uint64_t ctx, const UserObjectRefs& graph_users) : context(ctx), users(graph_users) {}
  uint64_t context = 0;
  std::vector<GraphNode> steps;  // deps cleared
  UserObjectRefs users;          // the graph's, as it was instantiated
};

// One capture sequence: the graph it builds, the mode it began with, the
// thread that began it and the streams that take part in it.
// Lifetime: shared by the streams capturing into it and events recorded in
// it. Thread safety: guarded by `mu`.
struct Capture {
  uint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  std::shared_ptr<Graph> graph;
  std::shared_ptr<Stream> origin;

  std::mutex mu;
  bool invalidated = false;
  bool ended = false;
  // Per stream: the nodes its next operation depends on.
  struct Member {
    std::weak_ptr<Stream> stream;
    std::vector<GraphNode*> tail;
  };
  std::vector<Member> members;
  Member* member(const Stream* s);
};

}  // namespace rgpu::cpudev

namespace rgpu::cpudev {

// The driver's graphs, executable graphs and capture sequences in progress.
// A CUgraph or CUgraphExec handle is the object's address; it is accepted
// only while the object is in the table. Lifetime: owned by the driver.
// Thread safety: all methods are thread-safe.
class GraphTables {
 public:
  uint64_t add_graph(std::shared_ptr<Graph> g);
  std::shared_ptr<Graph> graph(uint64_t handle) const;
  bool remove_graph(uint64_t handle);
  uint64_t add_exec(std::shared_ptr<GraphExec> e);
  std::shared_ptr<GraphExec> exec(uint64_t handle) const;
  bool remove_exec(uint64_t handle);
  // The node behind a handle, when it belongs to a live graph.
  GraphNode* node(uint64_t handle) const;
  uint64_t add_user_object(std::shared_ptr<UserObject> o);
  std::shared_ptr<UserObject> user_object(uint64_t handle) const;
  void remove_user_object(const UserObject* o);

  std::shared_ptr<Capture> begin_capture(CUstreamCaptureMode mode, std::shared_ptr<Stream> origin,
                                         uint64_t context);
  void end_capture(const Capture* c);
  std::vector<std::shared_ptr<Capture>> active() const;
  // Whether any capture is in progress in this library (lock free): lets
  // every operation on the legacy stream skip the capture checks.
  static bool any_active() { return active_count_.load(std::memory_order_acquire) != 0; }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Graph>> graphs_;
  std::map<uint64_t, std::shared_ptr<GraphExec>> execs_;
  std::map<uint64_t, std::shared_ptr<UserObject>> users_;
  std::vector<std::shared_ptr<Capture>> active_;
  static std::atomic<int> active_count_;  // active_.size() of every table
  uint64_t next_capture_id_ = 1;
};

// Capture rules shared by the entry points (api_graph.cpp).
// Records `work` as a node of the capture `stream` takes part in; returns a
// nonzero placeholder sequence number, or 0 with the reason in
// capture_refusal() (the capture was invalidated).
uint64_t capture_record(const std::shared_ptr<Capture>& c, const Stream* stream, Work work, OpKind kind,
                        CUgraphNodeType type);
// Marks a capture invalidated: its end returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
void capture_invalidate(const std::shared_ptr<Capture>& c);
// The reason the calling thread's last enqueue returned 0 (and clears it):
// a capture rule, else CUDA_ERROR_INVALID_HANDLE (a closed stream).
CUresult capture_refusal();
void set_capture_refusal(CUresult r);
// The calling thread's capture mode (cuThreadExchangeStreamCaptureMode).
CUstreamCaptureMode& thread_capture_mode();
// Whether a potentially unsafe call (allocation, free, synchronous copy,
// context synchronize) is allowed now: refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the capture that
// forbids it, when the calling thread's mode and the captures in progress
// say so (CUDA's rules for global, thread-local and relaxed modes).
CUresult capture_check_unsafe(GraphTables& tables);
// An event recorded on capturing stream `s`: remembers s's place in the
// capture (no operation is recorded).
CUresult capture_record_event(const std::shared_ptr<Capture>& c, const std::shared_ptr<Stream>& s,
                              const std::shared_ptr<Event>& e);
// `s` waits for an event recorded in capture `c` at `tail`: a stream outside
// any capture joins it, one in it adds the edges, one in another capture is
// CUDA_ERROR_STREAM_CAPTURE_ISOLATION.
CUresult capture_join(const std::shared_ptr<Capture>& c, const std::shared_ptr<Stream>& s,
                      const std::vector<GraphNode*>& tail);

}  // namespace rgpu::cpudev
