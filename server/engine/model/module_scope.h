// Module scopes (--with-modules): every LibreYOLO9 module's forward runs inside a named range
// that LibTorch's profiler records as a user annotation (RecordFunction with USER_SCOPE, as
// torch.profiler's record_function), so the trace says which layer ran which ops and kernels.
//
// The range is named "nn.Module: <path>", the path being the module's name in the Python
// LibreYOLO9 module tree and state dict ("backbone.conv0", "neck.elan_up1.cv2.0",
// "head.cv2.0"); the decode of the eval predictions, which Python's head does inside its
// forward, is "head.decode". The readers (common/analysis/module_table.h) recognise the prefix.
// Only the model's own blocks open scopes; LibTorch's leaf modules (Conv2d, BatchNorm2d) do not:
// their single op names them in the trace already.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_MODULE_SCOPE_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_MODULE_SCOPE_H_

#include <ATen/record_function.h>
#include <torch/nn/module.h>

#include <optional>
#include <string>

#include "server/engine/collect/module_scope_events.h"

namespace libreyolo::engine {

// Names the modules of `root` (named_modules() paths) for as long as it lives: while it does,
// ModuleScope on one of them opens a range whenever a profiler records user scopes. Without a
// live ModuleScopes for a model its scopes cost one callback check and record nothing.
class ModuleScopes {
 public:
  explicit ModuleScopes(torch::nn::Module& root);
  ~ModuleScopes();
  ModuleScopes(const ModuleScopes&) = delete;
  ModuleScopes& operator=(const ModuleScopes&) = delete;

  // Modules named, the root excluded.
  size_t size() const { return named_; }

 private:
  torch::nn::Module* root_;
  size_t named_ = 0;
};

// RAII: the range of one module call. Cheap when no profiler is running.
class ModuleScope {
 public:
  explicit ModuleScope(const torch::nn::Module* module, const char* suffix = nullptr);
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  std::string name_;  // the guard keeps a view of it: declared first, destroyed last
  std::optional<at::RecordFunction> guard_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_MODULE_SCOPE_H_
