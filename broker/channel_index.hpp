#pragma once
// Internal to the broker (namespace detail): the two-way index of channels and subscribers
// (Redis src/pubsub.c): channel -> subscribers here, subscriber -> channel in each peer. It knows
// peers only as peer.hpp describes them, never a wire protocol, so every protocol's connections
// share it. A channel lives while it has a subscriber of either kind, a /queue backlog or a
// paused publisher; the call that removes the last of them erases it.
//
// Threads: strand only, except local_subscriber's atomics (see there). Ownership: the table
// owns the channels (shared_ptr, so a posted step may keep an erased one alive until it has
// run); a channel holds raw pointers to its network subscribers, which leave it before they go
// (core::remove_peer), and owns its in-process subscribers.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/broker.hpp"
#include "broker/context.hpp"
#include "broker/slice_ring.hpp"

namespace newsdesk::broker::detail {

class peer;
struct mqtt_subscription;

/// /queue channels deliver round-robin with a backlog; every other name fans out (/topic).
[[nodiscard]] inline bool is_queue_name(std::string_view name) {
  return name.starts_with("/queue");
}

struct channel {
  std::string name;
  bool is_queue = false;
  std::vector<peer*> subs; // index kept in peer::chan_index_, so removal is O(1)
  // In-process subscribers (never on a /queue): few per channel, so removal is a linear erase.
  std::vector<std::shared_ptr<local_subscriber>> locals;
  // MQTT subscriptions whose filter is exactly this /topic/ channel's topic (mqtt_router.hpp);
  // index kept in mqtt_subscription::slot.
  std::vector<mqtt_subscription*> mqtt_subs;

  // /queue delivery state (queue_delivery).
  std::size_t rr = 0; // next subscriber in turn
  slice_ring backlog; // messages no subscriber could take yet
  std::size_t backlog_messages = 0;
  std::size_t backlog_bytes = 0;
  std::vector<std::shared_ptr<peer>> blocked; // publishers paused on a full backlog
  bool pump_posted = false;
  bool starved = false; // listed in queue_delivery::starved_: waits for broker-wide room
  // Since when no network subscriber has listened (/queue backlogs expire after backlog_ttl);
  // empty while one does.
  steady::time_point unattended_since{};
};

} // namespace newsdesk::broker::detail

// An in-process subscriber (server::subscribe). The channel owns it while it is registered, so
// its handler stays valid for every delivery; the handle and a pending removal share it too.
struct newsdesk::broker::detail::local_subscriber {
  message_handler handler; // strand only; destroyed on the strand when the subscriber leaves
  channel* chan = nullptr; // strand only: where it is registered (a channel with locals stays)
  std::atomic<bool> cancelled{false}; // any thread: no more calls once set
  // A handler call is under way: cancel() on another thread waits for it to end. Together with
  // `cancelled` (both sequentially consistent) either the deliverer sees the cancel or the
  // canceller sees the call.
  std::atomic<bool> calling{false};
};

namespace newsdesk::broker::detail {

class channel_index {
 public:
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using table =
      std::unordered_map<std::string, std::shared_ptr<channel>, string_hash, std::equal_to<>>;

  explicit channel_index(context& ctx)
      : ctx_(ctx) {}

  /// The channel called `name`, or null. O(1).
  [[nodiscard]] std::shared_ptr<channel> find(std::string_view name) const;

  /// The channel called `name`, created if need be; null when that would exceed max_channels,
  /// unless `always` (in-process subscribers: newsdesk's own relay must not depend on room that
  /// network clients can take).
  std::shared_ptr<channel> find_or_create(std::string_view name, bool always = false);

  /// Erases `ch` if nothing keeps it any more (see the top of this file).
  void maybe_erase(channel& ch);

  /// p (subscribed to nothing) subscribes to `name`. False, changing nothing, when the channel
  /// would be one too many. O(1).
  [[nodiscard]] bool subscribe(peer& p, std::string_view name);
  /// p leaves the channel it subscribes to; the channel goes if nothing else keeps it. O(1).
  void unsubscribe(peer& p);

  /// Registers an in-process subscriber (never refused: see find_or_create).
  void subscribe_local(const std::shared_ptr<local_subscriber>& s, std::string_view name);
  /// Unregisters it, if it is registered; `s` must stay alive during the call.
  void unsubscribe_local(local_subscriber& s);
  /// Forgets the handler here, on the strand, so what it captured is released where no
  /// delivery can be using it; the subscriber is never called again.
  static void drop_local(local_subscriber& s);

  /// Shutdown: drops every in-process subscriber and forgets every channel.
  void clear();

  /// Every channel, to look at; the table must not change while the caller iterates.
  [[nodiscard]] const table& channels() const noexcept { return channels_; }

 private:
  context& ctx_;
  table channels_;
};

} // namespace newsdesk::broker::detail
