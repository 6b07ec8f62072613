#include "common/stream_limits.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/security/auth_context.h"

namespace ringside {

absl::Status ValidateStreamLimits(const StreamLimits& limits) {
  if (limits.first_message <= absl::ZeroDuration() || limits.idle <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("stream deadlines must be positive");
  }
  if (limits.per_peer < 1 || limits.total < 1) {
    return absl::InvalidArgumentError("stream bounds must allow at least one stream");
  }
  return absl::OkStatus();
}

std::string PeerOfCall(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    std::vector<std::string> names;
    for (const grpc::string_ref& name : auth->GetPeerIdentity()) {
      names.emplace_back(name.data(), name.size());
    }
    if (!names.empty()) return absl::StrCat("tls:", absl::StrJoin(names, ","));
  }
  // "ipv4:127.0.0.1:5000" or "ipv6:[::1]:5000": the address without the port.
  std::string peer = context.peer();
  const size_t colon = peer.rfind(':');
  if (colon != std::string::npos && colon > peer.find(':')) peer.resize(colon);
  return peer;
}

StreamAdmission::Ticket& StreamAdmission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Release();
    admission_ = std::exchange(other.admission_, nullptr);
    peer_ = std::move(other.peer_);
  }
  return *this;
}

void StreamAdmission::Ticket::Release() {
  if (admission_ != nullptr) std::exchange(admission_, nullptr)->Free(peer_);
}

absl::StatusOr<StreamAdmission::Ticket> StreamAdmission::Admit(const std::string& peer,
                                                               const std::string& what) {
  absl::MutexLock lock(&mu_);
  int& by_peer = by_peer_[peer];
  if (by_peer >= limits_.per_peer || held_ >= limits_.total) {
    const bool peer_full = by_peer >= limits_.per_peer;
    if (by_peer == 0) by_peer_.erase(peer);
    ++refused_;
    return absl::ResourceExhaustedError(
        peer_full ? absl::StrCat("this server holds ", limits_.per_peer, " ", what,
                                 " from this peer already (its limit); end one first")
                  : absl::StrCat("this server holds ", limits_.total, " ", what,
                                 " already (its limit); try again later"));
  }
  ++by_peer;
  ++held_;
  return Ticket(this, peer);
}

void StreamAdmission::Free(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  auto it = by_peer_.find(peer);
  if (it != by_peer_.end() && --it->second == 0) by_peer_.erase(it);
  --held_;
}

int StreamAdmission::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

int StreamAdmission::held_by(const std::string& peer) const {
  absl::MutexLock lock(&mu_);
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? 0 : it->second;
}

uint64_t StreamAdmission::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

StreamWatchdog::Watch& StreamWatchdog::Watch::operator=(Watch&& other) noexcept {
  if (this != &other) {
    Disarm();
    watchdog_ = std::exchange(other.watchdog_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

void StreamWatchdog::Watch::Touch() {
  if (watchdog_ != nullptr) watchdog_->Touch(id_);
}

void StreamWatchdog::Watch::Pause() {
  if (watchdog_ != nullptr) watchdog_->Pause(id_);
}

void StreamWatchdog::Watch::Disarm() {
  if (watchdog_ != nullptr) std::exchange(watchdog_, nullptr)->Disarm(id_);
}

StreamWatchdog::StreamWatchdog(StreamLimits limits) : limits_(limits) {}

StreamWatchdog::~StreamWatchdog() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

StreamWatchdog::Watch StreamWatchdog::Arm(std::string what, Expire expire) {
  absl::MutexLock lock(&mu_);
  // Started by the first stream: a service that never serves one costs no thread.
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  const uint64_t id = next_id_++;
  const absl::Time deadline = absl::Now() + limits_.first_message;
  entries_.emplace(id, Entry{deadline, true, std::move(what), std::move(expire)});
  due_.emplace(deadline, id);
  return Watch(this, id);
}

void StreamWatchdog::Touch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  // A later deadline only changes the entry: the thread finds the queued one stale and queues
  // this one then. An earlier one (the idle limit below the first-message deadline, or a paused
  // stream) is queued now, which wakes the thread if it is the earliest.
  const absl::Time before = it->second.deadline;
  it->second.deadline = absl::Now() + limits_.idle;
  it->second.first = false;
  if (it->second.deadline < before) due_.emplace(it->second.deadline, id);
}

void StreamWatchdog::Pause(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.deadline = absl::InfiniteFuture();
}

void StreamWatchdog::Disarm(uint64_t id) {
  absl::MutexLock lock(&mu_);
  entries_.erase(id);
  // An expire in progress may use what the watch's owner owns: wait for it, unless this is it.
  if (std::this_thread::get_id() == thread_id_) return;
  auto done = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return expiring_ != id; };
  mu_.Await(absl::Condition(&done));
}

size_t StreamWatchdog::watched() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

uint64_t StreamWatchdog::expired() const {
  absl::MutexLock lock(&mu_);
  return expired_;
}

void StreamWatchdog::Run() {
  absl::MutexLock lock(&mu_);
  thread_id_ = std::this_thread::get_id();
  while (!stopping_) {
    const absl::Time wake = due_.empty() ? absl::InfiniteFuture() : due_.top().first;
    // Woken early by stopping_ or by an Arm/Touch that queues an earlier deadline.
    const absl::Time earliest = wake;
    auto wanted = [this, earliest]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || (!due_.empty() && due_.top().first < earliest);
    };
    mu_.AwaitWithDeadline(absl::Condition(&wanted), wake);
    if (stopping_) break;
    if (due_.empty() || due_.top().first > absl::Now()) continue;
    const auto [deadline, id] = due_.top();
    due_.pop();
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.deadline == absl::InfiniteFuture()) continue;
    if (it->second.deadline > deadline) {  // touched since: wait for its new deadline
      due_.emplace(it->second.deadline, id);
      continue;
    }
    Entry entry = std::move(it->second);
    entries_.erase(it);
    ++expired_;
    expiring_ = id;
    mu_.Unlock();
    entry.expire(absl::DeadlineExceededError(
        entry.first ? absl::StrCat(entry.what,
                                   " sent no message within its first-message "
                                   "deadline; the server ended it")
                    : absl::StrCat(entry.what,
                                   " sent nothing for longer than the server's "
                                   "idle limit; the server ended it")));
    entry = Entry{};  // whatever the callback holds goes before the watch is released
    mu_.Lock();
    expiring_ = 0;
  }
}

}  // namespace ringside
