#include "server/engine/collect/cupti_adapter.h"

namespace libreyolo::engine {
namespace {

// CUPTI hands out records as CUpti_Activity*; the kind says which struct it really is.
template <typename T>
const T& As(const CUpti_Activity& record) {
  return *reinterpret_cast<const T*>(&record);
}

}  // namespace

void AppendActivityRecord(const CUpti_Activity& record, CuptiRecords* out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      out->kernels.push_back(KernelRecordOf(As<CuptiKernelActivity>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      out->memcpys.push_back(MemcpyRecordOf(As<CuptiMemcpyActivity>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      out->memsets.push_back(MemsetRecordOf(As<CuptiMemsetActivity>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      out->api_calls.push_back(ApiRecordOf(As<CUpti_ActivityAPI>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
      out->devices.push_back(DeviceRecordOf(As<CuptiDeviceActivity>(record)));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      out->memory.push_back(MemoryRecordOf(As<CuptiMemoryActivity>(record)));
      break;
    default:
      ++out->other;
      break;
  }
}

size_t AppendActivityBuffer(uint8_t* buffer, size_t valid_size, CuptiRecords* out,
                            CUptiResult* end) {
  size_t n = 0;
  CUpti_Activity* record = nullptr;
  CUptiResult r = CUPTI_SUCCESS;
  while ((r = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
    AppendActivityRecord(*record, out);
    ++n;
  }
  if (end != nullptr) *end = r;
  return n;
}

}  // namespace libreyolo::engine
