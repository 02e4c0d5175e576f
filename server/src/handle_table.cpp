// HandleTable: the tree of a session's handles.
#include "handle_table.h"

#include <algorithm>

namespace rgpu::server {

using protocol::HandleKind;

bool HandleTable::nameable(Kind kind, uint64_t handle) {
  if (!protocol::is_kind(handle, kind)) return false;
  if (kind == HandleKind::kContext && protocol::is_primary_context(handle)) return true;
  return protocol::is_minted(handle);
}

bool HandleTable::may_own(Kind parent, Kind child) {
  switch (child) {
    case HandleKind::kContext:
      return false;  // contexts are roots
    case HandleKind::kFunction:
    case HandleKind::kKernel:
      return parent == HandleKind::kModule || parent == HandleKind::kLibrary;
    default:
      // Streams, events, modules and library handles belong to a context.
      return parent == HandleKind::kContext;
  }
}

HandleTable::AddResult HandleTable::add(Kind kind, uint64_t handle, void* object, uint64_t parent, Destroy destroy) {
  if (!nameable(kind, handle) || entries_.count(handle)) return AddResult::kInvalid;
  Entry* owner = nullptr;
  if (parent == 0) {
    if (kind != HandleKind::kContext) return AddResult::kInvalid;
  } else {
    auto it = entries_.find(parent);
    if (it == entries_.end() || !may_own(it->second.kind, kind)) return AddResult::kInvalid;
    owner = &it->second;
  }
  if (entries_.size() >= limit_) return AddResult::kFull;
  if (owner) owner->children.push_back(handle);
  entries_.emplace(handle, Entry{kind, object, parent, std::move(destroy), {}});
  return AddResult::kAdded;
}

void* HandleTable::find(Kind kind, uint64_t handle) const {
  auto it = entries_.find(handle);
  return it != entries_.end() && it->second.kind == kind ? it->second.object : nullptr;
}

uint64_t HandleTable::parent(Kind kind, uint64_t handle) const {
  auto it = entries_.find(handle);
  return it != entries_.end() && it->second.kind == kind ? it->second.parent : 0;
}

std::vector<uint64_t> HandleTable::children(uint64_t parent, Kind kind) const {
  std::vector<uint64_t> out;
  if (parent == 0) {
    for (const auto& [handle, entry] : entries_) {
      if (entry.parent == 0 && entry.kind == kind) out.push_back(handle);
    }
    return out;
  }
  auto it = entries_.find(parent);
  if (it == entries_.end()) return out;
  for (uint64_t child : it->second.children) {
    auto c = entries_.find(child);
    if (c != entries_.end() && c->second.kind == kind) out.push_back(child);
  }
  return out;
}

bool HandleTable::remove(Kind kind, uint64_t handle) {
  auto it = entries_.find(handle);
  if (it == entries_.end() || it->second.kind != kind) return false;
  if (uint64_t parent = it->second.parent; parent != 0) {
    auto p = entries_.find(parent);
    if (p != entries_.end()) std::erase(p->second.children, handle);
  }
  remove_subtree(handle);
  return true;
}

void HandleTable::remove_subtree(uint64_t handle) {
  auto it = entries_.find(handle);
  if (it == entries_.end()) return;
  // Newest child first: the reverse of creation, as teardown expects.
  std::vector<uint64_t> children = std::move(it->second.children);
  for (auto c = children.rbegin(); c != children.rend(); ++c) remove_subtree(*c);
  it = entries_.find(handle);  // found again: the children's destroy functions ran meanwhile
  Entry entry = std::move(it->second);
  entries_.erase(it);
  if (entry.destroy) entry.destroy(entry.object);
}

void HandleTable::clear() {
  std::vector<uint64_t> roots;
  for (const auto& [handle, entry] : entries_) {
    if (entry.parent == 0) roots.push_back(handle);
  }
  for (uint64_t root : roots) remove_subtree(root);
  entries_.clear();
}

}  // namespace rgpu::server
