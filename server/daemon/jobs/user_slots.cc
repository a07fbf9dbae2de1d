#include "server/daemon/jobs/user_slots.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {

UserSlots::Slot& UserSlots::Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = std::exchange(o.owner_, nullptr);
    user_ = std::move(o.user_);
  }
  return *this;
}

void UserSlots::Slot::Release() {
  if (owner_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->mu_);
  --owner_->total_;
  auto it = owner_->by_user_.find(user_);
  if (it != owner_->by_user_.end() && --it->second <= 0) owner_->by_user_.erase(it);
  owner_ = nullptr;
}

absl::StatusOr<UserSlots::Slot> UserSlots::Acquire(const std::string& user, int64_t total_cap,
                                                   int64_t per_user_cap) {
  std::lock_guard<std::mutex> lock(mu_);
  if (total_ >= total_cap) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many ", noun_, " (limit ", key_, " ", total_cap, "); retry later"));
  }
  auto it = by_user_.find(user);
  const int64_t mine = it == by_user_.end() ? 0 : it->second;
  if (mine >= per_user_cap) {
    return absl::ResourceExhaustedError(absl::StrCat(user, " already has ", mine, " ", noun_,
                                                     " (limit ", key_, "_per_user ", per_user_cap,
                                                     "); close one or retry later"));
  }
  ++by_user_[user];
  ++total_;
  return Slot(this, user);
}

int64_t UserSlots::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

int64_t UserSlots::in_use_by(const std::string& user) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_user_.find(user);
  return it == by_user_.end() ? 0 : it->second;
}

}  // namespace libreyolo::daemon
