// A resource every user of a shared daemon draws on (WatchJob streams, reader RPCs, artifact
// downloads): a cap for everyone together and a cap for each user, so that no user can take every
// slot and lock the others out (issue 23 item 3). One class for every such resource, so that
// they count, refuse and word their refusals alike.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_USER_SLOTS_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_USER_SLOTS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace libreyolo::daemon {

class UserSlots {
 public:
  // `noun`: what one slot is ("open watchers", "reader calls in flight"); `key`: the limits key
  // of the total cap ("max_watchers"; the per-user cap is `key` + "_per_user").
  UserSlots(std::string noun, std::string key) : noun_(std::move(noun)), key_(std::move(key)) {}

  // Held while the resource is in use; returns it when destroyed. Movable.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : owner_(o.owner_), user_(std::move(o.user_)) { o.owner_ = nullptr; }
    Slot& operator=(Slot&& o) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }

   private:
    friend class UserSlots;
    Slot(UserSlots* owner, std::string user) : owner_(owner), user_(std::move(user)) {}
    void Release();
    UserSlots* owner_ = nullptr;
    std::string user_;
  };

  // A slot for `user`, or RESOURCE_EXHAUSTED naming the cap that was reached and the way out:
  //   "too many open watchers (limit max_watchers 256); retry later"
  //   "alice already has 32 open watchers (limit max_watchers_per_user 32); close one or retry
  //    later"
  // The caps are passed at each call, so a reloaded config applies to the next request.
  absl::StatusOr<Slot> Acquire(const std::string& user, int64_t total_cap, int64_t per_user_cap);

  int64_t in_use() const;
  int64_t in_use_by(const std::string& user) const;

 private:
  const std::string noun_;
  const std::string key_;
  mutable std::mutex mu_;
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> by_user_ ABSL_GUARDED_BY(mu_);
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_USER_SLOTS_H_
