#include "wire/reader_spec/reader_request.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status/status_macros.h"

namespace libreyolo::readerspec {
namespace {

absl::Status WantRefs(const ReaderDef& def, const std::vector<v1::ProfileRef>& refs) {
  const size_t n = def.inputs;
  if (refs.size() == n) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(def.name, " reads ", n, " profile", n == 1 ? "" : "s", ", got ", refs.size()));
}

using Refs = std::vector<v1::ProfileRef>;

// Each reader's two functions: its options and refs into its request, and back. `to` gets refs
// of the reader's count (WantRefs ran); `from` sets only the reader's own options.
void SummaryTo(const ReaderInvocation&, const Refs& refs, v1::ReadRequest& r) {
  *r.mutable_summary()->mutable_profile() = refs[0];
}
Refs SummaryFrom(const v1::ReadRequest& r, ReaderInvocation&) { return {r.summary().profile()}; }

void GetTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::GetRequest& q = *r.mutable_get();
  *q.mutable_profile() = refs[0];
  if (inv.field) q.set_field(*inv.field);
}
Refs GetFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  if (!r.get().field().empty()) inv.field = r.get().field();
  return {r.get().profile()};
}

void PhasesTo(const ReaderInvocation&, const Refs& refs, v1::ReadRequest& r) {
  *r.mutable_phases()->mutable_profile() = refs[0];
}
Refs PhasesFrom(const v1::ReadRequest& r, ReaderInvocation&) { return {r.phases().profile()}; }

void KernelsTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::KernelsRequest& q = *r.mutable_kernels();
  const KernelsOptions& o = inv.kernels;
  *q.mutable_profile() = refs[0];
  q.set_top(o.top);
  if (o.category) q.set_category(*o.category);
  if (o.grep) q.set_grep(*o.grep);
  q.set_tensorcore(o.tensorcore_only);
  q.set_sort(o.sort);
  if (o.phase) q.set_phase(*o.phase);
}
Refs KernelsFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  const v1::KernelsRequest& q = r.kernels();
  KernelsOptions& o = inv.kernels;
  if (q.has_top()) o.top = q.top();
  if (!q.category().empty()) o.category = q.category();
  if (!q.grep().empty()) o.grep = q.grep();
  o.tensorcore_only = q.tensorcore();
  if (!q.sort().empty()) o.sort = q.sort();
  if (!q.phase().empty()) o.phase = q.phase();
  return {q.profile()};
}

void OpsTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::OpsRequest& q = *r.mutable_ops();
  const OpsOptions& o = inv.ops;
  *q.mutable_profile() = refs[0];
  q.set_top(o.top);
  if (o.phase) q.set_phase(*o.phase);
  q.set_sort(o.sort);
  q.set_group_by_input_shape(o.group_by_input_shape);
}
Refs OpsFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  const v1::OpsRequest& q = r.ops();
  OpsOptions& o = inv.ops;
  if (q.has_top()) o.top = q.top();
  if (!q.phase().empty()) o.phase = q.phase();
  if (!q.sort().empty()) o.sort = q.sort();
  o.group_by_input_shape = q.group_by_input_shape();
  return {q.profile()};
}

void ModulesTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::ModulesRequest& q = *r.mutable_modules();
  const ModulesOptions& o = inv.modules;
  *q.mutable_profile() = refs[0];
  if (o.depth > 0) q.set_depth(o.depth);
  q.set_sort(o.sort);
  q.set_format(o.format);
}
Refs ModulesFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  const v1::ModulesRequest& q = r.modules();
  ModulesOptions& o = inv.modules;
  if (q.has_depth()) o.depth = q.depth();
  if (!q.sort().empty()) o.sort = q.sort();
  if (!q.format().empty()) o.format = q.format();
  return {q.profile()};
}

void CompareTo(const ReaderInvocation&, const Refs& refs, v1::ReadRequest& r) {
  *r.mutable_compare()->mutable_before() = refs[0];
  *r.mutable_compare()->mutable_after() = refs[1];
}
Refs CompareFrom(const v1::ReadRequest& r, ReaderInvocation&) {
  return {r.compare().before(), r.compare().after()};
}

void WhatIfTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::WhatIfRequest& q = *r.mutable_what_if();
  *q.mutable_profile() = refs[0];
  if (inv.what_if.remove_category) q.set_remove_category(*inv.what_if.remove_category);
  if (inv.what_if.remove_launches) q.set_remove_launches(*inv.what_if.remove_launches);
}
Refs WhatIfFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  const v1::WhatIfRequest& q = r.what_if();
  if (q.change_case() == v1::WhatIfRequest::kRemoveCategory) {
    inv.what_if.remove_category = q.remove_category();
  } else if (q.change_case() == v1::WhatIfRequest::kRemoveLaunches) {
    inv.what_if.remove_launches = q.remove_launches();
  }
  return {q.profile()};
}

void LatencyTo(const ReaderInvocation& inv, const Refs& refs, v1::ReadRequest& r) {
  v1::LatencyRequest& q = *r.mutable_latency();
  *q.mutable_profile() = refs[0];
  q.set_buckets(inv.latency.buckets);
  q.set_slowest(inv.latency.slowest);
}
Refs LatencyFrom(const v1::ReadRequest& r, ReaderInvocation& inv) {
  const v1::LatencyRequest& q = r.latency();
  if (q.has_buckets()) inv.latency.buckets = q.buckets();
  if (q.has_slowest()) inv.latency.slowest = q.slowest();
  return {q.profile()};
}

}  // namespace

const std::vector<ReaderWire>& ReaderWires() {
  using R = v1::ReadRequest;
  static const auto* rows = new std::vector<ReaderWire>{
      {ReaderId::kSummary, R::kSummary, SummaryTo, SummaryFrom},
      {ReaderId::kGet, R::kGet, GetTo, GetFrom},
      {ReaderId::kPhases, R::kPhases, PhasesTo, PhasesFrom},
      {ReaderId::kKernels, R::kKernels, KernelsTo, KernelsFrom},
      {ReaderId::kOps, R::kOps, OpsTo, OpsFrom},
      {ReaderId::kModules, R::kModules, ModulesTo, ModulesFrom},
      {ReaderId::kCompare, R::kCompare, CompareTo, CompareFrom},
      {ReaderId::kWhatIf, R::kWhatIf, WhatIfTo, WhatIfFrom},
      {ReaderId::kLatency, R::kLatency, LatencyTo, LatencyFrom},
  };
  return *rows;
}

const ReaderWire* FindReaderWire(ReaderId id) {
  const auto& rows = ReaderWires();
  auto it = std::find_if(rows.begin(), rows.end(), [&](const ReaderWire& w) { return w.id == id; });
  return it == rows.end() ? nullptr : &*it;
}

const ReaderWire* FindReaderWire(v1::ReadRequest::ReaderCase wire_case) {
  const auto& rows = ReaderWires();
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const ReaderWire& w) { return w.wire_case == wire_case; });
  return it == rows.end() ? nullptr : &*it;
}

std::string WireFieldName(v1::ReadRequest::ReaderCase wire_case) {
  const auto* field = v1::ReadRequest::descriptor()->FindFieldByNumber(wire_case);
  return field == nullptr ? std::string() : std::string(field->name());
}

std::string ReaderNotSetMessage() {
  std::vector<std::string> names;
  for (const ReaderWire& w : ReaderWires()) names.push_back(WireFieldName(w.wire_case));
  return absl::StrCat("reader: set one of ", absl::StrJoin(names, ", "));
}

absl::StatusOr<v1::ReadRequest> ToReadRequest(const ReaderInvocation& inv,
                                              const std::vector<v1::ProfileRef>& refs) {
  RETURN_IF_ERROR(WantRefs(Reader(inv.reader), refs));
  const ReaderWire* wire = FindReaderWire(inv.reader);
  if (wire == nullptr) {
    return absl::InternalError(
        absl::StrCat(Reader(inv.reader).name, " has no row in ReaderWires()"));
  }
  v1::ReadRequest r;
  wire->to(inv, refs, r);
  return r;
}

absl::StatusOr<ReadCall> FromReadRequest(const v1::ReadRequest& req) {
  const ReaderWire* wire = FindReaderWire(req.reader_case());
  if (wire == nullptr) return absl::InvalidArgumentError(ReaderNotSetMessage());
  ReadCall c;
  c.invocation.reader = wire->id;
  c.refs = wire->from(req, c.invocation);
  return c;
}

}  // namespace libreyolo::readerspec
