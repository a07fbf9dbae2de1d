// The checked CUPTI call (kineto's CUPTI_CALL): the call names itself, so no message types a
// CUPTI function's name by hand and no result is dropped unread. Built only with the CUDA
// toolkit (LIBREYOLO_CUPTI).
//
//   RETURN_IF_ERROR(CUPTI_CALL(cuptiActivityFlushAll(0)));
//   absl::Status s = CUPTI_CALL_FOR(cuptiActivityEnable(k.kind), k.name);
//
// OK when the call returned CUPTI_SUCCESS, else INTERNAL naming the call as written (and what
// it was for) with CUPTI's own error string: "cuptiActivityEnable(k.kind) for MEMCPY:
// CUPTI_ERROR_NOT_INITIALIZED". The call is evaluated once.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CALL_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CALL_H_

#include <cupti.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace libreyolo::engine {

inline absl::Status CuptiCallStatus(CUptiResult result, absl::string_view call,
                                    absl::string_view subject) {
  if (result == CUPTI_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    text = "unknown CUPTI error";
  }
  return absl::InternalError(
      absl::StrCat(call, subject.empty() ? "" : " for ", subject, ": ", text));
}

}  // namespace libreyolo::engine

#define CUPTI_CALL(call) ::libreyolo::engine::CuptiCallStatus((call), #call, {})
#define CUPTI_CALL_FOR(call, subject) \
  ::libreyolo::engine::CuptiCallStatus((call), #call, (subject))

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CALL_H_
