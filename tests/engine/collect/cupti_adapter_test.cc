// The adapter from CUPTI's own record structs (CUDA 12: Kernel9 ..., CUDA 13: Kernel10 ...),
// filled in memory, and a hand-built activity buffer walked by cuptiActivityGetNextRecord.
// Built only with the CUDA toolkit; needs no driver or GPU.
#include "server/engine/collect/cupti_adapter.h"
#include "server/engine/collect/cupti_call.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "server/engine/collect/cupti_convert.h"

namespace libreyolo::engine {
namespace {

template <typename T>
T Zeroed(CUpti_ActivityKind kind) {
  T r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

CuptiKernelActivity KernelActivity() {
  auto k = Zeroed<CuptiKernelActivity>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "sm90_xmma_gemm_bf16bf16_bf16f32";
  k.start = 1000;
  k.end = 4000;
  k.queued = 900;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = 42;
  k.gridX = 132;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 384;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 168;
  k.staticSharedMemory = 0;
  k.dynamicSharedMemory = 200704;
  return k;
}

CuptiMemcpyActivity MemcpyActivity() {
  auto m = Zeroed<CuptiMemcpyActivity>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.start = 5000;
  m.end = 6000;
  m.streamId = 13;
  m.correlationId = 43;
  return m;
}

CuptiMemsetActivity MemsetActivity() {
  auto m = Zeroed<CuptiMemsetActivity>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.value = 0;
  m.bytes = 4096;
  m.start = 7000;
  m.end = 7100;
  m.streamId = 13;
  m.correlationId = 44;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

CUpti_ActivityAPI ApiActivity(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint32_t corr) {
  auto a = Zeroed<CUpti_ActivityAPI>(kind);
  a.cbid = cbid;
  a.start = 900;
  a.end = 950;
  a.processId = 4321;
  // Driver calls on their own thread: one inside a runtime call on its thread would be the
  // runtime's own work, which the conversion leaves out.
  a.threadId = kind == CUPTI_ACTIVITY_KIND_DRIVER ? 778 : 777;
  a.correlationId = corr;
  return a;
}

CuptiDeviceActivity DeviceActivity() {
  auto d = Zeroed<CuptiDeviceActivity>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.numMultiprocessors = 132;
  d.globalMemorySize = 85'000'000'000;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.maxThreadsPerBlock = 1024;
  d.maxWarpsPerMultiprocessor = 64;
  d.numThreadsPerWarp = 32;
  d.maxRegistersPerBlock = 65536;
  d.maxRegistersPerMultiprocessor = 65536;
  d.maxSharedMemoryPerBlock = 49152;
  d.maxSharedMemoryPerMultiprocessor = 233472;
  return d;
}

CuptiMemoryActivity MemoryActivity(CUpti_ActivityMemoryOperationType op) {
  auto m = Zeroed<CuptiMemoryActivity>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = op;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 2 << 20;
  m.address = 0x7f0000000000;
  m.timestamp = 8000;
  m.deviceId = 0;
  m.streamId = CUPTI_INVALID_STREAM_ID;
  m.correlationId = 45;
  m.processId = 4321;
  return m;
}

template <typename T>
const CUpti_Activity& AsActivity(const T& r) {
  return *reinterpret_cast<const CUpti_Activity*>(&r);
}

void ExpectAllKinds(const CuptiRecords& r) {
  ASSERT_EQ(r.kernels.size(), 1u);
  const CuptiKernelRecord& k = r.kernels[0];
  EXPECT_EQ(k.name, "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(k.start_ns, 1000u);
  EXPECT_EQ(k.end_ns, 4000u);
  EXPECT_EQ(k.queued_ns, 900u);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.context, 1u);
  EXPECT_EQ(k.correlation, 42u);
  EXPECT_EQ(k.grid_x, 132);
  EXPECT_EQ(k.block_x, 384);
  EXPECT_EQ(k.registers_per_thread, 168u);
  EXPECT_EQ(k.dynamic_shared_memory, 200704);

  ASSERT_EQ(r.memcpys.size(), 1u);
  EXPECT_EQ(MemcpyName(r.memcpys[0]), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(r.memcpys[0].bytes, 1u << 20);
  EXPECT_EQ(r.memcpys[0].correlation, 43u);

  ASSERT_EQ(r.memsets.size(), 1u);
  EXPECT_EQ(MemsetName(r.memsets[0]), "Memset (Device)");
  EXPECT_EQ(r.memsets[0].bytes, 4096u);

  ASSERT_EQ(r.api_calls.size(), 2u);
  EXPECT_EQ(r.api_calls[0].domain, CuptiApiDomain::kRuntime);
  EXPECT_EQ(r.api_calls[0].cbid, 211u);
  EXPECT_EQ(r.api_calls[0].thread_id, 777u);
  EXPECT_EQ(r.api_calls[0].correlation, 42u);
  EXPECT_EQ(r.api_calls[1].domain, CuptiApiDomain::kDriver);

  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.devices[0].sm_count, 132u);
  EXPECT_EQ(r.devices[0].max_threads_per_sm, 2048u);  // 64 warps of 32
  EXPECT_EQ(r.devices[0].warp_size, 32u);
  EXPECT_EQ(r.devices[0].compute_major, 9u);

  ASSERT_EQ(r.memory.size(), 2u);
  EXPECT_EQ(r.memory[0].operation, CuptiMemoryOperation::kAllocation);
  EXPECT_EQ(r.memory[1].operation, CuptiMemoryOperation::kRelease);
  EXPECT_EQ(r.memory[0].memory_kind, 3);
  EXPECT_EQ(r.memory[0].bytes, 2u << 20);
  EXPECT_EQ(r.memory[0].stream, CUPTI_INVALID_STREAM_ID);
}

TEST(CuptiAdapter, RecordsFromCuptiStructs) {
  CuptiRecords r;
  AppendActivityRecord(AsActivity(KernelActivity()), &r);
  AppendActivityRecord(AsActivity(MemcpyActivity()), &r);
  AppendActivityRecord(AsActivity(MemsetActivity()), &r);
  AppendActivityRecord(AsActivity(ApiActivity(CUPTI_ACTIVITY_KIND_RUNTIME,
                                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 42)),
                       &r);
  AppendActivityRecord(AsActivity(ApiActivity(CUPTI_ACTIVITY_KIND_DRIVER,
                                              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 50)),
                       &r);
  AppendActivityRecord(AsActivity(DeviceActivity()), &r);
  AppendActivityRecord(AsActivity(MemoryActivity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)),
                       &r);
  AppendActivityRecord(AsActivity(MemoryActivity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)),
                       &r);
  auto other = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_NAME);
  AppendActivityRecord(AsActivity(other), &r);
  ExpectAllKinds(r);
  EXPECT_EQ(r.other, 1u);

  // And through the conversion: CUPTI's name table answers for the API calls.
  const CollectedTrace t = ConvertCuptiRecords(r, [](CuptiApiDomain d, uint32_t cbid) {
    const char* name = nullptr;
    const auto domain =
        d == CuptiApiDomain::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    return cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr
               ? std::string(name)
               : std::string();
  });
  std::vector<std::string> api_names;
  for (const CollectedEvent& e : t.events) {
    if (e.kind == CollectedKind::kRuntime) api_names.push_back(e.name);
  }
  EXPECT_EQ(api_names, (std::vector<std::string>{"cudaLaunchKernel", "cuLaunchKernel"}));
}

// Records laid out as CUPTI lays them out: back to back, each 8-byte aligned.
class BufferBuilder {
 public:
  template <typename T>
  void Add(const T& record) {
    static_assert(sizeof(T) % ACTIVITY_RECORD_ALIGNMENT == 0);
    std::memcpy(buf_.get() + used_, &record, sizeof(T));
    used_ += sizeof(T);
  }
  uint8_t* data() { return buf_.get(); }
  size_t size() const { return used_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> buf_{
      static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, 1 << 16))};
  size_t used_ = 0;
};

TEST(CuptiAdapter, HandBuiltActivityBuffer) {
  BufferBuilder b;
  b.Add(KernelActivity());
  b.Add(MemcpyActivity());
  b.Add(MemsetActivity());
  b.Add(ApiActivity(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    42));
  b.Add(ApiActivity(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 50));
  b.Add(DeviceActivity());
  b.Add(MemoryActivity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION));
  b.Add(MemoryActivity(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE));
  CuptiRecords r;
  CUptiResult end = CUPTI_SUCCESS;
  EXPECT_EQ(AppendActivityBuffer(b.data(), b.size(), &r, &end), 8u);
  EXPECT_EQ(end, CUPTI_ERROR_MAX_LIMIT_REACHED) << "the walk ends at the buffer's end";
  ExpectAllKinds(r);
  EXPECT_EQ(r.other, 0u);
}

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Issue 39 §4: the checked call names itself (server/engine/collect/cupti_call.h).
CUptiResult Refused(int) { return CUPTI_ERROR_INVALID_PARAMETER; }
CUptiResult Accepted() { return CUPTI_SUCCESS; }

TEST(CuptiCall, TheCallNamesItselfAndCuptisError) {
  EXPECT_TRUE(CUPTI_CALL(Accepted()).ok());
  int evaluated = 0;
  const absl::Status refused = CUPTI_CALL(Refused(++evaluated));
  EXPECT_EQ(evaluated, 1) << "the call is evaluated once";
  EXPECT_TRUE(absl::IsInternal(refused));
  EXPECT_THAT(std::string(refused.message()), StartsWith("Refused(++evaluated): "));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("CUPTI_ERROR_INVALID_PARAMETER"));
  const absl::Status kind = CUPTI_CALL_FOR(Refused(0), "MEMCPY");
  EXPECT_THAT(std::string(kind.message()), StartsWith("Refused(0) for MEMCPY: "));
}

}  // namespace
}  // namespace libreyolo::engine
