// What a multi-architecture program uploads: a program built by nvcc for
// four GPU architectures plus PTX, with two translation units (two fatbins),
// runs on the CPU device under `rgpu run`; the client must send only the PTX
// entry of the one fatbin whose kernel it launches.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rgpu/fatbin/fatbin.h"

namespace fs = std::filesystem;
namespace fatbin = rgpu::fatbin;

namespace {

long long field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  return at == std::string::npos ? -1 : std::atoll(line.c_str() + at + key.size());
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The fatbins of the program's .nv_fatbin section, back to back (8-aligned).
std::vector<fatbin::Bytes> fatbins_of(const std::vector<uint8_t>& elf_bytes) {
  std::vector<fatbin::Bytes> out;
  auto elf = fatbin::ElfFile::parse(fatbin::Bytes(elf_bytes));
  if (!elf.is_ok()) return out;
  const fatbin::ElfSection* s = elf->find_section(".nv_fatbin");
  if (!s) return out;
  fatbin::Bytes section = elf->section_data(*s);
  size_t off = 0;
  while (off + 16 <= section.size()) {
    auto size = fatbin::fatbin_size(section.subspan(off));
    if (!size.is_ok() || *size > section.size() - off) break;
    out.push_back(section.subspan(off, *size));
    off += (*size + 7) / 8 * 8;
  }
  return out;
}

TEST(MultiarchUpload, OnlyTheLaunchedFatbinsPtxIsSent) {
  const std::vector<uint8_t> program = read_all(MULTIARCH_PROGRAM);
  const std::vector<fatbin::Bytes> fatbins = fatbins_of(program);
  uint64_t whole = 0;
  std::vector<uint64_t> reduced;
  for (fatbin::Bytes fb : fatbins) {
    whole += fb.size();
    auto parsed = fatbin::parse_fatbin(fb);
    ASSERT_TRUE(parsed.is_ok());
    bool has_ptx = false;
    for (const auto& e : parsed->entries) has_ptx = has_ptx || e.kind == fatbin::EntryKind::kPtx;
    if (!has_ptx) continue;  // nvcc links in a cubin-only fatbin of its own, never registered here
    EXPECT_EQ(parsed->entries.size(), 5u) << "sm_75, sm_80, sm_86, sm_90 and compute_90";
    auto image = fatbin::image_for_device(fb, 80, fatbin::SelectPolicy::kPtxOnly);
    ASSERT_TRUE(image.is_ok()) << image.status().message();
    EXPECT_EQ(image->kind, fatbin::EntryKind::kPtx);
    EXPECT_EQ(image->arch, 90u);
    reduced.push_back(image->image.size());
  }

  char tmpl[] = "/tmp/rgpu-multiarch-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path stats = fs::path(tmpl) / "stats.jsonl";
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("RGPU_STATS", stats.c_str(), 1);
    const std::string rgpu = std::string(RGPU_BIN_DIR) + "/rgpu";
    execl(rgpu.c_str(), "rgpu", "run", "--device", "cpu", "--", MULTIARCH_PROGRAM, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "program failed, status " << status;
  std::ifstream in(stats);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  fs::remove_all(tmpl);

  ASSERT_EQ(reduced.size(), 2u) << "one fatbin with code per translation unit";
  // One module (the launched kernel's fatbin), and of it only the PTX entry.
  EXPECT_EQ(field(last, "modules_sent"), 1) << last;
  const long long sent = field(last, "module_bytes_sent");
  EXPECT_TRUE(sent == static_cast<long long>(reduced[0]) || sent == static_cast<long long>(reduced[1]))
      << "sent " << sent << ", the PTX entries are " << reduced[0] << " and " << reduced[1];
  std::printf("multiarch: fatbins %llu bytes in all; sent %lld bytes\n", static_cast<unsigned long long>(whole), sent);
}

}  // namespace
