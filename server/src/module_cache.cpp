// The server's module cache: memory (LRU by bytes) over an optional folder.
#include "module_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rgpu/common/log.h"
#include "rgpu/fatbin/fatbin.h"

namespace rgpu::server {
namespace {

bool is_hex_hash(const std::string& hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Reads a whole file; false when it cannot.
bool read_all(const std::string& path, std::vector<std::byte>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st{};
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) {
    out->resize(static_cast<size_t>(st.st_size) + 1);  // + the NUL byte
    size_t done = 0;
    while (ok && done < static_cast<size_t>(st.st_size)) {
      const ssize_t n = ::read(fd, out->data() + done, static_cast<size_t>(st.st_size) - done);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
    (*out)[static_cast<size_t>(st.st_size)] = std::byte{0};
  }
  ::close(fd);
  return ok;
}

}  // namespace

ModuleCache::ModuleCache(ModuleCacheOptions options) : options_(std::move(options)) {}

Result<std::shared_ptr<ModuleCache>> ModuleCache::open(ModuleCacheOptions options) {
  if (!options.dir.empty()) {
    if (::mkdir(options.dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return invalid_argument("cannot create module cache folder " + options.dir + ": " + std::strerror(errno));
    }
    struct stat st{};
    if (::stat(options.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return invalid_argument("module cache " + options.dir + " is not a folder");
    }
    if (::access(options.dir.c_str(), R_OK | W_OK | X_OK) != 0) {
      return invalid_argument("module cache folder " + options.dir + " is not writable: " + std::strerror(errno));
    }
  }
  return std::make_shared<ModuleCache>(std::move(options));
}

ModuleCache::Image ModuleCache::remember_locked(const std::string& hash, Image image) {
  auto it = images_.find(hash);
  if (it != images_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.image;
  }
  lru_.push_front(hash);
  images_.emplace(hash, Entry{image, lru_.begin()});
  memory_bytes_ += image->size();
  // Keep the newest image even when it alone is over the limit.
  while (memory_bytes_ > options_.memory_limit && lru_.size() > 1) {
    auto old = images_.find(lru_.back());
    memory_bytes_ -= old->second.image->size();
    images_.erase(old);
    lru_.pop_back();
    ++stats_.evictions;
  }
  return image;
}

ModuleCache::Image ModuleCache::find(const std::string& hash) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = images_.find(hash);
    if (it != images_.end()) {
      ++stats_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.image;
    }
  }
  Image image = load_file(hash);  // outside the lock: disk reads may be slow
  std::lock_guard<std::mutex> lock(mu_);
  if (!image) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  ++stats_.disk_hits;
  return remember_locked(hash, std::move(image));
}

ModuleCache::Image ModuleCache::insert(const std::string& hash, std::vector<std::byte> image) {
  auto stored = std::make_shared<const std::vector<std::byte>>(std::move(image));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_received += stored->empty() ? 0 : stored->size() - 1;
    ++stats_.images;
    stored = remember_locked(hash, std::move(stored));
  }
  write_file(hash, *stored);
  return stored;
}

ModuleCache::Image ModuleCache::load_file(const std::string& hash) {
  if (options_.dir.empty() || !is_hex_hash(hash)) return nullptr;
  const std::string path = options_.dir + "/" + hash;
  std::vector<std::byte> bytes;
  if (!read_all(path, &bytes)) return nullptr;
  const size_t size = bytes.size() - 1;
  auto actual = fatbin::content_hash(fatbin::Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), size));
  if (actual.to_hex() != hash) {
    RGPU_WARN("module cache file does not match its name, deleted path=%s", path.c_str());
    ::unlink(path.c_str());
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.corrupt_files;
    return nullptr;
  }
  RGPU_DEBUG("module cache disk hit hash=%s bytes=%zu", hash.c_str(), size);
  return std::make_shared<const std::vector<std::byte>>(std::move(bytes));
}

void ModuleCache::write_file(const std::string& hash, const std::vector<std::byte>& image) {
  if (options_.dir.empty() || !is_hex_hash(hash) || image.empty()) return;
  const std::string path = options_.dir + "/" + hash;
  if (::access(path.c_str(), F_OK) == 0) return;  // already there (same content, by name)
  // A unique temporary name, renamed into place: readers never see half a file.
  std::string tmp = options_.dir + "/." + hash + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    RGPU_WARN("module cache write failed path=%s error=\"%s\"", path.c_str(), std::strerror(errno));
    return;
  }
  const size_t size = image.size() - 1;  // without the NUL byte
  size_t done = 0;
  bool ok = true;
  while (ok && done < size) {
    const ssize_t n = ::write(fd, image.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    RGPU_WARN("module cache write failed path=%s error=\"%s\"", path.c_str(), std::strerror(errno));
    ::unlink(tmp.c_str());
  }
}

ModuleCache::Stats ModuleCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace rgpu::server
