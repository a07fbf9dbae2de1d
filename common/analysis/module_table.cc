#include "common/analysis/module_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/trace/step_window.h"

namespace libreyolo {
namespace {

constexpr double kNsPerMs = 1e6;
constexpr std::string_view kPrefix = "nn.Module: ";
constexpr size_t kMaxNesting = 64;     // deeper frames count towards the deepest kept one
constexpr int kMaxModuleNesting = 32;  // deeper module scopes count towards their ancestor

enum class Kind : uint8_t { kModule, kOp, kRuntime };

// A CPU frame on one thread: a module scope, an op or a runtime call.
struct Frame {
  int64_t s = 0, e = 0;
  uint32_t event = 0;
  Kind kind = Kind::kOp;
};

// One module scope after nesting.
struct Scope {
  std::string path;
  int32_t parent = -1;  // enclosing scope, index into the scopes
  int nesting = 0;      // enclosing scopes
  int64_t end_ns = 0, dur_ns = 0, child_ns = 0;
  int64_t self_gpu_ns = 0, gpu_ns = 0, kernels = 0;
  double self_flops = 0, flops = 0;
};

struct KernelSum {
  int64_t ns = 0, count = 0;
};

// "a.b.c" -> {"a.b.c", "a.b", "a"}: the path and every enclosing path, innermost first.
std::vector<std::string> PathPrefixes(const std::string& path) {
  std::vector<std::string> out = {path};
  for (size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0;
       dot = path.rfind('.', dot - 1)) {
    out.push_back(path.substr(0, dot));
  }
  return out;
}

// `path` is `row` or lies under it ("head.decode" under "head", not "headx").
bool IsUnderPath(const std::string& path, const std::string& row) {
  return path == row ||
         (path.size() > row.size() && path.starts_with(row) && path[row.size()] == '.');
}

// The path of a scope named `name` inside `parent` (empty: top level).
std::string ScopePath(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  if (name.size() > parent.size() && name.starts_with(parent) && name[parent.size()] == '.') {
    return std::string(name);
  }
  std::string path(parent);
  path += '.';
  path += name;
  return path;
}

std::string Truncate(const std::string& path, int depth) {
  if (depth <= 0) return path;
  size_t pos = 0;
  for (int i = 0; i < depth; ++i) {
    pos = path.find('.', pos);
    if (pos == std::string::npos) return path;
    if (i + 1 < depth) ++pos;
  }
  return path.substr(0, pos);
}

std::string FrameName(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// One pass over the window's CPU frames per thread: module scopes with their nesting, GPU time
// and FLOPs, and (when `folded` is set) the self time of every distinct frame stack.
struct Pass {
  std::vector<Scope> scopes;  // per thread in time order: parents before children
  bool has_gpu = false, has_flops = false;
  std::map<std::string, int64_t> folded;  // stack -> self ns
};

// Walk's stages: the window's frames gathered by thread (and the kernels by correlation); each
// thread's frames nested, module scopes opened and charged with their ops' FLOPs and their
// calls' kernels, folded stacks closed; then the inclusive sums, children into parents.

using KernelsByCorrelation = absl::flat_hash_map<int64_t, KernelSum>;

// The window's CPU frames, by thread (std::map: stable order), and its kernels by correlation.
struct WindowFrames {
  KernelsByCorrelation kernel_of;
  std::map<uint32_t, std::vector<Frame>> frames;
};

WindowFrames GatherFrames(const TraceData& t, const StepWindow& win, Pass& out) {
  WindowFrames w;
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (!win.Contains(e.ts_ns)) continue;
    switch (e.cls) {
      case EventClass::kKernel:
        if (e.correlation != kNoId) {
          KernelSum& k = w.kernel_of[e.correlation];
          SatAdd(k.ns, e.dur_ns);
          ++k.count;
          out.has_gpu = true;
        }
        break;
      case EventClass::kModule:
        w.frames[e.thread].push_back(
            Frame{e.ts_ns, e.ts_ns + std::max<int64_t>(e.dur_ns, 0), i, Kind::kModule});
        break;
      case EventClass::kCpuOp:
        if (t.FlopsOf(e) >= 0) out.has_flops = true;
        w.frames[e.thread].push_back(
            Frame{e.ts_ns, e.ts_ns + std::max<int64_t>(e.dur_ns, 0), i, Kind::kOp});
        break;
      case EventClass::kRuntime:
        w.frames[e.thread].push_back(
            Frame{e.ts_ns, e.ts_ns + std::max<int64_t>(e.dur_ns, 0), i, Kind::kRuntime});
        break;
      default:
        break;
    }
  }
  return w;
}

// A frame still open while one thread's frames are nested.
struct OpenFrame {
  size_t frame;
  int32_t scope;      // innermost module scope at or above this frame (-1: none)
  int64_t child_ns;   // direct child frames' time (folded self time)
  std::string stack;  // folded: "a;b;c"
};

// Folded: a closing frame's self time (its time less its direct children's) to its stack.
void CloseFrame(const std::vector<Frame>& list, const OpenFrame& o, bool folded, Pass& out) {
  if (!folded) return;
  const Frame& f = list[o.frame];
  const int64_t self = std::max<int64_t>(f.e - f.s - o.child_ns, 0);
  if (self > 0) SatAdd(out.folded[o.stack], self);
}

// The op's FLOPs and the call's kernels belong to the innermost module.
void ChargeToScope(const TraceData& t, const Frame& f, const KernelsByCorrelation& kernel_of,
                   Scope& sc) {
  const TraceEvent& e = t.events[f.event];
  if (f.kind == Kind::kOp && t.FlopsOf(e) >= 0) sc.self_flops += t.FlopsOf(e);
  if (f.kind == Kind::kRuntime && e.correlation != kNoId) {
    const auto it = kernel_of.find(e.correlation);
    if (it != kernel_of.end()) {
      SatAdd(sc.self_gpu_ns, it->second.ns);
      sc.kernels += it->second.count;
    }
  }
}

// A module frame's scope inside `scope` (-1: top level), its time a child of its parent's;
// returns its index.
int32_t AddScope(const Frame& f, std::string_view name, int32_t scope, Pass& out) {
  Scope sc;
  sc.path = ScopePath(
      scope < 0 ? std::string_view() : out.scopes[static_cast<size_t>(scope)].path, name);
  sc.parent = scope;
  sc.nesting = scope < 0 ? 0 : out.scopes[static_cast<size_t>(scope)].nesting + 1;
  sc.end_ns = f.e;
  sc.dur_ns = f.e - f.s;
  if (scope >= 0) {
    Scope& par = out.scopes[static_cast<size_t>(scope)];
    SatAdd(par.child_ns, std::max<int64_t>(std::min(f.e, par.end_ns) - f.s, 0));
  }
  const auto own_scope = static_cast<int32_t>(out.scopes.size());
  out.scopes.push_back(std::move(sc));
  return own_scope;
}

// One thread's frames nested by time: module scopes opened, ops and calls charged to theirs,
// and (folded) each frame's self time given to its stack.
void NestThreadFrames(const TraceData& t, const KernelsByCorrelation& kernel_of,
                      std::vector<Frame>& list, bool folded, Pass& out) {
  std::sort(list.begin(), list.end(), [](const Frame& a, const Frame& b) {
    if (a.s != b.s) return a.s < b.s;
    if (a.e != b.e) return a.e > b.e;  // the longer one encloses
    return a.kind < b.kind;            // a module encloses an op of the same extent
  });
  std::vector<OpenFrame> open;
  for (size_t i = 0; i < list.size(); ++i) {
    const Frame& f = list[i];
    while (!open.empty() && list[open.back().frame].e <= f.s) {
      CloseFrame(list, open.back(), folded, out);
      open.pop_back();
    }
    const int32_t scope = open.empty() ? -1 : open.back().scope;
    std::string_view name = t.strings.Get(t.events[f.event].name);
    if (f.kind == Kind::kModule) name.remove_prefix(kPrefix.size());
    if (f.kind != Kind::kModule && scope >= 0) {
      ChargeToScope(t, f, kernel_of, out.scopes[static_cast<size_t>(scope)]);
    }
    if (open.size() >= kMaxNesting ||
        (f.kind == Kind::kModule && scope >= 0 &&
         out.scopes[static_cast<size_t>(scope)].nesting + 1 >= kMaxModuleNesting)) {
      continue;  // too deep: its time stays with the enclosing frame and module
    }
    if (!open.empty()) {
      const Frame& parent = list[open.back().frame];
      SatAdd(open.back().child_ns, std::max<int64_t>(std::min(f.e, parent.e) - f.s, 0));
    }
    int32_t own_scope = scope;
    std::string frame_name;
    if (f.kind == Kind::kModule) {
      own_scope = AddScope(f, name, scope, out);
      if (folded) frame_name = FrameName(out.scopes[static_cast<size_t>(own_scope)].path);
    } else if (folded) {
      frame_name = FrameName(name);
    }
    std::string stack;
    if (folded) {
      stack = open.empty() ? frame_name : absl::StrCat(open.back().stack, ";", frame_name);
    }
    open.push_back(OpenFrame{i, own_scope, 0, std::move(stack)});
  }
  while (!open.empty()) {
    CloseFrame(list, open.back(), folded, out);
    open.pop_back();
  }
}

// Inclusive GPU time, kernels and FLOPs: children come after their parents.
void SumIntoParents(std::vector<Scope>& scopes) {
  for (Scope& sc : scopes) {
    sc.gpu_ns = sc.self_gpu_ns;
    sc.flops = sc.self_flops;
  }
  for (size_t i = scopes.size(); i-- > 0;) {
    const Scope& sc = scopes[i];
    if (sc.parent < 0) continue;
    Scope& par = scopes[static_cast<size_t>(sc.parent)];
    SatAdd(par.gpu_ns, sc.gpu_ns);
    par.kernels += sc.kernels;
    par.flops += sc.flops;
  }
}

Pass Walk(const TraceData& t, const StepWindow& win, bool folded) {
  Pass out;
  WindowFrames w = GatherFrames(t, win, out);
  for (auto& thread_frames : w.frames) {
    NestThreadFrames(t, w.kernel_of, thread_frames.second, folded, out);
  }
  SumIntoParents(out.scopes);
  return out;
}

}  // namespace

ModuleTable BuildModuleTable(const TraceData& t, int depth) {
  const StepWindow win = FindStepWindow(t);
  ModuleTable table;
  table.steps = win.marks.empty() ? 1 : static_cast<int64_t>(win.marks.size());
  const double steps = static_cast<double>(table.steps);
  table.step_ms = static_cast<double>(win.w1_ns - win.w0_ns) / kNsPerMs / steps;
  Pass pass = Walk(t, win, /*folded=*/false);
  table.has_gpu = pass.has_gpu;
  table.has_flops = pass.has_flops;
  table.scopes = static_cast<int64_t>(pass.scopes.size());

  struct Acc {
    int64_t calls = 0, outermost = 0, cpu_ns = 0, self_ns = 0, gpu_ns = 0, self_gpu_ns = 0;
    int64_t kernels = 0;
    double flops = 0;
  };
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, Acc> acc;
  std::vector<std::string> row_of(pass.scopes.size());
  for (size_t i = 0; i < pass.scopes.size(); ++i) {
    row_of[i] = Truncate(pass.scopes[i].path, depth);
    if (acc.try_emplace(row_of[i]).second) order.push_back(row_of[i]);
  }
  // A row's totals hold every scope under its path, at every depth (issue 22: head.decode,
  // which runs after head rather than inside it, fell outside head's total at --depth 2): a
  // scope adds to its own row and to each row whose path is a prefix of its row's, once,
  // through its outermost enclosing scope under that row.
  for (size_t i = 0; i < pass.scopes.size(); ++i) {
    const Scope& sc = pass.scopes[i];
    Acc& own = acc.at(row_of[i]);
    SatAdd(own.self_ns, std::max<int64_t>(sc.dur_ns - sc.child_ns, 0));
    SatAdd(own.self_gpu_ns, sc.self_gpu_ns);
    // A call of the module itself: its exact path, not inside another call of it.
    bool nested_in_itself = false;
    for (int32_t j = sc.parent; j >= 0; j = pass.scopes[static_cast<size_t>(j)].parent) {
      nested_in_itself |= pass.scopes[static_cast<size_t>(j)].path == sc.path;
    }
    if (sc.path == row_of[i] && !nested_in_itself) ++own.calls;
    for (const std::string& row : PathPrefixes(row_of[i])) {
      const auto it = acc.find(row);
      if (it == acc.end()) continue;
      bool enclosed = false;
      for (int32_t j = sc.parent; j >= 0 && !enclosed;
           j = pass.scopes[static_cast<size_t>(j)].parent) {
        enclosed = IsUnderPath(row_of[static_cast<size_t>(j)], row);
      }
      if (enclosed) continue;
      Acc& a = it->second;
      ++a.outermost;
      SatAdd(a.cpu_ns, sc.dur_ns);
      SatAdd(a.gpu_ns, sc.gpu_ns);
      a.kernels += sc.kernels;
      a.flops += sc.flops;
    }
  }
  auto ms = [&](int64_t ns) { return static_cast<double>(ns) / kNsPerMs / steps; };
  table.rows.reserve(order.size());
  for (const std::string& path : order) {
    const Acc& a = acc.at(path);
    ModuleRow r;
    r.path = path;
    const size_t dot = path.rfind('.');
    r.name = dot == std::string::npos ? path : path.substr(dot + 1);
    r.depth = static_cast<int>(std::count(path.begin(), path.end(), '.'));
    // A row made only by cutting deeper paths (no scope of its own path): its outermost scopes.
    r.calls_per_step = static_cast<double>(a.calls > 0 ? a.calls : a.outermost) / steps;
    r.cpu_ms_per_step = ms(a.cpu_ns);
    r.self_cpu_ms_per_step = ms(a.self_ns);
    r.gpu_ms_per_step = ms(a.gpu_ns);
    r.self_gpu_ms_per_step = ms(a.self_gpu_ns);
    r.kernels_per_step = static_cast<double>(a.kernels) / steps;
    if (table.has_flops) r.flops_per_step = a.flops / steps;
    r.pct_of_step = table.step_ms > 0 ? 100.0 * r.cpu_ms_per_step / table.step_ms : 0.0;
    table.rows.push_back(std::move(r));
  }
  return table;
}

std::string FoldedStacks(const TraceData& t) {
  const Pass pass = Walk(t, FindStepWindow(t), /*folded=*/true);
  std::string out;
  for (const auto& [stack, ns] : pass.folded) {
    const auto us = static_cast<int64_t>(std::llround(static_cast<double>(ns) / 1000.0));
    if (us > 0) absl::StrAppend(&out, stack, " ", us, "\n");
  }
  return out;
}

}  // namespace libreyolo
