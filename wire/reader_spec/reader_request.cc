#include "wire/reader_spec/reader_request.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo::readerspec {
namespace {

absl::Status WantRefs(const ReaderDef& def, const std::vector<v1::ProfileRef>& refs) {
  const size_t n = def.inputs;
  if (refs.size() == n) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(def.name, " reads ", n, " profile", n == 1 ? "" : "s", ", got ", refs.size()));
}

}  // namespace

absl::StatusOr<v1::ReadRequest> ToReadRequest(const ReaderInvocation& inv,
                                              const std::vector<v1::ProfileRef>& refs) {
  v1::ReadRequest r;
  RETURN_IF_ERROR(WantRefs(Reader(inv.reader), refs));
  switch (inv.reader) {
    case ReaderId::kSummary:
      *r.mutable_summary()->mutable_profile() = refs[0];
      break;
    case ReaderId::kGet: {
      v1::GetRequest& q = *r.mutable_get();
      *q.mutable_profile() = refs[0];
      if (inv.field) q.set_field(*inv.field);
      break;
    }
    case ReaderId::kPhases:
      *r.mutable_phases()->mutable_profile() = refs[0];
      break;
    case ReaderId::kKernels: {
      v1::KernelsRequest& q = *r.mutable_kernels();
      const KernelsOptions& o = inv.kernels;
      *q.mutable_profile() = refs[0];
      q.set_top(o.top);
      if (o.category) q.set_category(*o.category);
      if (o.grep) q.set_grep(*o.grep);
      q.set_tensorcore(o.tensorcore_only);
      q.set_sort(o.sort);
      if (o.phase) q.set_phase(*o.phase);
      break;
    }
    case ReaderId::kOps: {
      v1::OpsRequest& q = *r.mutable_ops();
      const OpsOptions& o = inv.ops;
      *q.mutable_profile() = refs[0];
      q.set_top(o.top);
      if (o.phase) q.set_phase(*o.phase);
      q.set_sort(o.sort);
      q.set_group_by_input_shape(o.group_by_input_shape);
      break;
    }
    case ReaderId::kModules: {
      v1::ModulesRequest& q = *r.mutable_modules();
      const ModulesOptions& o = inv.modules;
      *q.mutable_profile() = refs[0];
      if (o.depth > 0) q.set_depth(o.depth);
      q.set_sort(o.sort);
      q.set_format(o.format);
      break;
    }
    case ReaderId::kCompare:
      *r.mutable_compare()->mutable_before() = refs[0];
      *r.mutable_compare()->mutable_after() = refs[1];
      break;
    case ReaderId::kWhatIf: {
      v1::WhatIfRequest& q = *r.mutable_what_if();
      *q.mutable_profile() = refs[0];
      if (inv.what_if.remove_category) q.set_remove_category(*inv.what_if.remove_category);
      if (inv.what_if.remove_launches) q.set_remove_launches(*inv.what_if.remove_launches);
      break;
    }
  }
  return r;
}

absl::StatusOr<ReadCall> FromReadRequest(const v1::ReadRequest& req) {
  ReadCall c;
  ReaderInvocation& inv = c.invocation;
  switch (req.reader_case()) {
    case v1::ReadRequest::kSummary:
      inv.reader = ReaderId::kSummary;
      c.refs = {req.summary().profile()};
      break;
    case v1::ReadRequest::kGet:
      inv.reader = ReaderId::kGet;
      if (!req.get().field().empty()) inv.field = req.get().field();
      c.refs = {req.get().profile()};
      break;
    case v1::ReadRequest::kPhases:
      inv.reader = ReaderId::kPhases;
      c.refs = {req.phases().profile()};
      break;
    case v1::ReadRequest::kKernels: {
      const v1::KernelsRequest& q = req.kernels();
      KernelsOptions& o = inv.kernels;
      inv.reader = ReaderId::kKernels;
      if (q.has_top()) o.top = q.top();
      if (!q.category().empty()) o.category = q.category();
      if (!q.grep().empty()) o.grep = q.grep();
      o.tensorcore_only = q.tensorcore();
      if (!q.sort().empty()) o.sort = q.sort();
      if (!q.phase().empty()) o.phase = q.phase();
      c.refs = {q.profile()};
      break;
    }
    case v1::ReadRequest::kOps: {
      const v1::OpsRequest& q = req.ops();
      OpsOptions& o = inv.ops;
      inv.reader = ReaderId::kOps;
      if (q.has_top()) o.top = q.top();
      if (!q.phase().empty()) o.phase = q.phase();
      if (!q.sort().empty()) o.sort = q.sort();
      o.group_by_input_shape = q.group_by_input_shape();
      c.refs = {q.profile()};
      break;
    }
    case v1::ReadRequest::kModules: {
      const v1::ModulesRequest& q = req.modules();
      ModulesOptions& o = inv.modules;
      inv.reader = ReaderId::kModules;
      if (q.has_depth()) o.depth = q.depth();
      if (!q.sort().empty()) o.sort = q.sort();
      if (!q.format().empty()) o.format = q.format();
      c.refs = {q.profile()};
      break;
    }
    case v1::ReadRequest::kCompare:
      inv.reader = ReaderId::kCompare;
      c.refs = {req.compare().before(), req.compare().after()};
      break;
    case v1::ReadRequest::kWhatIf: {
      const v1::WhatIfRequest& q = req.what_if();
      inv.reader = ReaderId::kWhatIf;
      if (q.change_case() == v1::WhatIfRequest::kRemoveCategory) {
        inv.what_if.remove_category = q.remove_category();
      } else if (q.change_case() == v1::WhatIfRequest::kRemoveLaunches) {
        inv.what_if.remove_launches = q.remove_launches();
      }
      c.refs = {q.profile()};
      break;
    }
    case v1::ReadRequest::READER_NOT_SET:
      return absl::InvalidArgumentError(
          "reader: set one of summary, get, phases, kernels, ops, modules, compare, what_if");
  }
  return c;
}

}  // namespace libreyolo::readerspec
