#include "common/report/layer_table.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/report/trace_timeline.h"

namespace libreyolo {
namespace {

constexpr double kNsPerMs = 1e6;
constexpr std::string_view kPrefix = "nn.Module: ";
constexpr size_t kMaxDepth = 32;  // module paths deeper than this share their ancestor's row

struct Scope {
  int64_t s = 0, e = 0;
  uint32_t name = 0;
  size_t row = 0;        // index into the rows
  int32_t parent = -1;   // enclosing scope (index into the thread's scopes)
  int64_t child_ns = 0;  // wall time of directly enclosed scopes
};

struct Acc {
  std::string path, name;
  int depth = 0;
  int64_t calls = 0, cpu_ns = 0, self_ns = 0, gpu_ns = 0, self_gpu_ns = 0, kernels = 0;
};

}  // namespace

std::vector<LayerRow> BuildLayerTable(const TraceData& t) {
  const StepWindow win = FindStepWindow(t);
  // Module scopes and launch calls per thread; kernel time by correlation id.
  std::map<uint32_t, std::vector<Scope>> scopes;
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> launches;  // (ts, correlation)
  absl::flat_hash_map<int64_t, std::pair<int64_t, int64_t>> kernel_of;    // corr -> (ns, count)
  for (const TraceEvent& e : t.events) {
    if (!win.Contains(e.ts_ns)) continue;
    if (e.cls == EventClass::kModule) {
      scopes[e.thread].push_back(Scope{e.ts_ns, e.ts_ns + e.dur_ns, e.name});
    } else if (e.cls == EventClass::kKernel && e.correlation != kNoId) {
      auto& k = kernel_of[e.correlation];
      SatAdd(k.first, e.dur_ns);
      ++k.second;
    }
  }
  if (scopes.empty()) return {};
  for (const TraceEvent& e : t.events) {
    if (e.cls == EventClass::kRuntime && e.correlation != kNoId && win.Contains(e.ts_ns) &&
        kernel_of.contains(e.correlation) && scopes.contains(e.thread)) {
      launches[e.thread].emplace_back(e.ts_ns, e.correlation);
    }
  }

  std::vector<Acc> rows;
  absl::flat_hash_map<std::string, size_t> row_of;
  for (auto& [thread, list] : scopes) {
    std::sort(list.begin(), list.end(), [](const Scope& a, const Scope& b) {
      return a.s != b.s ? a.s < b.s : a.e > b.e;  // parents before their children
    });
    // Nesting and paths, with a stack of open scopes.
    std::vector<size_t> open;
    for (size_t i = 0; i < list.size(); ++i) {
      Scope& sc = list[i];
      while (!open.empty() && list[open.back()].e <= sc.s) open.pop_back();
      std::string_view name = t.strings.Get(sc.name);
      name.remove_prefix(kPrefix.size());
      std::string path(name);
      if (!open.empty()) {
        sc.parent = static_cast<int32_t>(open.back());
        Scope& par = list[open.back()];
        SatAdd(par.child_ns, std::min(sc.e, par.e) - sc.s);
        if (open.size() >= kMaxDepth) {  // deeper scopes count towards their ancestor's row
          sc.row = par.row;
          open.push_back(i);
          continue;
        }
        path = absl::StrCat(rows[par.row].path, "/", std::string(name));
      }
      auto [it, inserted] = row_of.try_emplace(path, rows.size());
      if (inserted) rows.push_back(Acc{path, std::string(name), static_cast<int>(open.size())});
      sc.row = it->second;
      open.push_back(i);
    }
    // Each launch goes to the innermost scope open at its start; its kernels' time to that
    // scope (self) and to every enclosing one.
    auto& calls = launches[thread];
    std::sort(calls.begin(), calls.end());
    open.clear();
    size_t next = 0;
    std::vector<int64_t> self_gpu(list.size(), 0), kernels(list.size(), 0);
    for (const auto& [ts, corr] : calls) {
      while (next < list.size() && list[next].s <= ts) {
        while (!open.empty() && list[open.back()].e <= list[next].s) open.pop_back();
        open.push_back(next++);
      }
      while (!open.empty() && list[open.back()].e <= ts) open.pop_back();
      if (open.empty()) continue;
      const auto& [ns, count] = kernel_of.at(corr);
      SatAdd(self_gpu[open.back()], ns);
      kernels[open.back()] += count;
    }
    // Inclusive GPU time and kernels: children come after their parents in `list`.
    std::vector<int64_t> gpu = self_gpu;
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i].parent < 0) continue;
      SatAdd(gpu[static_cast<size_t>(list[i].parent)], gpu[i]);
      kernels[static_cast<size_t>(list[i].parent)] += kernels[i];
    }
    for (size_t i = 0; i < list.size(); ++i) {
      Acc& a = rows[list[i].row];
      ++a.calls;
      SatAdd(a.cpu_ns, list[i].e - list[i].s);
      SatAdd(a.self_ns, std::max<int64_t>(list[i].e - list[i].s - list[i].child_ns, 0));
      SatAdd(a.gpu_ns, gpu[i]);
      SatAdd(a.self_gpu_ns, self_gpu[i]);
      a.kernels += kernels[i];
    }
  }
  const double steps = win.marks.empty() ? 1.0 : static_cast<double>(win.marks.size());
  auto per_step_ms = [&](int64_t ns) { return static_cast<double>(ns) / kNsPerMs / steps; };
  std::vector<LayerRow> out;
  out.reserve(rows.size());
  for (const Acc& a : rows) {
    out.push_back(LayerRow{a.path, a.name, a.depth, static_cast<double>(a.calls) / steps,
                           per_step_ms(a.cpu_ns), per_step_ms(a.self_ns), per_step_ms(a.gpu_ns),
                           per_step_ms(a.self_gpu_ns), static_cast<double>(a.kernels) / steps});
  }
  return out;
}

}  // namespace libreyolo
