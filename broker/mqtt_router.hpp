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
//    messages: O(levels x matching branches), never a scan of all channels or subscriptions;
//  - a shared subscription ($share/GROUP/FILTER) is a member of its group, and the group has
//    one entry in the channel or the tree: each message goes to one member, in turn.
// A publish on a /topic/ channel reaches each matching session once, at the highest QoS of its
// matching subscriptions (with all their subscription identifiers), capped by the publish's
// QoS; a shared subscription's pick gets it once more, on its own.
//
// QoS 0 messages are encoded once per run and protocol version and the one block is queued to
// every such subscriber, under the same bounds and slow-consumer policy as the frame protocol.
// QoS 1 and 2 messages go to the session's pending queue (max_queued_messages, queue_max_bytes)
// and from there into a window of at most max_inflight unacknowledged packets; a session kept
// after its client left collects them and resends the unacknowledged ones (DUP; PUBREL for
// QoS 2 messages the client has received) when the client returns. A QoS 2 message is sent once
// and released once: exactly once. QoS 2 messages a client sends are delivered when they
// arrive, and their packet ids kept until PUBREL, so a resent one is not delivered again.
//
// MQTT 5: the properties a PUBLISH or will carries for its receivers travel with the message
// (mqtt_extras), its Message Expiry counting down: a message that expires before it is sent is
// dropped (drops.expired). Wills may wait their Will Delay Interval in the kept session.
//
// Threads: strand only. Ownership: the router owns the sessions (client states), the wildcard
// tree and the share groups; channels hold raw pointers to subscriptions, which leave them
// before they go. A session points at its live connection (raw: the connection detaches before
// it closes).

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
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
struct mqtt_share_group;

/// What an MQTT 5 message carries besides topic and payload, shared by every copy of it: the
/// properties forwarded to receivers as they came (mqtt::append_forwarded; a receiver's
/// subscription identifiers are appended to its own copy), and when it expires.
struct mqtt_extras {
  std::string properties;
  steady::time_point expires_at{};
  bool has_expiry = false;
};
using extras_ptr = std::shared_ptr<const mqtt_extras>;

/// The extras of a PUBLISH or will's properties `p` arriving now; null when it has none.
extras_ptr make_extras(const mqtt::message_properties& p);

/// How a run of messages was published, as MQTT receivers see it.
struct publish_meta {
  /// The highest QoS MQTT subscribers get it at: an MQTT publisher's; 2 for the frame protocol
  /// and in-process publishers, whose messages the broker has taken for good.
  std::uint8_t qos = 2;
  bool retain = false; ///< published with RETAIN (a run of one): seen by Retain As Published
  extras_ptr extras;   ///< a run of one
};

/// A will message, held from CONNECT until its connection ends without DISCONNECT (then
/// published at once, or after its delay in the kept session), with the will budget it holds.
struct mqtt_will {
  std::string channel; // /topic/<will topic>
  std::string payload;
  extras_ptr extras; // its forwarded properties; the expiry is set when it is published
  std::uint32_t expiry_s = 0;
  std::uint32_t delay_s = 0;
  bool has_expiry = false;
  std::uint8_t qos = 0;
  bool retain = false;
  // The address entry its bytes are charged to (core::charge_will); null when none is kept.
  address_table::value_type* address = nullptr;
  std::size_t bytes = 0;
};

/// An MQTT connection as the router sees it; mqtt_session.cpp implements the rest.
class mqtt_connection : public peer {
 public:
  using peer::peer;
  /// Tells an MQTT 5 client `v5_code` in a DISCONNECT (after what is queued), then closes
  /// counting `why`; a 3.1.1 client is closed at once.
  virtual void end(close_reason why, std::uint8_t v5_code) = 0;

  std::uint8_t version_ = mqtt::v311;
  std::uint32_t client_max_packet_ = 0; // the client's Maximum Packet Size; 0: none
  std::shared_ptr<mqtt_client_state> state_;
  std::unique_ptr<mqtt_will> will_;
};

struct mqtt_subscription {
  mqtt_client_state* owner = nullptr;      // null: a share group's entry in the index
  std::unique_ptr<mqtt_subscription> next; // the owner's next subscription
  std::string filter;                      // as subscribed ("$share/g/a/+" when shared)
  std::shared_ptr<channel> chan;           // a filter without wildcards: its channel
  wildcard_node* node = nullptr;           // a filter with wildcards: its node in the tree
  mqtt_share_group* group = nullptr;       // shared: its group (member or the group's entry)
  std::uint32_t slot = 0;                  // position in the list holding it (O(1) removal)
  std::uint32_t id = 0;                    // MQTT 5 subscription identifier; 0: none
  std::uint8_t qos = 0;
  bool no_local = false;
  bool retain_as_published = false;
  bool hash = false; // ends in '#': listed in node->hash_subs
};

/// The options a SUBSCRIBE gives one filter.
struct subscribe_options {
  std::uint8_t qos = 0;
  bool no_local = false;
  bool retain_as_published = false;
  std::uint32_t id = 0;
};

/// A QoS 1 or 2 message owed to a session: its payload is a part of a shared block.
struct mqtt_message {
  block_ptr block;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
  std::shared_ptr<const std::string> topic;
  extras_ptr extras;
  std::uint16_t packet_id = 0; // set when sent
  std::uint8_t qos = 1;
  bool retain = false;
  bool released = false; // QoS 2: PUBREC received, PUBREL sent (payload dropped)
};

/// What a session holds beyond its subscriptions, made when first needed and dropped when empty,
/// so an idle session that only takes QoS 0 holds none of it.
struct mqtt_held {
  std::vector<mqtt_message> inflight;                // sent, not acknowledged (completed)
  std::unique_ptr<std::deque<mqtt_message>> pending; // waiting for the window; made on use
  std::size_t pending_bytes = 0;
  std::vector<std::uint16_t> awaiting_rel; // QoS 2 ids received, not yet released (sorted)
  std::unique_ptr<mqtt_will> will;         // a delayed will of the connection that went
  steady::time_point will_at{};
  [[nodiscard]] bool empty() const noexcept {
    return inflight.empty() && !pending && awaiting_rel.empty() && !will;
  }
};

// Every idle MQTT connection holds one of these: its layout is kept small (bench/broker
// measures the memory of idle connections).
struct mqtt_client_state {
  std::string client_id;
  // A list (few: found by linear search) and not a vector: a session with one subscription
  // holds no array for it.
  std::unique_ptr<mqtt_subscription> subs;
  mqtt_connection* conn = nullptr; // the live connection, if any
  std::unique_ptr<mqtt_held> held; // null while nothing is held
  steady::time_point expires_at{};
  std::uint64_t stamp = 0;    // the publish that last matched it (one delivery per publish)
  std::uint32_t expiry_s = 0; // kept this long after the connection ends (0: dropped at once)
  std::uint32_t target = 0;   // its place in the router's targets of that publish
  std::uint16_t subs_count = 0;
  std::uint16_t next_id = 0;
  std::uint16_t window = 32;
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

/// A shared subscription's group: one entry in the index for all its members.
struct mqtt_share_group {
  std::string key; // "$share/GROUP/FILTER"
  mqtt_subscription entry;
  std::vector<mqtt_subscription*> members;
  std::size_t next = 0; // whose turn it is
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

/// "$share/GROUP/FILTER" split: the group and the filter; empty when `filter` is no valid
/// shared subscription (a group name holds no '/', '+' or '#'; the filter is valid).
struct share_name {
  std::string_view group;
  std::string_view filter;
};
[[nodiscard]] share_name split_share(std::string_view filter);

class mqtt_router {
 public:
  /// `will_due` publishes a will whose time has come (the core's; it is called after the
  /// current step, never inside a router call).
  mqtt_router(context& ctx, channel_index& index, flush_scheduler& flush, address_table& addresses,
              std::function<void(std::unique_ptr<mqtt_will>)> will_due);
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
  /// (disconnects.mqtt_taken_over; MQTT 5: DISCONNECT 0x8E); clean_start drops what the
  /// session held. A will waiting in the session (or the old connection's) is published when
  /// the session ends here (clean start) or the will had no delay, dropped when the session goes
  /// on. `expiry_s`: how long to keep it after c ends; `window`: c's in-flight window. A resumed
  /// session sends nothing until resume() (after the CONNACK).
  attach_result attach(mqtt_connection& c, std::string_view client_id, bool clean_start,
                       std::uint32_t expiry_s, std::uint16_t window);
  /// c ends: its session is dropped, or kept until its expiry (collecting QoS 1 and 2
  /// messages). c's will (null when it left with DISCONNECT) is published now, or, with a Will
  /// Delay Interval in a kept session, when the delay or the session ends, whichever is first.
  void detach(mqtt_connection& c, std::unique_ptr<mqtt_will> will);
  /// Drops kept sessions whose expiry passed, and publishes delayed wills that are due (the
  /// core's sweep).
  void expire(steady::time_point now);
  /// Shutdown: drops every session and the tree (connections are closed already); no will is
  /// published.
  void clear();
  /// Gives back the will budget `w` holds and forgets it (not published).
  void drop_will(std::unique_ptr<mqtt_will> w);
  /// Sessions with a connection, and kept ones without.
  [[nodiscard]] std::size_t sessions_connected() const noexcept { return states_.size() - kept_; }
  [[nodiscard]] std::size_t sessions_kept() const noexcept { return kept_; }

  /// A QoS 2 PUBLISH with packet id `id` arrived from s's client: whether it is new (deliver
  /// it), a resend of one not yet released (do not), or one more than receive_maximum.
  enum class qos2_receipt { fresh, duplicate, over_limit };
  qos2_receipt receive_qos2(mqtt_client_state& s, std::uint16_t id);
  /// PUBREL for `id`: forgets it; false when it was not held.
  bool release_qos2(mqtt_client_state& s, std::uint16_t id);

  // Subscriptions.

  /// Subscribes s to `filter` (valid; "$share/..." checked by split_share) with `opts`;
  /// replaces an existing subscription to the same filter (`existed` set). Returns the granted
  /// QoS, or an MQTT 5 failure reason (>= 0x80).
  std::uint8_t subscribe(mqtt_client_state& s, std::string_view filter,
                         const subscribe_options& opts, bool& existed);
  /// False when s had no subscription to `filter`.
  bool unsubscribe(mqtt_client_state& s, std::string_view filter);
  /// Sends s the retained messages `filter` matches, at most at `qos`, RETAIN set, with the
  /// subscription identifier `id` (0: none). Expired ones are deleted instead.
  void send_retained(mqtt_client_state& s, std::string_view filter, std::uint8_t qos,
                     std::uint32_t id);

  // Publishing.

  /// Keeps `payload` as the retained message of `topic` (an empty payload deletes it), within
  /// max_retained_messages and max_retained_bytes.
  void retain(std::string_view topic, std::string_view payload, std::uint8_t qos,
              extras_ptr extras = nullptr);
  /// Delivers a run published on `channel_name` to the matching MQTT sessions (delivery calls
  /// it for every fan-out publish). `stored`: a block holding the run, made here if needed and
  /// null. Returns how many sessions it reached.
  std::size_t fan_out(std::string_view channel_name, channel* ch, std::span<const msg_view> msgs,
                      const peer* from, const publish_meta& meta, block_ptr& stored);
  /// Whether any wildcard subscription exists (else only channel::mqtt_subs can match).
  [[nodiscard]] bool has_wildcards() const noexcept { return wildcard_subs_ > 0; }

  /// After CONNACK of a resumed session: sends again what was never acknowledged (DUP, or
  /// PUBREL for what the client has received), then what is pending.
  void resume(mqtt_client_state& s) {
    resend(s);
    pump(s);
  }

  /// s's client acknowledged packet `id` with `type` (PUBACK, PUBREC, PUBCOMP) and `code`: the
  /// window moves on. What the broker answers (PUBREL) is appended to `control`.
  void acknowledged(mqtt_client_state& s, mqtt::packet_type type, std::uint16_t id,
                    std::uint8_t code, std::string& control);

 private:
  struct target {
    mqtt_client_state* s = nullptr;
    std::uint8_t qos = 0;
    bool retain_as_published = false;
    bool has_ids = false;
  };

  void destroy(const std::shared_ptr<mqtt_client_state>& s);
  void will_now(std::unique_ptr<mqtt_will> w);
  void place(mqtt_subscription& sub, std::string_view filter);
  void remove(mqtt_subscription& sub);
  void unplace(mqtt_subscription& sub);
  void collect(const wildcard_node& n, std::size_t i, bool dollar, const peer* from);
  void add_target(const mqtt_subscription& sub, const peer* from);
  bool add_shared(mqtt_share_group& g);
  extras_ptr extras_for(const target& t, std::size_t index, const extras_ptr& extras) const;
  void pump(mqtt_client_state& s);
  void resend(mqtt_client_state& s);
  void queue_message(mqtt_client_state& s, mqtt_message m);
  void offer(mqtt_connection& c, const block_ptr& block, std::size_t total,
             std::span<const std::uint32_t> sizes);
  /// Encodes one PUBLISH into a block of its own and queues it (not flushed); false (counted,
  /// nothing queued) when it is larger than the client's Maximum Packet Size.
  bool enqueue_one(mqtt_connection& c, std::string_view topic, const char* payload,
                   std::size_t length, std::uint8_t qos, bool retain, bool dup,
                   std::uint16_t packet_id, const mqtt_extras* extras);
  void deliver_one(mqtt_client_state& s, const std::shared_ptr<const std::string>& topic,
                   const block_ptr& block, std::uint32_t offset, std::uint32_t length,
                   std::uint8_t qos, bool retain, const extras_ptr& extras);
  /// Queues control bytes (PUBREL) to c as one slice.
  void enqueue_control(mqtt_connection& c, std::string_view bytes);

  context& ctx_;
  channel_index& index_;
  flush_scheduler& flush_;
  address_table& addresses_; // core's: where wills give their bytes back
  std::function<void(std::unique_ptr<mqtt_will>)> will_due_;

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
  std::unordered_map<std::string, std::unique_ptr<mqtt_share_group>, channel_index::string_hash,
                     std::equal_to<>>
      groups_;

  struct retained_entry {
    block_ptr block; // the payload alone
    std::uint32_t length = 0;
    std::uint8_t qos = 0;
    std::shared_ptr<const std::string> topic;
    extras_ptr extras;
  };
  std::unordered_map<std::string, retained_entry, channel_index::string_hash, std::equal_to<>>
      retained_;
  std::size_t retained_bytes_ = 0;

  // Scratch of one fan_out.
  std::uint64_t stamp_ = 0;
  std::vector<target> targets_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ids_; // (target, subscription id)
  std::vector<mqtt_share_group*> groups_hit_;                // share groups matching
  std::vector<std::string_view> levels_;
  std::vector<std::uint32_t> sizes_[2]; // each encoded packet's bytes, per version
};

} // namespace newsdesk::broker::detail
