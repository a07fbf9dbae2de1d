// The opcodes of the pickle machine (pickle_machine.h) and the read-only graph helpers.
#include "server/engine/checkpoint/pickle.h"

#include <bit>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "server/engine/checkpoint/pickle_machine.h"

namespace libreyolo::engine {

bool PickleMachine::Call(ValueId callable, std::vector<ValueId> args) {
  if (V(callable).kind != PyKind::kGlobal) {
    return PushObject(absl::StrCat("<call of a ", PickleGraph::KindName(V(callable).kind), ">"),
                      std::move(args));
  }
  const std::string name = V(callable).s;  // a copy: New() may move the values
  if (name == "collections.OrderedDict" || name == "builtins.dict" ||
      name == "__builtin__.dict") {
    // torch.save pickles an OrderedDict as OrderedDict() then SETITEMS; an argument (a mapping
    // or a list of pairs) is read too, for pickles written by other tools.
    std::vector<std::pair<ValueId, ValueId>> kv;
    if (args.size() == 1) {
      const PyValue& src = V(args[0]);
      if (src.kind == PyKind::kDict) kv = src.entries;
      if (src.kind == PyKind::kList || src.kind == PyKind::kTuple) {
        for (ValueId pair : src.items) {
          const PyValue& p = V(pair);
          if ((p.kind == PyKind::kTuple || p.kind == PyKind::kList) && p.items.size() == 2) {
            kv.emplace_back(p.items[0], p.items[1]);
          }
        }
      }
    }
    const ValueId id = New(PyKind::kDict);
    if (id != kNoValue) V(id).entries = std::move(kv);
    return Push(id);
  }
  // Arguments are checked when (and only if) the tensor is needed: see checkpoint_convert.cc.
  if (name == "torch._utils._rebuild_tensor_v2") return PushNew(PyKind::kTensor, std::move(args));
  if ((name == "torch._utils._rebuild_parameter" ||
       name == "torch._utils._rebuild_parameter_with_state") &&
      !args.empty() && V(args[0]).kind == PyKind::kTensor) {
    return Push(args[0]);  // a Parameter is its data tensor; requires_grad does not matter here
  }
  return PushObject(name, std::move(args));
}

// torch.save's persistent ids: ('storage', storage class, key, location, numel).
bool PickleMachine::PersistentLoad(ValueId pid) {
  const PyValue& p = V(pid);
  if (p.kind != PyKind::kTuple || p.items.size() < 5 || V(p.items[0]).kind != PyKind::kString ||
      V(p.items[0]).s != "storage") {
    return Fail("unsupported persistent id (torch.save writes ('storage', type, key, "
                "location, numel))");
  }
  const ValueId type = p.items[1];
  const PyValue& key = V(p.items[2]);
  std::string key_text;
  if (key.kind == PyKind::kString) {
    key_text = key.s;
  } else if (key.kind == PyKind::kInt) {
    key_text = absl::StrCat(key.i);
  } else {
    return Fail("storage key is neither a string nor an int");
  }
  const PyValue& numel = V(p.items[4]);
  const int64_t count = numel.kind == PyKind::kInt ? numel.i : -1;
  const ValueId id = New(PyKind::kStorage);
  if (id != kNoValue) {
    V(id).s = std::move(key_text);
    V(id).items = {type};
    V(id).i = count;
  }
  return Push(id);
}

bool PickleMachine::Step(uint8_t op, bool* stopped) {
  ValueId a = kNoValue, b = kNoValue, c = kNoValue;
  std::vector<ValueId> items;
  uint64_t n = 0;
  absl::string_view s, t;
  switch (op) {
    case 0x80: return Uint(1, &n);  // PROTO: any version; unknown opcodes fail on their own
    case 0x95: return Uint(8, &n);  // FRAME: only a read-ahead hint
    case '.':                       // STOP
      if (!Pop(&a)) return false;
      graph_.root_ = a;
      *stopped = true;
      return true;
    case '(':  // MARK
      if (marks_.size() >= kMaxStack) return Fail("too many pickle MARKs");
      marks_.push_back(stack_.size());
      return true;
    case '0':  // POP: an item, or (like CPython) the innermost mark when none is above it
      if (stack_.size() > Fence()) {
        stack_.pop_back();
      } else if (!marks_.empty()) {
        marks_.pop_back();
      } else {
        return Fail("pickle stack underflow");
      }
      return true;
    case '1': return PopMark(&items);    // POP_MARK
    case '2': return Top(&a) && Push(a);  // DUP
    case 'N': return Push(kNone);
    case 0x88: return Push(kTrue);
    case 0x89: return Push(kFalse);
    case 'J': return Uint(4, &n) && PushInt(static_cast<int32_t>(static_cast<uint32_t>(n)));
    case 'K': return Uint(1, &n) && PushInt(static_cast<int64_t>(n));
    case 'M': return Uint(2, &n) && PushInt(static_cast<int64_t>(n));
    case 0x8a: return Uint(1, &n) && PushLong(n);  // LONG1
    case 0x8b:                                      // LONG4: the length is signed
      if (!Uint(4, &n)) return false;
      if (n > 0x7fffffff) return Fail("negative LONG4 length");
      return PushLong(n);
    case 'I':  // INT (protocol 0), which also spells True/False
    case 'L': {  // LONG (protocol 0)
      if (!Line(&s)) return false;
      if (op == 'I' && (s == "00" || s == "01")) return Push(s == "01" ? kTrue : kFalse);
      if (op == 'L' && !s.empty() && s.back() == 'L') s.remove_suffix(1);
      int64_t v = 0;
      if (absl::SimpleAtoi(s, &v)) return PushInt(v);
      if (op == 'L') return PushObject("builtins.int (too large)", {});
      return Fail("malformed INT");
    }
    case 'F': {  // FLOAT (protocol 0)
      double d = 0;
      if (!Line(&s)) return false;
      if (!absl::SimpleAtod(s, &d)) return Fail("malformed FLOAT");
      const ValueId id = New(PyKind::kFloat);
      if (id != kNoValue) V(id).f = d;
      return Push(id);
    }
    case 'G': {  // BINFLOAT: big-endian, unlike everything else
      if (!Take(8, &s)) return false;
      for (char ch : s) n = n << 8 | static_cast<uint8_t>(ch);
      const ValueId id = New(PyKind::kFloat);
      if (id != kNoValue) V(id).f = std::bit_cast<double>(n);
      return Push(id);
    }
    case 'X': return PushSized(PyKind::kString, 4);   // BINUNICODE
    case 0x8c: return PushSized(PyKind::kString, 1);  // SHORT_BINUNICODE
    case 0x8d: return PushSized(PyKind::kString, 8);  // BINUNICODE8
    case 'U': return PushSized(PyKind::kString, 1);   // SHORT_BINSTRING
    case 'T':                                          // BINSTRING: the length is signed
      if (!Uint(4, &n)) return false;
      if (n > 0x7fffffff) return Fail("negative BINSTRING length");
      return PushString(PyKind::kString, n);
    case 'C': return PushSized(PyKind::kBytes, 1);   // SHORT_BINBYTES
    case 'B': return PushSized(PyKind::kBytes, 4);   // BINBYTES
    case 0x8e: return PushSized(PyKind::kBytes, 8);  // BINBYTES8
    case 0x96: return PushSized(PyKind::kBytes, 8);  // BYTEARRAY8
    case '}': return PushNew(PyKind::kDict);
    case ']': return PushNew(PyKind::kList);
    case ')': return PushNew(PyKind::kTuple);
    case 0x8f: return PushNew(PyKind::kList);  // EMPTY_SET
    case 'd':                                   // DICT
      return PopMark(&items) && PushNew(PyKind::kDict) && Top(&a) && SetItems(a, items);
    case 'l': return PopMark(&items) && PushNew(PyKind::kList, std::move(items));
    case 't': return PopMark(&items) && PushNew(PyKind::kTuple, std::move(items));
    case 0x91: return PopMark(&items) && PushNew(PyKind::kList, std::move(items));  // FROZENSET
    case 0x85:  // TUPLE1..TUPLE3
    case 0x86:
    case 0x87:
      items.resize(op - 0x84u);
      for (size_t i = items.size(); i-- > 0;) {
        if (!Pop(&items[i])) return false;
      }
      return PushNew(PyKind::kTuple, std::move(items));
    case 'a': return Pop(&b) && Top(&a) && Append(a, {b});                  // APPEND
    case 'e': return PopMark(&items) && Top(&a) && Append(a, items);        // APPENDS
    case 0x90: return PopMark(&items) && Top(&a) && Append(a, items);       // ADDITEMS
    case 's': return Pop(&c) && Pop(&b) && Top(&a) && SetItems(a, {b, c});  // SETITEM
    case 'u': return PopMark(&items) && Top(&a) && SetItems(a, items);      // SETITEMS
    case 'p':                                                                // PUT
    case 'g':                                                                // GET
      if (!Line(&s)) return false;
      if (!absl::SimpleAtoi(s, &n)) return Fail("malformed memo key");
      return op == 'p' ? Memo(n) : Get(n);
    case 'q': return Uint(1, &n) && Memo(n);   // BINPUT
    case 'r': return Uint(4, &n) && Memo(n);   // LONG_BINPUT
    case 0x94: return Memo(memo_.size());      // MEMOIZE
    case 'h': return Uint(1, &n) && Get(n);    // BINGET
    case 'j': return Uint(4, &n) && Get(n);    // LONG_BINGET
    case 'c': return Line(&s) && Line(&t) && PushGlobal(s, t);  // GLOBAL
    case 0x93:                                                   // STACK_GLOBAL
      if (!Pop(&b) || !Pop(&a)) return false;
      if (V(a).kind != PyKind::kString || V(b).kind != PyKind::kString) {
        return Fail("STACK_GLOBAL needs two strings");
      }
      return PushGlobal(V(a).s, V(b).s);
    case 'R':   // REDUCE
    case 0x81:  // NEWOBJ: cls.__new__(cls, *args) is as opaque as a call
    case 0x92:  // NEWOBJ_EX: keyword arguments are ignored
      if ((op == 0x92 && !Pop(&c)) || !Pop(&b) || !Pop(&a)) return false;
      if (V(b).kind != PyKind::kTuple) return Fail("call arguments are not a tuple");
      return Call(a, V(b).items);
    case 'o':  // OBJ: MARK cls args...
      if (!PopMark(&items)) return false;
      if (items.empty()) return Fail("OBJ without a class");
      a = items.front();
      return Call(a, std::vector<ValueId>(items.begin() + 1, items.end()));
    case 'i':  // INST: module and name lines, MARK args...
      if (!Line(&s) || !Line(&t) || !PopMark(&items) || !PushGlobal(s, t) || !Pop(&a)) {
        return false;
      }
      return Call(a, std::move(items));
    case 'b':  // BUILD: OrderedDict's `_metadata` and other instance state are not needed
      if (!Pop(&b) || !Top(&a)) return false;
      if (V(a).kind == PyKind::kObject) V(a).state = b;
      return true;
    case 'Q': return Pop(&a) && PersistentLoad(a);  // BINPERSID
    case 'P':                                       // PERSID: a text id, never torch's
      return Line(&s) && Fail("unsupported persistent id (text PERSID)");
    default:
      return Fail(absl::StrFormat("unsupported pickle opcode 0x%02x", op));
  }
}

absl::StatusOr<PickleGraph> Unpickle(absl::string_view data, absl::string_view what) {
  return PickleMachine(data).Run(what);
}

std::optional<ValueId> PickleGraph::DictGet(ValueId dict, absl::string_view key) const {
  const PyValue& d = values_[dict];
  for (size_t i = d.entries.size(); i-- > 0;) {
    const PyValue& k = values_[d.entries[i].first];
    if (k.kind == PyKind::kString && k.s == key) return d.entries[i].second;
  }
  return std::nullopt;
}

const char* PickleGraph::KindName(PyKind kind) {
  switch (kind) {
    case PyKind::kNone: return "None";
    case PyKind::kBool: return "bool";
    case PyKind::kInt: return "int";
    case PyKind::kFloat: return "float";
    case PyKind::kString: return "str";
    case PyKind::kBytes: return "bytes";
    case PyKind::kTuple: return "tuple";
    case PyKind::kList: return "list";
    case PyKind::kDict: return "dict";
    case PyKind::kGlobal: return "class";
    case PyKind::kObject: return "object";
    case PyKind::kStorage: return "storage";
    case PyKind::kTensor: return "tensor";
  }
  return "?";
}

std::string PickleGraph::Repr(ValueId id, size_t max_chars) const {
  std::string out;
  ReprInto(id, 0, max_chars, &out);
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

// Every visit appends at least one character and stops once `max_chars` is reached, so shared
// or cyclic graphs cost at most O(max_chars) however they are wired.
void PickleGraph::ReprInto(ValueId id, int depth, size_t max_chars, std::string* out) const {
  if (out->size() >= max_chars) return;
  if (id >= values_.size() || depth > 16) {
    out->append("...");
    return;
  }
  const PyValue& v = values_[id];
  const auto seq = [&](const char* open, const char* close) {
    out->append(open);
    for (size_t i = 0; i < v.items.size() && out->size() < max_chars; ++i) {
      if (i > 0) out->append(", ");
      ReprInto(v.items[i], depth + 1, max_chars, out);
    }
    if (v.kind == PyKind::kTuple && v.items.size() == 1) out->append(",");
    out->append(close);
  };
  switch (v.kind) {
    case PyKind::kNone: out->append("None"); return;
    case PyKind::kBool: out->append(v.i != 0 ? "True" : "False"); return;
    case PyKind::kInt: absl::StrAppend(out, v.i); return;
    case PyKind::kFloat: {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v.f);  // shortest, like Python
      out->append(buf, r.ptr);
      return;
    }
    case PyKind::kString: absl::StrAppend(out, "'", v.s, "'"); return;
    case PyKind::kBytes: absl::StrAppend(out, "<", v.s.size(), " bytes>"); return;
    case PyKind::kTuple: seq("(", ")"); return;
    case PyKind::kList: seq("[", "]"); return;
    case PyKind::kDict:
      out->append("{");
      for (size_t i = 0; i < v.entries.size() && out->size() < max_chars; ++i) {
        if (i > 0) out->append(", ");
        ReprInto(v.entries[i].first, depth + 1, max_chars, out);
        out->append(": ");
        ReprInto(v.entries[i].second, depth + 1, max_chars, out);
      }
      out->append("}");
      return;
    case PyKind::kGlobal: out->append(v.s); return;
    case PyKind::kObject: absl::StrAppend(out, "<", v.s, " object>"); return;
    case PyKind::kStorage: absl::StrAppend(out, "<storage ", v.s, ">"); return;
    case PyKind::kTensor: out->append("<tensor>"); return;
  }
}

}  // namespace libreyolo::engine
