// The real collector (LIBREYOLO_CUPTI found CUPTI). CUPTI calls back on its own threads with
// completed buffers; they are parsed there into one process-wide sink, since CUPTI's buffer
// callbacks carry no user data. The CUDA driver is never linked: it is found with dlopen, so the
// daemon starts (and reports why nothing was recorded) on hosts without it.
#include "server/engine/collect/cupti_collector.h"

#include <cuda.h>  // driver types and enums only; the functions come from dlsym
#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "server/engine/collect/cupti_adapter.h"
#include "server/engine/collect/cupti_call.h"
#include "server/engine/collect/cupti_convert.h"
#include "server/engine/collect/cupti_session.h"

namespace libreyolo::engine {
namespace {

std::atomic<bool> g_running{false};
std::atomic<size_t> g_buffer_bytes{size_t{8} << 20};
std::atomic<uint64_t> g_callback_failures{0};
// Buffers whose dropped-record count CUPTI would not tell (the count may then be low).
std::atomic<uint64_t> g_dropped_count_failures{0};

// Never destroyed: CUPTI may call back during exit.
CuptiSessionSink& TheSink() {
  static CuptiSessionSink* sink = new CuptiSessionSink();
  return *sink;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  const size_t bytes = g_buffer_bytes.load();
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, bytes));
  *size = *buffer != nullptr ? bytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream, uint8_t* buffer, size_t /*size*/,
                              size_t valid_size) {
  try {  // CUPTI's thread: nothing may escape
    CuptiRecords local;
    if (buffer != nullptr && valid_size > 0) {
      // The walk ends at the buffer's end (CUPTI_ERROR_MAX_LIMIT_REACHED); anything else left
      // records unread.
      CUptiResult end = CUPTI_ERROR_MAX_LIMIT_REACHED;
      AppendActivityBuffer(buffer, valid_size, &local, &end);
      if (end != CUPTI_ERROR_MAX_LIMIT_REACHED) ++g_callback_failures;
    }
    size_t dropped = 0;
    if (CUPTI_CALL(cuptiActivityGetNumDroppedRecords(context, stream, &dropped)).ok()) {
      local.dropped += dropped;
    } else {
      ++g_dropped_count_failures;
    }
    TheSink().Deliver(std::move(local));
  } catch (...) {
    ++g_callback_failures;
  }
  std::free(buffer);
}

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};

std::vector<Kind> KindsFor(const CuptiOptions& o) {
  std::vector<Kind> kinds = {{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
                             {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
                             {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true},
                             // Device properties also come from the driver when CUPTI has none.
                             {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", false}};
  if (o.api_calls) {
    kinds.push_back({CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true});
    kinds.push_back({CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", true});
  }
  if (o.memory) kinds.push_back({CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", true});
  return kinds;
}

using EnabledKinds = std::vector<std::pair<int, const char*>>;  // CUpti_ActivityKind, name

// Disables every kind enabled; the first failure (that kind stays enabled in this process).
absl::Status DisableKinds(const EnabledKinds& kinds) {
  absl::Status first;
  for (const auto& [kind, name] : kinds) {
    first.Update(CUPTI_CALL_FOR(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind)), name));
  }
  return first;
}

// What the collection's end could not undo, said where no caller can hear it (the destructor of
// a collection never stopped): one line on stderr.
void LogUnstopped(const absl::Status& s) {
  if (!s.ok()) std::cerr << "libreyolo: CUPTI: " << s.message() << " (abandoned collection)\n";
}

// Once per process: the callbacks are the same functions for every collection (the sink tells
// the collections apart), and re-registering them per session is what trips PyTorch's profiler
// on its second session.
absl::Status RegisterCallbacksOnce() {
  static const absl::Status* registered =
      new absl::Status(CUPTI_CALL(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted)));
  return *registered;
}

// Enables the kinds of `o` into `enabled`; a required kind that fails disables the others again.
absl::Status EnableActivity(const CuptiOptions& o, EnabledKinds* enabled) {
  g_buffer_bytes = std::max<size_t>(o.buffer_bytes / ACTIVITY_RECORD_ALIGNMENT, 1024) *
                   ACTIVITY_RECORD_ALIGNMENT;
  RETURN_IF_ERROR(RegisterCallbacksOnce());
  enabled->clear();
  for (const Kind& k : KindsFor(o)) {
    const absl::Status s = CUPTI_CALL_FOR(cuptiActivityEnable(k.kind), k.name);
    if (s.ok()) {
      enabled->emplace_back(k.kind, k.name);
    } else if (k.required) {
      const absl::Status undone = DisableKinds(*enabled);
      enabled->clear();
      if (!undone.ok()) {
        return absl::InternalError(absl::StrCat(s.message(), "; then ", undone.message()));
      }
      return s;
    }
  }
  return absl::OkStatus();
}

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::vector<ClockSample> SampleClocks(const std::function<int64_t()>& cpu_clock) {
  std::vector<ClockSample> out;
  for (int i = 0; i < 5; ++i) {
    ClockSample s;
    uint64_t cupti = 0;
    s.cpu_before_ns = cpu_clock();
    const absl::Status read = CUPTI_CALL(cuptiGetTimestamp(&cupti));
    s.cpu_after_ns = cpu_clock();
    s.other_ns = static_cast<int64_t>(cupti);
    if (read.ok()) out.push_back(s);  // a failed sample is left out: the others align the clocks
  }
  return out;
}

// The driver entry points we use, from the already opened libcuda.so.1.
struct Driver {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*name)(char*, int, CUdevice) = nullptr;
  CUresult (*total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;

  explicit Driver(void* handle) {
    if (handle == nullptr) return;
    Resolve(handle, "cuInit", &init);
    Resolve(handle, "cuDeviceGetCount", &device_count);
    Resolve(handle, "cuDeviceGet", &device_get);
    Resolve(handle, "cuDeviceGetAttribute", &attribute);
    Resolve(handle, "cuDeviceGetName", &name);
    Resolve(handle, "cuDeviceTotalMem_v2", &total_mem);
    Resolve(handle, "cuGetErrorName", &error_name);
  }

  template <typename F>
  static void Resolve(void* handle, const char* symbol, F* fn) {
    *fn = reinterpret_cast<F>(dlsym(handle, symbol));
  }

  std::string ErrorName(CUresult r) const {
    const char* text = nullptr;
    if (error_name != nullptr && error_name(r, &text) == CUDA_SUCCESS && text != nullptr) {
      return text;
    }
    return absl::StrCat("CUresult ", static_cast<int>(r));
  }

  std::optional<uint32_t> Attribute(CUdevice_attribute a, CUdevice d) const {
    int v = 0;
    if (attribute == nullptr || attribute(&v, a, d) != CUDA_SUCCESS || v < 0) return std::nullopt;
    return static_cast<uint32_t>(v);
  }

  // A device record from the driver, for a device CUPTI sent none for.
  std::optional<CuptiDeviceRecord> Device(uint32_t ordinal) const {
    CUdevice d = 0;
    if (device_get == nullptr || device_get(&d, static_cast<int>(ordinal)) != CUDA_SUCCESS) {
      return std::nullopt;
    }
    CuptiDeviceRecord r;
    r.id = ordinal;
    std::array<char, 256> buf{};
    if (name != nullptr && name(buf.data(), static_cast<int>(buf.size()), d) == CUDA_SUCCESS) {
      r.name = buf.data();
    }
    size_t mem = 0;
    if (total_mem != nullptr && total_mem(&mem, d) == CUDA_SUCCESS) r.global_memory_bytes = mem;
    auto get = [&](CUdevice_attribute a) { return Attribute(a, d).value_or(0); };
    r.sm_count = get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    r.compute_major = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    r.compute_minor = get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    r.max_threads_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    r.max_threads_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    r.regs_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    r.regs_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    r.warp_size = get(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    r.shared_memory_per_block = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    r.shared_memory_per_sm = get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    r.shared_memory_per_block_optin =
        Attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d);
    return r;
  }
};

// Opens the driver (kept open for the life of the process: CUPTI and LibTorch use it too) and
// checks that it has a device. Returns the reason it cannot be used, empty when it can.
std::string OpenDriver(void** handle) {
  *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (*handle == nullptr) *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (*handle == nullptr) return "no CUDA driver on this host (libcuda.so.1 not found)";
  const Driver driver(*handle);
  if (driver.init == nullptr || driver.device_count == nullptr) {
    return "the CUDA driver (libcuda.so.1) lacks cuInit or cuDeviceGetCount";
  }
  if (const CUresult r = driver.init(0); r != CUDA_SUCCESS) {
    return absl::StrCat("no usable CUDA device (cuInit: ", driver.ErrorName(r), ")");
  }
  int count = 0;
  if (const CUresult r = driver.device_count(&count); r != CUDA_SUCCESS || count <= 0) {
    return "no CUDA device on this host";
  }
  return "";
}

// Adds the driver's opt-in shared memory to CUPTI's device records, and records for devices
// that have activity but no record (CUPTI sends them when a context is created, which may
// have happened before this collection started).
void CompleteDevices(void* libcuda, CuptiRecords* r) {
  const Driver driver(libcuda);
  std::set<uint32_t> have, used;
  for (CuptiDeviceRecord& d : r->devices) {
    have.insert(d.id);
    if (!d.shared_memory_per_block_optin) {
      CUdevice dev = 0;
      if (driver.device_get != nullptr &&
          driver.device_get(&dev, static_cast<int>(d.id)) == CUDA_SUCCESS) {
        d.shared_memory_per_block_optin =
            driver.Attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
      }
    }
  }
  for (const auto& k : r->kernels) used.insert(k.device);
  for (const auto& m : r->memcpys) used.insert(m.device);
  for (const auto& m : r->memsets) used.insert(m.device);
  for (const uint32_t id : used) {
    if (have.contains(id)) continue;
    if (std::optional<CuptiDeviceRecord> d = driver.Device(id)) r->devices.push_back(*d);
  }
}

std::string ApiName(CuptiApiDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain d =
      domain == CuptiApiDomain::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(d, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return "";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CuptiCollector>> CuptiCollector::Start(const CuptiOptions& options) {
  if (g_running.exchange(true)) {
    return absl::FailedPreconditionError("a CUPTI collection is already running in this process");
  }
  std::unique_ptr<CuptiCollector> c(new CuptiCollector());
  c->options_ = options;
  if (!c->options_.cpu_clock_ns) c->options_.cpu_clock_ns = RealtimeNs;
  const std::string problem = OpenDriver(&c->libcuda_);
  if (!problem.empty()) {
    c->inactive_note_ = absl::StrCat("CUPTI: ", problem, "; GPU activity not recorded");
    return c;
  }
  g_callback_failures = 0;
  g_dropped_count_failures = 0;
  // Opened before the kinds are enabled, so a buffer that fills at once is this collection's.
  TheSink().Open(SampleClocks(c->options_.cpu_clock_ns));
  if (const absl::Status s = EnableActivity(c->options_, &c->enabled_kinds_); !s.ok()) {
    (void)TheSink().Close({});
    c->inactive_note_ = absl::StrCat("CUPTI: cannot start activity tracing (", s.message(),
                                     "); GPU activity not recorded");
    return c;
  }
  c->active_ = true;
  return c;
}

CuptiCollector::~CuptiCollector() {
  if (stopped_) return;
  if (active_) {
    LogUnstopped(DisableKinds(enabled_kinds_));
    LogUnstopped(CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
    (void)TheSink().Close({});  // nobody reads an abandoned collection's records
  }
  g_running = false;
}

absl::StatusOr<CollectedTrace> CuptiCollector::Stop() {
  if (stopped_) return absl::FailedPreconditionError("the CUPTI collection was already stopped");
  stopped_ = true;
  CollectedTrace trace;
  if (!active_) {
    trace.notes.push_back(inactive_note_);
    g_running = false;
    return trace;
  }
  active_ = false;
  std::vector<ClockSample> stop_samples = SampleClocks(options_.cpu_clock_ns);
  const absl::Status disabled = DisableKinds(enabled_kinds_);
  const absl::Status flushed =
      CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  CuptiSessionRecords session = TheSink().Close(std::move(stop_samples));
  const uint64_t failures = g_callback_failures.exchange(0);
  const uint64_t uncounted = g_dropped_count_failures.exchange(0);
  g_running = false;

  CompleteDevices(libcuda_, &session.records);
  trace = ConvertCuptiSession(session, ApiName);
  if (!flushed.ok()) {
    trace.notes.push_back(
        absl::StrCat("CUPTI: ", flushed.message(), "; GPU activity may be incomplete"));
  }
  if (!disabled.ok()) {
    trace.notes.push_back(absl::StrCat("CUPTI: ", disabled.message(),
                                       "; activity may still be recorded in this process"));
  }
  if (uncounted > 0) {
    trace.notes.push_back(absl::StrCat("CUPTI: cuptiActivityGetNumDroppedRecords failed for ",
                                       uncounted, " buffers; records dropped may be undercounted"));
  }
  if (failures > 0) {
    trace.notes.push_back(absl::StrCat("CUPTI: ", failures,
                                       " activity buffers could not be read; GPU activity is "
                                       "incomplete"));
  }
  return trace;
}

bool CuptiBuilt() { return true; }

}  // namespace libreyolo::engine
