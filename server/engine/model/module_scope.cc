#include "server/engine/model/module_scope.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace libreyolo::engine {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<const torch::nn::Module*, std::string> names;  // full range names
};

Registry& Names() {
  static auto* r = new Registry();
  return *r;
}

}  // namespace

ModuleScopes::ModuleScopes(torch::nn::Module& root) : root_(&root) {
  Registry& r = Names();
  const std::unique_lock<std::shared_mutex> lock(r.mu);
  for (const auto& item : root.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    r.names[item.value().get()] = std::string(kModuleScopePrefix) + item.key();
    ++named_;
  }
}

ModuleScopes::~ModuleScopes() {
  Registry& r = Names();
  const std::unique_lock<std::shared_mutex> lock(r.mu);
  for (const auto& m : root_->modules(/*include_self=*/false)) r.names.erase(m.get());
}

ModuleScope::ModuleScope(const torch::nn::Module* module, const char* suffix) {
  auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
  if (!callbacks) return;  // no profiler recording user scopes
  {
    Registry& r = Names();
    const std::shared_lock<std::shared_mutex> lock(r.mu);
    const auto it = r.names.find(module);
    if (it == r.names.end()) return;  // scopes are off for this model
    name_ = suffix == nullptr ? it->second : it->second + "." + suffix;
  }
  guard_.emplace(std::move(*callbacks));
  if (guard_->isActive()) guard_->before(name_);
}

}  // namespace libreyolo::engine
