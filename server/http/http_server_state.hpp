// Internal to server/http, not for callers outside it: what the listener (http_server.cpp) and
// the connections it serves (http_session.cpp) share. Kept out of http_server.hpp so that the
// server's callers see no Asio socket types and the session's code can live in its own file.
//
// Ownership: one state per server, held by the http_server, by every connection and by every
// pending accept, so a connection may outlive the http_server that accepted it.
// Threads: the acceptor, retry_timer and backoff belong to the listener, which uses them on the
// acceptor's strand once started; the budgets under budget_mutex, the open list under
// open_mutex, and the atomics from any thread; ioc, loops, handler and limits are set once.
#pragma once

#include "server/http/http_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace newsdesk::server {

namespace detail {
// What stop() needs from an open connection.
struct connection_base {
  virtual ~connection_base() = default;
  // Called from any thread when the server stops.
  virtual void on_server_stop() = 0;
};
} // namespace detail

struct http_server::state {
  state(boost::asio::io_context& ioc_, request_handler h, http_server_limits l,
        event_loops* loops_);

  boost::asio::io_context& ioc;
  event_loops* loops; // where connections run; none: on strands of ioc
  request_handler handler;
  http_server_limits limits;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer retry_timer;
  std::chrono::milliseconds backoff{0};
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::uint64_t> refused{0};

  // What a connection holds of the budgets (http_server_limits): a plain slot, a stream slot,
  // or a refusal slot while its 503 goes out.
  enum class slot { plain, stream, refusing };
  std::mutex budget_mutex; // guards the counts and the refusal log below
  std::size_t plain = 0, streams = 0, refusing = 0;
  struct per_address {
    std::size_t plain = 0, streams = 0;
  };
  std::unordered_map<std::string, per_address> by_address;
  std::unordered_map<std::string, std::size_t> streams_by_range; // range_of(address) -> streams
  std::map<std::string, std::uint64_t> refusals_unlogged;        // by reason
  std::chrono::steady_clock::time_point last_refusal_log{};
  static constexpr std::chrono::seconds refusal_log_interval{10};

  // The streams one address range may hold (http_server_limits::max_streams_per_range); 0: any.
  std::size_t streams_per_range() const;
  // Takes a plain slot for `address`. Otherwise returns why not ("connections",
  // "connections_per_ip") and, in `refusing_slot`, whether a refusal slot was taken instead.
  const char* admit(const std::string& address, bool& refusing_slot);
  // Moves a plain slot to a stream slot, or returns why not ("streams", "streams_per_ip",
  // "streams_per_range").
  const char* to_stream(const std::string& address, const std::string& range);
  // A stream slot taken for a request that was then answered without a stream: plain again.
  void to_plain(const std::string& address, const std::string& range);
  // Gives back the slot of `kind` a connection from `address` (in `range`) held.
  void release(slot kind, const std::string& address, const std::string& range);
  // With budget_mutex held: one stream fewer in `range`; a range with none is forgotten.
  void forget_range_locked(const std::string& range);
  // With budget_mutex held: counts a refusal and logs the refusals at most once per
  // refusal_log_interval.
  void note_refusal_locked(const char* reason);

  // A connection is accepted on a strand of ioc (an accept pending on the listener never holds
  // a socket of a loop, which may be gone first when the server is destroyed), then, when there
  // are event loops, moved to the next one. Returns false when the move failed (socket closed).
  bool move_to_loop(boost::asio::ip::tcp::socket& socket);

  // Every open connection, so stop() can reach the idle ones. Weak: a connection's lifetime is
  // still its chain of pending operations; it removes itself when it ends.
  std::mutex open_mutex;
  std::list<std::weak_ptr<detail::connection_base>> open;
};

} // namespace newsdesk::server
