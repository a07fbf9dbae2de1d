// CUPTI records -> collected events, from records built in memory (no CUPTI, no GPU).
#include "server/engine/collect/cupti_convert.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "tests/engine/collect/cupti_test_records.h"

namespace libreyolo::engine {
namespace {

using testing_records::Device;
using testing_records::Kernel;
using testing_records::NameTable;

// extra_args_json is a list of members; as an object it must be valid JSON.
rapidjson::Document Args(const CollectedEvent& e) {
  rapidjson::Document d;
  const std::string object = "{" + e.extra_args_json + "}";
  d.Parse(object.c_str());
  EXPECT_FALSE(d.HasParseError()) << object;
  return d;
}

const CollectedEvent* Find(const CollectedTrace& t, CollectedKind kind) {
  for (const CollectedEvent& e : t.events) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

TEST(CuptiConvert, KernelCarriesKinetoArgsAndCorrelation) {
  CuptiRecords r;
  r.devices.push_back(Device());
  r.kernels.push_back(Kernel("sm90_xmma_gemm_f16f16_f32", 1000, 3000, 42));
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  ASSERT_EQ(t.events.size(), 1u);
  const CollectedEvent& k = t.events[0];
  EXPECT_EQ(k.kind, CollectedKind::kKernel);
  EXPECT_EQ(k.name, "sm90_xmma_gemm_f16f16_f32");
  EXPECT_EQ(k.start_ns, 1000);
  EXPECT_EQ(k.dur_ns, 2000);
  EXPECT_EQ(k.thread, 7u);  // the stream
  EXPECT_EQ(k.device_index, 0);
  ASSERT_TRUE(k.correlation.has_value());
  EXPECT_EQ(*k.correlation, 42);
  const rapidjson::Document a = Args(k);
  EXPECT_EQ(a["device"].GetInt(), 0);
  EXPECT_EQ(a["context"].GetInt(), 1);
  EXPECT_EQ(a["stream"].GetInt(), 7);
  EXPECT_EQ(a["registers per thread"].GetInt(), 128);
  EXPECT_EQ(a["shared memory"].GetInt(), 1024 + 4096);
  ASSERT_TRUE(a["grid"].IsArray());
  EXPECT_EQ(a["grid"][0].GetInt(), 264);
  EXPECT_EQ(a["grid"][1].GetInt(), 2);
  EXPECT_EQ(a["grid"][2].GetInt(), 1);
  EXPECT_EQ(a["block"][0].GetInt(), 256);
  EXPECT_EQ(a["block"][2].GetInt(), 1);
  // 528 blocks on 132 SMs; 256 threads = 8 warps per block.
  EXPECT_DOUBLE_EQ(a["blocks per SM"].GetDouble(), 4.0);
  EXPECT_DOUBLE_EQ(a["warps per SM"].GetDouble(), 32.0);
  EXPECT_FALSE(a.HasMember("correlation"));  // written by the exporter from `correlation`
}

TEST(CuptiConvert, KernelWithoutDeviceRecordHasNoPerSmArgs) {
  CuptiRecords r;
  r.kernels.push_back(Kernel("k", 0, 10, 1));
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  const rapidjson::Document a = Args(t.events[0]);
  EXPECT_FALSE(a.HasMember("blocks per SM"));
  EXPECT_TRUE(a.HasMember("grid"));
  EXPECT_EQ(t.device_properties_json, "[]");
}

TEST(CuptiConvert, MemcpyAndMemsetNamesAndBandwidth) {
  CuptiRecords r;
  CuptiMemcpyRecord m;
  m.copy_kind = 1;  // HtoD
  m.src_kind = 1;   // Pageable
  m.dst_kind = 3;   // Device
  m.bytes = 4000;
  m.start_ns = 100;
  m.end_ns = 2100;
  m.stream = 13;
  m.correlation = 5;
  r.memcpys.push_back(m);
  CuptiMemsetRecord s;
  s.memory_kind = 3;
  s.bytes = 512;
  s.start_ns = 3000;
  s.end_ns = 3100;
  s.stream = 13;
  s.correlation = 6;
  r.memsets.push_back(s);
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());

  const CollectedEvent* copy = Find(t, CollectedKind::kMemcpy);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->name, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy->thread, 13u);
  EXPECT_EQ(*copy->correlation, 5);
  const rapidjson::Document a = Args(*copy);
  EXPECT_EQ(a["bytes"].GetInt(), 4000);
  EXPECT_DOUBLE_EQ(a["memory bandwidth (GB/s)"].GetDouble(), 2.0);  // 4000 B in 2000 ns

  const CollectedEvent* set = Find(t, CollectedKind::kMemset);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->name, "Memset (Device)");
  EXPECT_EQ(*set->correlation, 6);
  EXPECT_EQ(Args(*set)["bytes"].GetInt(), 512);
}

TEST(CuptiConvert, KinetoNamesForEveryCopyKind) {
  CuptiMemcpyRecord m;
  m.copy_kind = 2;
  m.src_kind = 3;
  m.dst_kind = 2;
  EXPECT_EQ(MemcpyName(m), "Memcpy DtoH (Device -> Pinned)");
  m.copy_kind = 8;
  m.src_kind = 3;
  m.dst_kind = 3;
  EXPECT_EQ(MemcpyName(m), "Memcpy DtoD (Device -> Device)");
  m.copy_kind = 10;
  EXPECT_EQ(MemcpyName(m), "Memcpy PtoP (Device -> Device)");
  m.copy_kind = 200;
  m.src_kind = 99;
  EXPECT_EQ(MemcpyName(m), "Memcpy <unknown> (<unknown> -> Device)");
  CuptiMemsetRecord s;
  s.memory_kind = 5;
  EXPECT_EQ(MemsetName(s), "Memset (Managed)");
}

TEST(CuptiConvert, ApiCallsNamedThroughTheLookupWithoutVersion) {
  CuptiRecords r;
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kRuntime, 211, 100, 150, 999, 42));
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kRuntime, 4242, 200, 210, 999, 43));
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kDriver, 307, 300, 320, 999, 44));
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].kind, CollectedKind::kRuntime);
  EXPECT_EQ(t.events[0].name, "cudaLaunchKernel");  // "cudaLaunchKernel_v7000"
  EXPECT_EQ(t.events[0].thread, 999u);
  EXPECT_EQ(t.events[0].dur_ns, 50);
  EXPECT_EQ(*t.events[0].correlation, 42);
  EXPECT_EQ(Args(t.events[0])["cbid"].GetInt(), 211);
  EXPECT_EQ(t.events[1].name, "cudaRuntimeApi#4242");  // unknown to the lookup
  EXPECT_EQ(t.events[2].name, "cuLaunchKernel");
  // No lookup at all still names them.
  const CollectedTrace bare = ConvertCuptiRecords(r, nullptr);
  EXPECT_EQ(bare.events[2].name, "cuDriverApi#307");
}

TEST(CuptiConvert, DriverCallsInsideRuntimeCallsAreLeftOut) {
  CuptiRecords r;
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kRuntime, 20, 100, 200, 1, 1));
  // The runtime's own cuMemAlloc inside cudaMalloc on the same thread: dropped.
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kDriver, 243, 120, 180, 1, 2));
  // The same driver call on another thread, or outside the runtime call: kept.
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kDriver, 243, 120, 180, 2, 3));
  r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kDriver, 243, 190, 260, 1, 4));
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(*t.events[0].correlation, 1);
  EXPECT_EQ(*t.events[1].correlation, 3);
  EXPECT_EQ(*t.events[2].correlation, 4);
}

TEST(CuptiConvert, DeviceMemoryBecomesReservationEvents) {
  CuptiRecords r;
  r.memory.push_back(testing_records::Memory(CuptiMemoryOperation::kAllocation, 3, 1 << 20, 10));
  r.memory.push_back(testing_records::Memory(CuptiMemoryOperation::kRelease, 3, 1 << 20, 20));
  r.memory.push_back(testing_records::Memory(CuptiMemoryOperation::kAllocation, 2, 4096, 30));
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  ASSERT_EQ(t.events.size(), 2u);  // pinned host memory is not the device's
  EXPECT_EQ(t.events[0].kind, CollectedKind::kMemory);
  EXPECT_EQ(t.events[0].name, "[memory]");
  EXPECT_TRUE(t.events[0].reservation);
  EXPECT_EQ(t.events[0].device_type, 1);
  EXPECT_EQ(t.events[0].device_index, 0);
  EXPECT_EQ(t.events[0].bytes, 1 << 20);
  EXPECT_EQ(t.events[0].start_ns, 10);
  EXPECT_EQ(t.events[0].thread, 0u);  // CUPTI_INVALID_STREAM_ID
  EXPECT_EQ(t.events[1].bytes, -(1 << 20));
}

TEST(CuptiConvert, DevicePropertiesInKinetoShape) {
  CuptiDeviceRecord d = Device();
  d.name = "NVIDIA \"H100\"";
  const std::string json = DevicePropertiesJson({d});
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 1u);
  const auto& p = doc[0];
  EXPECT_EQ(p["id"].GetInt(), 0);
  EXPECT_STREQ(p["name"].GetString(), "NVIDIA \"H100\"");
  EXPECT_EQ(p["totalGlobalMem"].GetUint64(), 85'000'000'000u);
  EXPECT_EQ(p["computeMajor"].GetInt(), 9);
  EXPECT_EQ(p["computeMinor"].GetInt(), 0);
  EXPECT_EQ(p["maxThreadsPerBlock"].GetInt(), 1024);
  EXPECT_EQ(p["maxThreadsPerMultiprocessor"].GetInt(), 2048);
  EXPECT_EQ(p["regsPerBlock"].GetInt(), 65536);
  EXPECT_EQ(p["regsPerMultiprocessor"].GetInt(), 65536);
  EXPECT_EQ(p["warpSize"].GetInt(), 32);
  EXPECT_EQ(p["sharedMemPerBlock"].GetInt(), 49152);
  EXPECT_EQ(p["sharedMemPerMultiprocessor"].GetInt(), 233472);
  EXPECT_EQ(p["numSms"].GetInt(), 132);
  EXPECT_EQ(p["sharedMemPerBlockOptin"].GetInt(), 232448);
  d.shared_memory_per_block_optin.reset();
  doc.Parse(DevicePropertiesJson({d, d}).c_str());
  ASSERT_EQ(doc.Size(), 2u);
  EXPECT_FALSE(doc[0].HasMember("sharedMemPerBlockOptin"));
  EXPECT_EQ(DevicePropertiesJson({}), "[]");
}

TEST(CuptiConvert, DroppedRecordsAreANote) {
  CuptiRecords r;
  r.dropped = 17;
  const CollectedTrace t = ConvertCuptiRecords(r, NameTable());
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0],
            "CUPTI: 17 activity records dropped (buffers full); GPU activity is incomplete");
  EXPECT_TRUE(ConvertCuptiRecords({}, NameTable()).notes.empty());
}

TEST(CuptiConvert, ApiVersionSuffix) {
  EXPECT_EQ(ApiNameWithoutVersion("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(ApiNameWithoutVersion("cudaMalloc_v3020"), "cudaMalloc");
  EXPECT_EQ(ApiNameWithoutVersion("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(ApiNameWithoutVersion("cudaFree"), "cudaFree");
  EXPECT_EQ(ApiNameWithoutVersion("cuda_vx"), "cuda_vx");
  EXPECT_EQ(ApiNameWithoutVersion("_v1"), "_v1");
  EXPECT_EQ(ApiNameWithoutVersion("x_v"), "x_v");
}

}  // namespace
}  // namespace libreyolo::engine
