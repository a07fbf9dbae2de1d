#include "server/engine/train/step_log.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "common/json/json_writer.h"

namespace libreyolo::engine {

std::string StepLog::ToJsonLines() const {
  if (records_.empty()) return "";
  std::vector<torch::Tensor> parts;
  parts.reserve(records_.size() * 4);
  for (const StepRecord& r : records_) {
    for (const torch::Tensor* t : {&r.losses.total, &r.losses.box, &r.losses.dfl, &r.losses.cls}) {
      parts.push_back(t->reshape({}).to(torch::kFloat64));
    }
  }
  const torch::Tensor host = torch::stack(parts).cpu().contiguous();
  const double* v = host.data_ptr<double>();
  std::string out;
  for (size_t i = 0; i < records_.size(); ++i) {
    const StepRecord& r = records_[i];
    JsonWriter w(/*pretty=*/false);
    w.BeginObject()
        .Field("step", r.step)
        .Field("trial", r.trial)
        .Field("stage", r.stage)
        .Field("step_ms", r.step_ms)
        .Field("train/loss", v[4 * i])
        .Field("train/box_loss", v[4 * i + 1])
        .Field("train/dfl_loss", v[4 * i + 2])
        .Field("train/cls_loss", v[4 * i + 3]);
    for (size_t g = 0; g < r.lr.size(); ++g) w.Field(absl::StrCat("lr/pg", g), r.lr[g]);
    w.EndObject();
    std::string line = w.Take();
    while (!line.empty() && line.back() == '\n') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace libreyolo::engine
