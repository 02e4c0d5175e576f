// What the compiled path learns about a kernel's code before it emits any:
// which instructions are native, where its basic blocks start (the pcs
// where lanes can wait), how each register slot is used, per-thread
// liveness over the PTX control flow, and which branches can split a
// warp. No LLVM here, so that tests run it on hand-written PTX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../ir.h"
#include "native.h"

namespace rgpu::ptx::jit {

// The opcode text of kernel `k`'s instructions, statement i -> code[i]: its
// body parsed again (the decoder keeps handler pointers, not names). Empty
// on success, else why they cannot be had. Reads `p` only.
std::string kernel_opcodes(const ProgramImpl& p, int k, const KernelUnit& unit, std::vector<std::string>* out);

// Facts about one function's code, per pc or per register slot. Built by
// analyze(); immutable after.
struct Analysis {
  std::vector<Native> natives;  // per pc: the native form, kNone for a handler
  // Per pc: a basic block starts here (branch targets, after branches and
  // barriers, warp-sync instructions and after them).
  std::vector<bool> leader;

  // Per slot.
  std::vector<bool> used;
  std::vector<bool> constant;        // an immediate never written: folded into the code
  std::vector<uint64_t> const_val;   // its value
  std::vector<bool> handler_reads;   // operands of instructions run by the interpreter's handlers
  // Every value written fits 32 bits (zero-extended) and no handler writes
  // it: held as <32 x i32>, in the 32-bit register file.
  std::vector<bool> narrow;
  std::vector<uint8_t> known;        // 1: every write moves known_val in
  std::vector<uint64_t> known_val;
  // Live where lanes can wait (at some leader): a write by one group must
  // keep the other lanes' values. Slots that are not need no merge.
  std::vector<bool> waits;
  std::vector<bool> zero;   // start at zero in a fresh warp (see liveness)
  std::vector<bool> saved;  // live across a barrier

  // Per-thread liveness at each leader: live_in[run * words + s / 64] bit
  // s % 64, runs numbered in pc order.
  std::vector<size_t> run_start;  // run -> its leader's pc
  std::vector<uint64_t> live_in;
  size_t words = 0;

  // Slot s holds a value known when compiling (an immediate, or one every
  // write moves in), in every lane that reads it.
  bool fixed(uint32_t s) const { return constant[s] || known[s] == 1; }
  uint64_t fixed_val(uint32_t s) const { return constant[s] ? const_val[s] : known_val[s]; }
  // Whether slot s is live in some lane on entry to the block at leader pc.
  bool live_at(size_t pc, uint32_t s) const;
};

// Analyzes `fn`, whose instruction code[pc] has the opcode text opcodes[pc]
// (kernel_opcodes; the trailing instruction the decoder adds has none).
Analysis analyze(const Function& fn, const std::vector<std::string>& opcodes);

// Which values and branches can differ between the lanes of one running
// group. A slot varies when its value can come from a thread's index
// (%tid, %laneid, %lanemask_*), from memory that other threads write, from
// an interpreter's handler, from a varying operand or guard, or from a
// write where lanes may have gone separate ways (any pc reachable from a
// divergent branch); a branch is divergent when its guard varies.
// Conservative: a branch not marked divergent never splits a group. The
// code generator does not need it (a branch tests its group's lanes when
// it runs); it documents the control flow for tests and diagnostics.
struct Divergence {
  std::vector<bool> varying;  // per slot
  std::vector<bool> branch;   // per pc: a kBra whose guard varies
};
Divergence divergence(const Function& fn, const Analysis& an);

}  // namespace rgpu::ptx::jit
