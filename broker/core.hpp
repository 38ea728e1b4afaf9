#pragma once
// Internal to the broker (namespace detail): the broker's core, protocol-neutral. It owns the
// pieces that live on the broker's strand (channel index, delivery policies, flush scheduling),
// the registry of connections of every protocol, the periodic sweep of deadlines, graceful
// shutdown and the in-process side of publish and subscribe. Wire protocols reach it through
// the functions below and peer.hpp; listeners (listener.hpp) register the peers they accept.
//
// Threads: strand only, except create(), ctx() (its cfg and ctr), strand() and snapshot().
// Ownership: shared by the public server, each listener, each peer and each posted step, so it
// lives until the last of them is gone; it owns every table, and no table owns a peer.

#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "broker/channel_index.hpp"
#include "broker/config.hpp"
#include "broker/context.hpp"
#include "broker/delivery.hpp"
#include "broker/mqtt_router.hpp"
#include "broker/peer.hpp"
#include "broker/queue_delivery.hpp"
#include "broker/reactor.hpp"
#include "broker/slice_ring.hpp"
#include "broker/stats.hpp"
#include "broker/sys_topics.hpp"

namespace newsdesk::broker::detail {

class core : public std::enable_shared_from_this<core> {
 public:
  /// The only way to make one: the pieces' posted steps keep the core alive through it.
  static std::shared_ptr<core> create(boost::asio::io_context& ioc, config cfg);
  core(boost::asio::io_context& ioc, config cfg); // for create() (std::make_shared) only
  core(const core&) = delete;
  core& operator=(const core&) = delete;

  [[nodiscard]] context& ctx() noexcept { return ctx_; }
  [[nodiscard]] const config& cfg() const noexcept { return ctx_.cfg; }
  [[nodiscard]] const strand_type& strand() const noexcept { return ctx_.strand; }
  [[nodiscard]] stats_snapshot snapshot() const { return ctx_.ctr.snapshot(); }

  // Life cycle.

  /// Arms the periodic sweep. False (and nothing done) if started before or shutting down.
  bool start();
  /// Graceful shutdown (server::async_shutdown): every peer drains for at most
  /// cfg.shutdown_deadline and is then closed; then in-process subscribers and channels are
  /// dropped and `handler` (may be empty) is posted to the io_context. A later call only
  /// queues its handler, posted when the shutdown completes (at once if it has). Listeners
  /// are closed by whoever composes them (broker.cpp) before the first call.
  void shutdown(std::function<void()> handler);
  [[nodiscard]] bool shutting_down() const noexcept { return shutting_down_; }

  // For listeners and protocols: connections.

  /// Before a listener registers a connection it just accepted: whether there is a slot for
  /// it. At max_connections or max_unidentified_connections it closes a randomly chosen
  /// unidentified peer (disconnects.unidentified_limit) to make one; when every slot holds an
  /// identified peer it returns false and counts the refusal (connections_rejected). Either
  /// shows in a level=warn line, at most one per refusal_log_interval, with the counts since.
  [[nodiscard]] bool make_room();
  /// For a listener with a per-address cap, before make_room(): the entry of `address` with
  /// one more connection counted, or null when that address holds `cap` already. A refusal is
  /// counted (connections_rejected_per_address) and shows in a level=warn line, at most one per
  /// address per refusal_log_interval, naming the address, its refusals since and the slots
  /// left for other addresses. The caller gives the entry to its peer (peer::address_), or back
  /// with release_address() if it does not make one.
  [[nodiscard]] address_table::value_type* take_address(const std::string& address,
                                                        std::size_t cap);
  /// Gives back a connection's count of its address's entry (remove_peer does for a peer).
  void release_address(address_table::value_type& entry);
  /// Charges `bytes` of will to p's address under cfg.mqtt.max_will_bytes_per_address; false
  /// (nothing charged) when they would pass it. A peer without an address entry is charged
  /// against the budget alone. The will keeps the entry (mqtt_will::address) until the router
  /// gives the bytes back (mqtt_router::drop_will), which may be after p closed (a delayed will).
  [[nodiscard]] bool charge_will(peer& p, std::size_t bytes);
  /// A connection just accepted on `socket` (an MQTT listener's, or one handed over by the HTTP
  /// server), before its peer is made: take_address() under `cap` (0: none), then make_room().
  /// True with `entry` set (null without a cap) for the caller to give to its peer; false when
  /// refused, with the socket closed and nothing held.
  [[nodiscard]] bool admit(boost::asio::ip::tcp::socket& socket, std::size_t cap,
                           address_table::value_type*& entry);
  /// Counts and lists a peer just accepted (unidentified), before its start().
  void register_peer(peer& p);
  /// p sent its first complete frame: it no longer counts as unidentified. Idempotent.
  void identified(peer& p);
  /// The one close path of every protocol: takes p out of its channel, a channel's paused
  /// publishers and the registry, and drops (and counts) what its queue still held. p must be
  /// closed already; it may be destroyed when the caller's last reference goes.
  void remove_peer(peer& p);
  /// Drops every connection's hold on itself, and the registry with them: for an io_context
  /// destroyed before shutdown finished (see connection_release in core.cpp). Nothing may run.
  void release_connections();
  /// Shutdown drain of a paused publisher: it stops waiting for backlog room.
  void stop_waiting(peer& p);

  // For protocols: the tables and publishing.

  /// p subscribes to `name`. False when the channel would be one too many (max_channels).
  [[nodiscard]] bool subscribe(peer& p, std::string_view name);
  /// p leaves the channel it subscribes to (it has one).
  void unsubscribe(peer& p);
  /// See delivery::publish; `from` is the publishing peer.
  std::size_t publish(std::string_view name, std::span<const msg_view> msgs, peer& from,
                      const publish_meta& meta = {}) {
    return delivery_.publish(name, msgs, &from, nullptr, meta);
  }
  /// Publishes an MQTT will on behalf of its connection, which is gone (and keeps it as the
  /// retained message when it asks), unless shutdown began; gives back its will budget.
  void publish_will(std::unique_ptr<mqtt_will> w);
  /// MQTT's sessions, wildcard tree and retained messages.
  [[nodiscard]] mqtt_router& mqtt() noexcept { return mqtt_; }
  /// Readiness of the sockets protocols register there instead of with Asio (reactor.hpp);
  /// closed when shutdown is done.
  [[nodiscard]] fd_reactor& reactor() noexcept { return reactor_; }
  /// Calls p.flush() after the current step (flush_scheduler::mark).
  void mark_flush(peer& p) { flush_.mark(p); }
  /// See queue_delivery::room_freed (peer::sent calls it).
  void room_freed(peer& p) { queues_.room_freed(p); }
  /// See flush_scheduler::defer_close.
  void defer_close(peer& p, close_reason why) { flush_.defer_close(p, why); }
  /// Whether `name` starts with one of cfg.reserved_prefixes (network clients may not publish).
  [[nodiscard]] bool is_reserved(std::string_view name) const;
  /// Whether `offered` is cfg.token, in time independent of where they differ.
  [[nodiscard]] bool token_matches(std::string_view offered) const;

  // Scratch shared by every connection on the strand (never kept across a post).

  /// One read buffer for all connections, so an idle one holds none: a connection keeps only
  /// the bytes of an incomplete frame pair between reads, and copies them to the front. Sized
  /// for that leftover (a channel frame and a data frame at their limits) plus one read.
  char* read_buffer();
  std::vector<msg_view>& run_scratch() noexcept { return run_; }
  /// The channel of the run in run_scratch() while an MQTT read collects it (a run never
  /// outlives the read that collected it, so no connection keeps a name of its own).
  std::string& run_channel_scratch() noexcept { return run_channel_; }
  std::vector<boost::asio::const_buffer>& iov_scratch() noexcept { return iov_; }
  /// The MQTT control packets (acknowledgements) one read produces, before they are queued.
  std::string& mqtt_control_scratch() noexcept { return mqtt_control_; }
  /// At most one warn line about refused connections per this long: a flood of connections
  /// writes a dozen lines a minute, each with the counts since the last, not one per socket.
  static constexpr std::chrono::seconds refusal_log_interval{5};
  /// Most buffers in one gathered write.
  static constexpr std::size_t max_iov = max_write_buffers;

  // In-process side of the public API (server::publish, server::subscribe, subscription).

  /// Publishes one message held in `block` (stored form, `size` bytes); dropped and counted
  /// once shutdown began. `retain`: also kept as the MQTT retained message of a /topic/ channel.
  void publish_local(std::string_view name, const block_ptr& block, std::size_t size,
                     bool retain = false);
  /// Registers s on `name`, unless shutdown began or s was cancelled meanwhile (then drops it).
  void subscribe_local(const std::shared_ptr<local_subscriber>& s, std::string_view name);
  void unsubscribe_local(local_subscriber& s) { index_.unsubscribe_local(s); }

 private:
  void arm_sweep();
  void sweep();
  void ping_quiet(steady::time_point now);
  void publish_sys(steady::time_point now);
  void log_refusals(steady::time_point now);
  void move_in_registry(std::size_t from, std::size_t to);
  void maybe_finish_shutdown();

  context ctx_;
  // Connections and will bytes per address, of listeners that cap them (the router's wills point
  // into it, so it is made before the router).
  address_table addresses_;
  channel_index index_;
  flush_scheduler flush_;
  queue_delivery queues_;
  mqtt_router mqtt_;
  delivery delivery_;
  fd_reactor reactor_;

  boost::asio::steady_timer sweep_timer_;
  boost::asio::steady_timer shutdown_timer_;
  // The registry, non-owning: for the sweep, shutdown and making room. The first
  // unidentified_ entries are the peers that have not sent their first frame yet.
  std::vector<peer*> peers_;
  std::size_t unidentified_ = 0;
  std::minstd_rand rng_{std::random_device{}()}; // which unidentified peer make_room closes
  block_ptr ping_block_;                         // one zero-length message, shared by all pings
  steady::time_point next_ping_{};
  sys_topics sys_;
  steady::time_point started_at_{};
  steady::time_point next_sys_{};

  // Refusals and evictions not yet logged, and when the last line went out.
  std::uint64_t refused_unlogged_ = 0;
  std::uint64_t evicted_unlogged_ = 0;
  steady::time_point refusal_logged_{};

  std::unique_ptr<char[]> read_buffer_;
  std::size_t read_buffer_size_ = 0;
  std::vector<msg_view> run_;
  std::string run_channel_;
  std::vector<boost::asio::const_buffer> iov_;
  std::string mqtt_control_;

  bool started_ = false;
  bool shutting_down_ = false;
  bool shutdown_done_ = false;
  std::vector<std::function<void()>> shutdown_handlers_;
};

} // namespace newsdesk::broker::detail
