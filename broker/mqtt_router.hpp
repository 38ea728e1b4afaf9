#pragma once
// Internal to the broker (namespace detail): MQTT's tables on the broker's strand, beside the
// channel index every protocol shares.
//
// Topics and channels: MQTT topic `a/b` is the broker's channel `/topic/a/b`, both ways, so a
// frame-protocol client and an MQTT client see each other's messages; channels outside /topic/
// (/queue/..., /null) are not visible to MQTT. Subscriptions belong to a session (client
// state), which may outlive its connection:
//  - a filter without wildcards is a subscriber of its channel (channel::mqtt_subs), found in
//    O(1) by a publish like any subscriber;
//  - a filter with '+' or '#' lives in a tree of levels, walked once per published run of
//    messages: O(levels x matching branches), never a scan of all channels or subscriptions.
// A publish on a /topic/ channel reaches each matching session once, at the highest QoS of its
// matching subscriptions, capped by the publish's QoS.
//
// QoS 0 messages are encoded once per run and protocol version and the one block is queued to
// every such subscriber, under the same bounds and slow-consumer policy as the frame protocol.
// QoS 1 messages go to the session's pending queue (max_queued_messages) and from there into a
// window of at most max_inflight unacknowledged packets; a session kept after its client left
// collects them and resends the unacknowledged ones (DUP) when the client returns.
//
// Threads: strand only. Ownership: the router owns the sessions (client states) and the
// wildcard tree; channels hold raw pointers to subscriptions, which leave them before they go.
// A session points at its live connection (raw: the connection detaches before it closes).

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/channel_index.hpp"
#include "broker/context.hpp"
#include "broker/mqtt_codec.hpp"
#include "broker/peer.hpp"
#include "broker/slice_ring.hpp"

namespace newsdesk::broker::detail {

struct mqtt_client_state;
struct wildcard_node;

/// An MQTT connection as the router sees it; mqtt_session.cpp implements the rest.
class mqtt_connection : public peer {
 public:
  using peer::peer;
  std::uint8_t version_ = mqtt::v311;
  std::uint32_t client_max_packet_ = 0; // the client's Maximum Packet Size; 0: none
  std::shared_ptr<mqtt_client_state> state_;
};

struct mqtt_subscription {
  mqtt_client_state* owner = nullptr;
  std::unique_ptr<mqtt_subscription> next; // the owner's next subscription
  std::string filter;
  std::shared_ptr<channel> chan; // a filter without wildcards: its channel
  wildcard_node* node = nullptr; // a filter with wildcards: its node in the tree
  std::uint32_t slot = 0;        // position in the list holding it (O(1) removal)
  std::uint8_t qos = 0;
  bool no_local = false;
  bool hash = false; // ends in '#': listed in node->hash_subs
};

/// A QoS 1 message owed to a session: its payload is a part of a shared block.
struct mqtt_message {
  block_ptr block;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
  std::shared_ptr<const std::string> topic;
  std::uint16_t packet_id = 0; // set when sent
  bool retain = false;
};

/// The QoS 1 messages a session owes, made when the first is queued and dropped when none is
/// left, so a session that only takes QoS 0 holds none of it.
struct mqtt_qos1_queue {
  std::vector<mqtt_message> inflight;                // sent, not acknowledged
  std::unique_ptr<std::deque<mqtt_message>> pending; // waiting for the window; made on use
};

// Every idle MQTT connection holds one of these: its layout is kept small (bench/broker
// measures the memory of idle connections).
struct mqtt_client_state {
  std::string client_id;
  // A list (few: found by linear search) and not a vector: a session with one subscription
  // holds no array for it.
  std::unique_ptr<mqtt_subscription> subs;
  mqtt_connection* conn = nullptr;       // the live connection, if any
  std::unique_ptr<mqtt_qos1_queue> qos1; // null while nothing QoS 1 is owed
  steady::time_point expires_at{};
  std::uint64_t stamp = 0;    // the publish that last matched it (one delivery per publish)
  std::uint32_t expiry_s = 0; // kept this long after the connection ends (0: dropped at once)
  std::uint16_t subs_count = 0;
  std::uint16_t next_id = 0;
  std::uint16_t window = 32;
  std::uint8_t stamp_qos = 0; // the highest QoS of its subscriptions matching that publish
};

struct wildcard_node {
  wildcard_node* parent = nullptr;
  std::string level;
  std::unordered_map<std::string, std::unique_ptr<wildcard_node>, channel_index::string_hash,
                     std::equal_to<>>
      children;
  std::vector<mqtt_subscription*> subs;      // filters ending at this level
  std::vector<mqtt_subscription*> hash_subs; // filters ending in '#' right below this level
};

/// The topic filters one client may subscribe to (read) and publish to (write).
struct mqtt_permissions {
  std::vector<std::string> read;
  std::vector<std::string> write;
  /// Whether a subscription to `filter` is allowed: some read filter covers it.
  [[nodiscard]] bool may_read(std::string_view filter) const;
  /// Whether a publish on `topic` is allowed: some write filter matches it.
  [[nodiscard]] bool may_write(std::string_view topic) const;
};

/// A block of `total` bytes holding the run `msgs` (stored form) one after the other.
block_ptr copy_run(std::span<const msg_view> msgs, std::size_t total);

class mqtt_router {
 public:
  mqtt_router(context& ctx, channel_index& index, flush_scheduler& flush);
  ~mqtt_router();
  mqtt_router(const mqtt_router&) = delete;
  mqtt_router& operator=(const mqtt_router&) = delete;

  // Who may connect (config::mqtt users and anonymous access).

  /// The permissions of user `name` if `password` is its password (compared as SHA-256
  /// digests in constant time, unknown names included), else null.
  [[nodiscard]] const mqtt_permissions* authenticate(std::string_view name,
                                                     std::string_view password) const;
  [[nodiscard]] const mqtt_permissions& anonymous() const noexcept { return anonymous_; }

  // Sessions.

  /// A client id for a client that sent none (unique within this broker's life).
  std::string assign_client_id();

  struct attach_result {
    std::shared_ptr<mqtt_client_state> state; // null: refused (max_sessions)
    bool session_present = false;
  };
  /// c (just connected as `client_id`) takes its session: a connection holding it is closed
  /// (disconnects.mqtt_taken_over); clean_start drops what the session held. `expiry_s`: how
  /// long to keep it after c ends; `window`: c's in-flight window. A resumed session sends
  /// nothing until resume() (after the CONNACK).
  attach_result attach(mqtt_connection& c, std::string_view client_id, bool clean_start,
                       std::uint32_t expiry_s, std::uint16_t window);
  /// c ends: its session is dropped, or kept until its expiry (collecting QoS 1 messages).
  void detach(mqtt_connection& c);
  /// Drops kept sessions whose expiry passed (the core's sweep).
  void expire(steady::time_point now);
  /// Shutdown: drops every session and the tree (connections are closed already).
  void clear();

  // Subscriptions.

  /// Subscribes s to `filter` (valid) at `qos`; replaces an existing subscription to the same
  /// filter (`existed` set). Returns the granted QoS, or an MQTT 5 failure reason (>= 0x80).
  std::uint8_t subscribe(mqtt_client_state& s, std::string_view filter, std::uint8_t qos,
                         bool no_local, bool& existed);
  /// False when s had no subscription to `filter`.
  bool unsubscribe(mqtt_client_state& s, std::string_view filter);
  /// Sends s the retained messages `filter` matches, at most at `qos`, RETAIN set.
  void send_retained(mqtt_client_state& s, std::string_view filter, std::uint8_t qos);

  // Publishing.

  /// Keeps `payload` as the retained message of `topic` (an empty payload deletes it), within
  /// max_retained_messages and max_retained_bytes.
  void retain(std::string_view topic, std::string_view payload, std::uint8_t qos);
  /// Delivers a run published on `channel_name` to the matching MQTT sessions (delivery calls
  /// it for every fan-out publish). `stored`: a block holding the run, made here if needed and
  /// null. Returns how many sessions it reached.
  std::size_t fan_out(std::string_view channel_name, channel* ch, std::span<const msg_view> msgs,
                      const peer* from, std::uint8_t qos, block_ptr& stored);
  /// Whether any wildcard subscription exists (else only channel::mqtt_subs can match).
  [[nodiscard]] bool has_wildcards() const noexcept { return wildcard_subs_ > 0; }

  /// After CONNACK of a resumed session: sends again what was never acknowledged (DUP), then
  /// what is pending.
  void resume(mqtt_client_state& s) {
    resend(s);
    pump(s);
  }

  /// s's client acknowledged packet `id`: the window moves on.
  void acknowledged(mqtt_client_state& s, std::uint16_t id);

 private:
  void destroy(const std::shared_ptr<mqtt_client_state>& s);
  void remove(mqtt_subscription& sub);
  void collect(const wildcard_node& n, std::size_t i, bool dollar, const peer* from);
  void add_target(const mqtt_subscription& sub, const peer* from);
  void pump(mqtt_client_state& s);
  void resend(mqtt_client_state& s);
  void queue_qos1(mqtt_client_state& s, mqtt_message m);
  void offer(mqtt_connection& c, const block_ptr& block, std::size_t total,
             std::span<const std::uint32_t> sizes);
  /// Encodes one PUBLISH into a block of its own and queues it (not flushed).
  void enqueue_one(mqtt_connection& c, std::string_view topic, const char* payload,
                   std::size_t length, std::uint8_t qos, bool retain, bool dup,
                   std::uint16_t packet_id);
  void deliver_one(mqtt_client_state& s, const std::shared_ptr<const std::string>& topic,
                   const block_ptr& block, std::uint32_t offset, std::uint32_t length,
                   std::uint8_t qos, bool retain);

  context& ctx_;
  channel_index& index_;
  flush_scheduler& flush_;

  struct user_entry {
    std::array<unsigned char, 32> digest{}; // SHA-256 of the password
    mqtt_permissions perms;
  };
  std::unordered_map<std::string, user_entry, channel_index::string_hash, std::equal_to<>> users_;
  mqtt_permissions anonymous_;

  // Keyed by a view of the state's own client_id: the entry keeps the state, so the key lives
  // as long as the entry, and a session stores its id once.
  std::unordered_map<std::string_view, std::shared_ptr<mqtt_client_state>,
                     channel_index::string_hash, std::equal_to<>>
      states_;
  std::size_t kept_ = 0; // states without a connection (expire() has work only then)
  std::uint64_t auto_ids_ = 0;

  wildcard_node root_;
  std::size_t wildcard_subs_ = 0;

  struct retained_entry {
    block_ptr block; // the payload alone
    std::uint32_t length = 0;
    std::uint8_t qos = 0;
    std::shared_ptr<const std::string> topic;
  };
  std::unordered_map<std::string, retained_entry, channel_index::string_hash, std::equal_to<>>
      retained_;
  std::size_t retained_bytes_ = 0;

  // Scratch of one fan_out.
  std::uint64_t stamp_ = 0;
  std::vector<mqtt_client_state*> targets_;
  std::vector<std::string_view> levels_;
  std::vector<std::uint32_t> sizes_[2]; // each encoded packet's bytes, per version
};

} // namespace newsdesk::broker::detail
