#pragma once
// The embedded pub/sub broker: a TCP listener speaking the length-prefixed frame protocol
// described in docs/broker.md, plus an in-process publish() for the rest of the program.
//
// Threads: the server runs on an io_context supplied by the caller, which may be run by any
// number of threads. All broker state (channels, queues, sessions) lives on one strand, so
// there are no mutexes; the member functions below may be called from any thread unless
// noted. Ownership: each connection is owned by its own pending operations; the server object
// owns the listener and the tables. Destroy the server only after async_shutdown() completed
// or after the io_context has stopped running.

#include <functional>
#include <memory>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "broker/config.hpp"
#include "broker/stats.hpp"

namespace newsdesk::broker {

namespace detail {
class core;
}

class server {
 public:
  server(boost::asio::io_context& ioc, config cfg);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Opens, binds and listens on cfg.address:cfg.port. Not thread-safe; call once, before
  /// start(). The first form throws std::system_error whose message names the address.
  void listen();
  void listen(boost::system::error_code& ec);

  /// The bound endpoint (the real port when cfg.port was 0). Valid after listen().
  [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;

  /// Starts accepting connections and the housekeeping timer. Returns at once.
  void start();

  /// Publishes one message from inside the process, exactly as a network publisher would.
  /// Copies `data` once into a shared buffer and returns at once; delivery happens on the
  /// broker's strand. A /queue message that finds a full backlog, or any message published
  /// after shutdown began, is dropped and counted (an in-process caller cannot be paused).
  /// Throws std::length_error if channel exceeds cfg.max_channel_name or data exceeds
  /// cfg.max_frame_bytes (the limits a network publisher meets), std::invalid_argument if
  /// channel is empty.
  void publish(std::string_view channel, std::string_view data);

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
};

} // namespace newsdesk::broker
