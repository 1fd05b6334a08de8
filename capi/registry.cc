#include <atomic>
#include <cstddef>

#include "capi/objects.h"

namespace drsim::capi {

Registry& Registry::Get() {
  static Registry* registry = new Registry;  // never destroyed: C calls may come during exit
  return *registry;
}

void Registry::Add(const void* p, Kind kind, Context* ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  objects_[p] = {kind, ctx};
}

void Registry::Remove(const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  objects_.erase(p);
}

bool Registry::Is(const void* p, Kind kind, Context** ctx) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(p);
  if (it == objects_.end() || it->second.kind != kind) return false;
  if (ctx != nullptr) *ctx = it->second.ctx;
  return true;
}

bool Registry::Known(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return objects_.contains(p);
}

namespace {
std::atomic<FunctionContextSetUp> function_context_set_up{nullptr};
}  // namespace

void SetFunctionContextSetUp(FunctionContextSetUp set_up) { function_context_set_up.store(set_up); }
FunctionContextSetUp GetFunctionContextSetUp() { return function_context_set_up.load(); }

drsim_function_context* FunctionOf(ibv_context* ctx) {
  if (ctx == nullptr || !Registry::Get().Is(ctx, Kind::kContext)) return nullptr;
  // The user's ibv_context is the last member of the verbs_context that opens drsim_function_context.
  auto* vctx =
      reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(ctx) - offsetof(verbs_context, context));
  return reinterpret_cast<drsim_function_context*>(vctx);
}

}  // namespace drsim::capi
