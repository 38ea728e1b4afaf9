#pragma once
// The embedded pub/sub broker: a TCP listener speaking the length-prefixed frame protocol
// described in docs/broker.md, plus an in-process publish() and subscribe() for the rest of the
// program.
//
// Threads: the server runs on an io_context supplied by the caller, which may be run by any
// number of threads. All broker state (channels, queues, sessions) lives on one strand, so
// there are no mutexes; the member functions below may be called from any thread unless
// noted. Ownership: each connection is owned by its own pending operations (its registration
// with the broker's reactor among them, until it closes); the server object owns the listener
// and the tables. Destroy the server only after async_shutdown() completed or after the
// io_context has stopped running.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "broker/config.hpp"
#include "broker/stats.hpp"
#include "broker/websocket.hpp"

namespace newsdesk::broker {

namespace detail {
class core;
class listener;
struct local_subscriber;
} // namespace detail

/// What an in-process subscriber is handed: one message's data, shared by every in-process
/// subscriber of the channel and immutable, so a receiver may keep it as long as it likes.
using message_ptr = std::shared_ptr<const std::string>;
using message_handler = std::function<void(message_ptr message)>;

/// The handle of an in-process subscription (server::subscribe). Destroying it or calling
/// cancel() unsubscribes. Movable, not copyable; a default-constructed or moved-from handle
/// subscribes to nothing. It may outlive the server (cancel() then does nothing).
class subscription {
 public:
  subscription() = default;
  subscription(subscription&& other) noexcept = default;
  subscription& operator=(subscription&& other) noexcept;
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription();

  /// Unsubscribes; idempotent, any thread. When it returns the handler is not running and will
  /// not be called again, with one exception: called from inside a handler (on the broker's
  /// strand), the handler calling it finishes normally. Waits only for a handler call already
  /// under way on another thread, which handlers keep short. The removal from the broker's
  /// tables (and subscribers_current) happens on the strand soon after.
  void cancel();

  /// True from subscribe() until cancel(), destruction or the end of a broker shutdown.
  [[nodiscard]] bool active() const noexcept;

 private:
  friend class server;
  subscription(std::weak_ptr<detail::core> core, std::shared_ptr<detail::local_subscriber> sub)
      : core_(std::move(core))
      , sub_(std::move(sub)) {}

  std::weak_ptr<detail::core> core_;
  std::shared_ptr<detail::local_subscriber> sub_;
};

class server {
 public:
  server(boost::asio::io_context& ioc, config cfg);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Opens, binds and listens on cfg.address:cfg.port, and on cfg.address:cfg.mqtt.port for
  /// MQTT when cfg.mqtt.enabled. Not thread-safe; call once, before start(). The first form
  /// throws std::system_error whose message names the address; on failure neither listens.
  /// A busy MQTT port that was not asked for (cfg.mqtt.port_given false: the default 1883) is no
  /// failure: a warning is logged and the broker runs without its MQTT listener
  /// (mqtt_listening() false; MQTT over WebSockets still works).
  void listen();
  void listen(boost::system::error_code& ec);

  /// The bound endpoint (the real port when cfg.port was 0). Valid after listen().
  [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;
  /// The MQTT listener's bound endpoint; a default endpoint (port 0) when there is none.
  [[nodiscard]] boost::asio::ip::tcp::endpoint mqtt_endpoint() const;
  /// Whether the MQTT listener listens (MQTT enabled and its port had). After listen().
  [[nodiscard]] bool mqtt_listening() const noexcept;

  /// Starts accepting connections and the housekeeping timer. Returns at once.
  void start();

  /// MQTT over WebSocket: takes over the connected socket `fd`, from which an HTTP server read
  /// the upgrade request `req` (which check_websocket_request() accepted) and wrote nothing.
  /// The broker answers the upgrade and serves MQTT on it as on its MQTT listener: the same
  /// connection limits (per address too, by the socket's peer), users and topics. `fd` is the
  /// broker's from the call on (closed when refused: MQTT disabled, no slot, shutting down).
  /// Any thread.
  void serve_websocket(int fd, websocket_request req);

  /// Publishes one message from inside the process, exactly as a network publisher would.
  /// Copies `data` once into a shared buffer and returns at once; delivery happens on the
  /// broker's strand. A /queue message that finds a full backlog, or any message published
  /// after shutdown began, is dropped and counted (an in-process caller cannot be paused).
  /// Throws std::length_error if channel exceeds cfg.max_channel_name or data exceeds
  /// cfg.max_frame_bytes (the limits a network publisher meets), std::invalid_argument if
  /// channel is empty.
  void publish(std::string_view channel, std::string_view data);
  /// publish(), and on a /topic/ channel also keeps `data` as the MQTT retained message of its
  /// topic (sent to every later MQTT subscriber; bounded by cfg.mqtt.max_retained_*).
  void publish_retained(std::string_view channel, std::string_view data);
  /// Keeps `data` as the MQTT retained message of a /topic/ channel's topic without publishing
  /// it: later MQTT subscribers get it, nobody gets it now. Same limits as publish().
  void retain(std::string_view channel, std::string_view data);

  /// Subscribes code in this process to a fan-out channel (/topic or any name not starting with
  /// /queue): `on_message` gets the data of every message published on exactly that channel,
  /// by network publishers and by publish(), in publish order, one call per message.
  ///
  /// Ordering: the registration is queued on the broker's strand before subscribe() returns,
  /// and the strand runs its work in the order it was queued. So every publish() called after
  /// subscribe() returned (on any thread that the return happens-before) is delivered, and so
  /// is every network message the broker reads after the registration ran (once it has run,
  /// subscribers_current counts it). A network message the broker is already reading while
  /// the registration waits for the strand may be missed, as for a network subscriber whose
  /// subscribe frame has not been read yet. No waiting is needed before publishing.
  ///
  /// The handler runs on the broker's strand, inside the publish loop: it must be cheap and
  /// must never block (take the message and post the real work elsewhere); anything it throws
  /// is caught and logged (logfmt, level=error). It may call publish(), subscribe() and cancel();
  /// their effects are queued behind the current publish. There is no queue between the broker and
  /// the handler, so the slow-consumer limits do not apply and nothing is dropped for it.
  /// Each call counts in `deliveries`; the subscriber counts in `subscribers_current` while
  /// registered, like a network subscriber.
  ///
  /// /queue channels are refused (std::invalid_argument): their round-robin, backlog and
  /// backpressure are built around per-connection queues an in-process handler does not have.
  /// Also throws std::invalid_argument for an empty channel name or an empty handler, and
  /// std::length_error above cfg.max_channel_name. A subscribe made once shutdown began, or
  /// one that would exceed cfg.max_channels, registers nothing (the latter is logged) and the
  /// handle turns inactive. When async_shutdown() completes every in-process subscriber is
  /// dropped (its handler destroyed on the strand) and never called again; from the moment a
  /// shutdown begins no new message is published, so in practice the last call comes before.
  [[nodiscard]] subscription subscribe(std::string_view channel, message_handler on_message);

  /// A consistent-enough snapshot of the counters (each read atomically; see stats.hpp).
  [[nodiscard]] stats_snapshot stats() const;

  /// Graceful shutdown: stops accepting, stops reading from clients, delivers what is already
  /// queued to live subscribers for at most cfg.shutdown_deadline, then closes every
  /// connection and calls `handler` (once, posted to the io_context). Later calls also get
  /// their handler called when the shutdown completes.
  void async_shutdown(std::function<void()> handler);

  [[nodiscard]] const config& settings() const noexcept;

 private:
  std::shared_ptr<detail::core> core_;
  std::shared_ptr<detail::listener> listener_;
  std::shared_ptr<detail::listener> mqtt_listener_; // null when MQTT is disabled
  void publish(std::string_view channel, std::string_view data, bool retain);
};

} // namespace newsdesk::broker
