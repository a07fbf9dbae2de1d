// What a LibreYOLO9 checkpoint says it is: its own metadata (model_family, size, nc) and, where
// that says nothing, its tensor shapes, read as the Python LibreYOLO's LibreYOLO9.detect_size /
// detect_nb_classes read them. Torch-free, like the reader.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_MODEL_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_MODEL_H_

#include <cstdint>
#include <string>

#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {

struct CheckpointModel {
  std::string family;               // metadata `model_family`; "" when absent
  std::string size;                 // metadata `size`, else from the backbone's widths; "" unknown
  bool size_from_metadata = false;  // false: detected from the tensor shapes
  // The class predictor's rows (head.cv3.0.2.weight), else metadata `nc`; 0 unknown.
  int64_t num_classes = 0;
  // The class towers' hidden width (head.cv3.0.0.conv.weight rows); 0 unknown. A checkpoint
  // fine-tuned from COCO keeps 80 whatever its class count (a fresh 2-class LibreYOLO9t: 64).
  int64_t class_hidden = 0;

  // "LibreYOLO9t (size t)"; another family by its own name ("yolox (size s)").
  std::string Label() const;
};

CheckpointModel DescribeCheckpoint(const Checkpoint& checkpoint);

// "LibreYOLO9" for the yolo9 family (and a checkpoint that names none), else the family itself.
std::string FamilyName(const std::string& family);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_MODEL_H_
