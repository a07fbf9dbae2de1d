// The field checks of every request at the API edge: string lengths and character sets, where
// a job's inputs may come from, and (through the job spec's one validator,
// wire/job_spec/job_spec.h) the options' ranges, enum values and the daemon's limits. Bad
// values are INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a value over one of the daemon's
// configured `limits`) naming the field. Counts are compared with overflow-safe arithmetic, so
// no value up to 2^63-1 wraps past a limit. Error messages echo at most a short, terminal-safe
// excerpt of a value (libreyolo::Excerpt). Also decides whether a request may name paths on
// this host (private daemons only, for a caller with the daemon's uid). docs/rpc.md lists
// every bound.
#ifndef LIBREYOLO_SERVER_DAEMON_RPC_REQUEST_VALIDATION_H_
#define LIBREYOLO_SERVER_DAEMON_RPC_REQUEST_VALIDATION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/plain_name.h"
#include "server/daemon/security/auth.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// Bounds of the contract that are not daemon settings (docs/rpc.md, "Bounds"); those of a job's
// options are the job spec's (wire/job_spec/job_defaults.h).
inline constexpr size_t kMaxLocalPathBytes = 4096;  // a caller's path on a private daemon
inline constexpr int kMaxWeightsSearched = 8;       // ModelOptions.weights_searched
inline constexpr size_t kMaxShortStringBytes = 64;  // device, size, sort, phase, category, ...
inline constexpr size_t kMaxTextBytes = 256;        // label values, owner, grep, field, ...
inline constexpr size_t kMaxRequestIdBytes = 128;
inline constexpr int kMaxLabels = 32;
inline constexpr size_t kMaxLabelKeyBytes = 63;
inline constexpr int kMaxInlineImages = 1000;
inline constexpr int kMaxStates = 16;
inline constexpr int64_t kMaxSyntheticImages = 1000000;

// True when `who` may name local paths: the daemon allows it and the caller is on the Unix
// socket with the daemon's own uid.
bool MayNameLocalPaths(const DaemonConfig& config, const Identity& who);

// Validates a SubmitJob request. `device` receives the normalised device ("cpu", "cuda:0").
absl::Status ValidateSubmit(const v1::SubmitJobRequest& r, const DaemonConfig& config,
                            const Identity& who, std::string* device);

// Who an attach job is submitted as (issue 37 §4): `who`, with the Unix uid a token user maps to
// through the daemon's attach_unix_users; PERMISSION_DENIED with the reason when the caller may
// attach to nobody's processes (a token user without a mapping, a token of another user sent
// over the Unix socket), FAILED_PRECONDITION when the daemon serves no attach endpoint or the
// mapped Unix user is gone from the host.
absl::StatusOr<Identity> AttachIdentity(const Identity& who, const DaemonConfig& config);

// A label key: [a-z0-9_.-/]{1,63}. A label value: at most 256 bytes of printable UTF-8 (no
// control characters, no tab/CR/newline, no bidirectional overrides; libreyolo::IsPrintableUtf8).
bool IsLabelKey(const std::string& key);
bool IsLabelValue(const std::string& value);

// A required job id in `field` ("job_id", "profile.job_id"): not empty, at most 64 bytes of
// [A-Za-z0-9_-].
absl::Status ValidateJobId(const std::string& field, const std::string& id);

// The other requests, checked before they reach the job manager or the store.
absl::Status ValidateRequest(const v1::WatchJobRequest& r);
absl::Status ValidateRequest(const v1::GetJobRequest& r);
absl::Status ValidateRequest(const v1::CancelJobRequest& r);
absl::Status ValidateRequest(const v1::DeleteJobRequest& r);
absl::Status ValidateRequest(const v1::ListJobsRequest& r);
absl::Status ValidateRequest(const v1::ReadArtifactRequest& r);
absl::Status ValidateRequest(const v1::SummaryRequest& r);
absl::Status ValidateRequest(const v1::GetRequest& r);
absl::Status ValidateRequest(const v1::PhasesRequest& r);
absl::Status ValidateRequest(const v1::KernelsRequest& r);
absl::Status ValidateRequest(const v1::OpsRequest& r);
absl::Status ValidateRequest(const v1::CompareRequest& r);
absl::Status ValidateRequest(const v1::WhatIfRequest& r);
absl::Status ValidateRequest(const v1::ModulesRequest& r);
absl::Status ValidateRequest(const v1::LatencyRequest& r);
absl::Status ValidateRequest(const v1::ReadRequest& r);  // the reader's own request's rules

// After ValidateSubmit: the named weights (other than the default name, which falls back to a
// seeded random initialisation), dataset and image source exist in the daemon's directories, or
// at the caller's paths on a private daemon. NOT_FOUND naming what was looked for.
absl::Status CheckInputsExist(const v1::SubmitJobRequest& r, const DaemonConfig& config);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_RPC_REQUEST_VALIDATION_H_
