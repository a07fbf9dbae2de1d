// A LibreYOLO model of any family the Python tool exports (`libreyolo export --format
// torchscript`), run as its TorchScript backend runs it: the traced module (torch::jit::load,
// with libreyolo_metadata.json beside it in the archive), the family's preprocessing and its
// postprocessing (export_family.h; tests/engine/torchscript/FAMILIES.md).
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_TORCHSCRIPT_MODEL_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_TORCHSCRIPT_MODEL_H_

#include <torch/script.h>

#include <array>
#include <memory>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/infer/export_family.h"
#include "server/engine/infer/postprocess.h"

namespace libreyolo::engine {

// Where a source image sits on the module's canvas (boxes go back through it).
struct ExportGeometry {
  double ratio = 1;  // letterbox: source -> canvas scale
  double ratio_x = 1, ratio_y = 1;  // source -> canvas per axis (a stretch; ratio twice otherwise)
  int pad_left = 0, pad_top = 0;
  int src_width = 0, src_height = 0;
  // kAffineCentre: canvas -> source, row-major 2 x 3 (cv2.getAffineTransform(dst, src)).
  std::array<double, 6> inverse_affine = {0, 0, 0, 0, 0, 0};
};

// True when `path` is a TorchScript archive (a zip holding <name>/constants.pkl or code/), read
// without LibTorch; a missing or unreadable file is false.
bool IsTorchScriptArchive(const std::string& path);

class TorchScriptModel {
 public:
  // NOT_FOUND for a missing file; INVALID_ARGUMENT for an archive LibTorch cannot load or whose
  // metadata does not describe a detection family this engine runs (export_family.h).
  static absl::StatusOr<std::unique_ptr<TorchScriptModel>> Load(const std::string& path);

  const ExportMetadata& metadata() const { return meta_; }
  // The canvas (metadata height x width, 8-bit BGR) the family makes of a BGR image.
  cv::Mat Canvas(const cv::Mat& bgr, ExportGeometry* geometry) const;
  // Canvases -> [B, 3, H, W] as the module takes them (channel order, range, normalisation,
  // the graph's float type).
  absl::StatusOr<torch::Tensor> ToInput(const std::vector<cv::Mat>& canvases) const;
  torch::IValue Forward(const torch::Tensor& input);
  // Detections in source-image pixels, one per image of the batch.
  absl::StatusOr<std::vector<Detections>> Postprocess(
      const torch::IValue& output, const PostprocessOptions& o,
      const std::vector<ExportGeometry>& geometry) const;
  void To(const torch::Device& device);
  // The float type the graph runs in (its parameters'): "fp32", "fp16" (an export made with
  // --half), "bf16", or LibTorch's name of another.
  std::string FloatType() const;

  // Whether the traced graph runs a batch of `batch` images: a trace records one batch
  // size's graph, and run at another it may fail (D-FINE's, DEIM's) or return outputs of another
  // shape. The probe runs one image and then `batch` different images together, on the
  // device the model was moved to (To; the job's device): each output must hold `batch` images
  // of the one image's shape. A graph that does not run one image there is named as such (not
  // the batch's fault). Values are not compared: a batch runs other kernels (YOLO9's boxes move by
  // ~1e-3 relative), and a DETR's top-k may then pick another query of a near tie. INVALID_ARGUMENT
  // naming what failed and the way out.
  absl::Status CheckBatch(int64_t batch);

 private:
  TorchScriptModel() = default;
  torch::jit::Module module_;
  ExportMetadata meta_;
  torch::ScalarType dtype_ = torch::kFloat;
  torch::Device device_ = torch::kCPU;  // where To moved it
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_TORCHSCRIPT_MODEL_H_
