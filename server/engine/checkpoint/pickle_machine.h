// The pickle machine's state and its small helpers; the opcodes are in pickle.cc. Internal to
// the checkpoint reader.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_MACHINE_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_MACHINE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/engine/checkpoint/pickle.h"

namespace libreyolo::engine {

// Hostile input must fail, not exhaust memory: every structure the machine grows is capped.
// A LibreYOLO9-t checkpoint needs ~25k values, ~13k memo slots and a stack of ~2k (pickle
// batches SETITEMS by 1000 pairs), so the caps leave room for models 40x larger.
inline constexpr size_t kMaxValues = size_t{1} << 20;
inline constexpr size_t kMaxStack = size_t{1} << 20;
inline constexpr size_t kMaxMemo = size_t{1} << 21;

// Runs one pickle. Every opcode handler returns false after Fail() recorded why.
class PickleMachine {
 public:
  explicit PickleMachine(absl::string_view data) : data_(data) {}

  absl::StatusOr<PickleGraph> Run(absl::string_view what) {
    // Three shared singletons, so None/True/False cost no value each.
    New(PyKind::kNone);
    New(PyKind::kBool);
    graph_.values_[New(PyKind::kBool)].i = 1;
    bool stopped = false;
    while (!stopped) {
      op_at_ = pos_;
      uint8_t op = 0;
      if (!Byte(&op) || !Step(op, &stopped)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": ", error_, " (at byte ", op_at_, ")"));
      }
    }
    return std::move(graph_);
  }

 private:
  static constexpr ValueId kNone = 0, kFalse = 1, kTrue = 2;

  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  // New() may move every value: no PyValue reference from V() may be held across it.
  ValueId New(PyKind kind) {
    if (graph_.values_.size() >= kMaxValues) return kNoValue;
    graph_.values_.emplace_back().kind = kind;
    return static_cast<ValueId>(graph_.values_.size() - 1);
  }
  PyValue& V(ValueId id) { return graph_.values_[id]; }

  bool Take(uint64_t n, absl::string_view* out) {
    if (n > data_.size() - pos_) return Fail("truncated pickle");
    *out = data_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool Byte(uint8_t* b) {
    absl::string_view s;
    if (!Take(1, &s)) return false;
    *b = static_cast<uint8_t>(s[0]);
    return true;
  }
  bool Uint(int n, uint64_t* v) {
    absl::string_view s;
    if (!Take(static_cast<uint64_t>(n), &s)) return false;
    *v = 0;
    for (int i = n - 1; i >= 0; --i) *v = *v << 8 | static_cast<uint8_t>(s[static_cast<size_t>(i)]);
    return true;
  }
  bool Line(absl::string_view* out) {
    const size_t end = data_.find('\n', pos_);
    if (end == absl::string_view::npos) return Fail("truncated pickle (unterminated line)");
    *out = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }

  bool Push(ValueId id) {
    if (id == kNoValue) return Fail(absl::StrCat("more than ", kMaxValues, " values"));
    if (stack_.size() >= kMaxStack) return Fail("pickle stack too deep");
    stack_.push_back(id);
    return true;
  }
  // Like CPython, nothing below the innermost MARK may be popped.
  size_t Fence() const { return marks_.empty() ? 0 : marks_.back(); }
  bool Pop(ValueId* id) {
    if (stack_.size() <= Fence()) return Fail("pickle stack underflow");
    *id = stack_.back();
    stack_.pop_back();
    return true;
  }
  bool Top(ValueId* id) {
    if (stack_.size() <= Fence()) return Fail("pickle stack underflow");
    *id = stack_.back();
    return true;
  }
  // Moves the items above the innermost MARK into `out` and drops the mark.
  bool PopMark(std::vector<ValueId>* out) {
    if (marks_.empty()) return Fail("pickle MARK missing");
    const size_t mark = marks_.back();
    marks_.pop_back();
    out->assign(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return true;
  }

  bool PushNew(PyKind kind, std::vector<ValueId> items = {}) {
    const ValueId id = New(kind);
    if (id != kNoValue) V(id).items = std::move(items);
    return Push(id);
  }
  bool PushInt(int64_t v) {
    const ValueId id = New(PyKind::kInt);
    if (id != kNoValue) V(id).i = v;
    return Push(id);
  }
  bool PushString(PyKind kind, uint64_t n) {
    absl::string_view s;
    if (!Take(n, &s)) return false;
    const ValueId id = New(kind);
    if (id != kNoValue) V(id).s = std::string(s);
    return Push(id);
  }
  bool PushSized(PyKind kind, int len_bytes) {
    uint64_t n = 0;
    return Uint(len_bytes, &n) && PushString(kind, n);
  }
  bool PushLong(uint64_t n) {  // two's complement, little-endian, n bytes
    absl::string_view s;
    if (!Take(n, &s)) return false;
    if (n > 8) return PushObject("builtins.int (too large)", {});
    uint64_t u = 0;
    for (size_t i = s.size(); i-- > 0;) u = u << 8 | static_cast<uint8_t>(s[i]);
    const bool negative = n > 0 && (static_cast<uint8_t>(s[n - 1]) & 0x80) != 0;
    if (negative && n < 8) u |= ~uint64_t{0} << (8 * n);  // sign-extend
    return PushInt(static_cast<int64_t>(u));
  }
  bool PushObject(std::string cls, std::vector<ValueId> args) {
    const ValueId id = New(PyKind::kObject);
    if (id != kNoValue) {
      V(id).s = std::move(cls);
      V(id).items = std::move(args);
    }
    return Push(id);
  }
  // `module` and `name` may point into values (STACK_GLOBAL), so they are copied before New().
  bool PushGlobal(absl::string_view module, absl::string_view name) {
    std::string full = absl::StrCat(module, ".", name);
    const ValueId id = New(PyKind::kGlobal);
    if (id != kNoValue) V(id).s = std::move(full);
    return Push(id);
  }

  bool Memo(uint64_t key) {
    ValueId id = kNoValue;
    if (!Top(&id)) return false;
    if (memo_.size() >= kMaxMemo && !memo_.contains(key)) return Fail("pickle memo too large");
    memo_[key] = id;
    return true;
  }
  bool Get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) return Fail(absl::StrCat("pickle memo key ", key, " not found"));
    return Push(it->second);
  }

  // Adds `items` to the list (or opaque container) `target`.
  bool Append(ValueId target, const std::vector<ValueId>& items) {
    PyValue& t = V(target);
    if (t.kind != PyKind::kList && t.kind != PyKind::kObject) {
      return Fail(absl::StrCat("APPEND to a ", PickleGraph::KindName(t.kind)));
    }
    t.items.insert(t.items.end(), items.begin(), items.end());
    return true;
  }
  // Adds key/value pairs to the dict (or opaque mapping) `target`.
  bool SetItems(ValueId target, const std::vector<ValueId>& kv) {
    PyValue& t = V(target);
    if (t.kind != PyKind::kDict && t.kind != PyKind::kObject) {
      return Fail(absl::StrCat("SETITEM on a ", PickleGraph::KindName(t.kind)));
    }
    if (kv.size() % 2 != 0) return Fail("SETITEMS with an odd number of items");
    for (size_t i = 0; i < kv.size(); i += 2) t.entries.emplace_back(kv[i], kv[i + 1]);
    return true;
  }

  bool Call(ValueId callable, std::vector<ValueId> args);
  bool PersistentLoad(ValueId pid);
  bool Step(uint8_t op, bool* stopped);

  absl::string_view data_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  std::string error_;
  PickleGraph graph_;
  std::vector<ValueId> stack_;
  std::vector<size_t> marks_;
  absl::flat_hash_map<uint64_t, ValueId> memo_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_MACHINE_H_
