// Async HTTP/1.1 server (Boost.Beast): keep-alive, per-connection strands, deadlines, size
// limits and HEAD. Routing is not its business: every parsed request goes to one handler.
//
// Threads: the server runs on the io_context it is given, which any number of threads may run.
// Each connection lives on its own strand of it, or on one of the event loops given; the handler
// is called there and may answer from any thread. Large file bodies (memory_file) go out with
// sendfile(2), which raises SIGPIPE when the client has gone: a process serving them ignores
// SIGPIPE (newsdesk's main does).
#pragma once

#include "server/http/http_message.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

struct http_server_limits {
  // Request line + headers together, however many reads they take; also the longest chunk line
  // or trailer block, and what a connection buffers unparsed (see request_reader). Browsers
  // send 1-4 KiB; 16 KiB leaves room for big cookies while refusing header floods (431).
  std::size_t max_header_bytes = 16 * 1024;
  // Request bodies as sent (chunk framing, extensions and trailers included). No route takes
  // uploads; 64 KiB is plenty for a form or JSON (413 beyond).
  std::size_t max_body_bytes = 64 * 1024;
  // Deadline for a whole request to arrive, including idle time on a kept-alive connection.
  // Cuts off slowloris-style clients that trickle headers.
  std::chrono::milliseconds read_timeout{30'000};
  // Deadline for writing one response; a client that stops reading is dropped.
  std::chrono::milliseconds write_timeout{30'000};
  // Budgets. Plain connections and streamed responses (Server-Sent Events) are counted apart,
  // so streams held open cannot take the slots ordinary requests need, and each client address
  // has its own share of both, so one client cannot take them all. A client over a limit gets
  // 503 with Retry-After (its request is read first, so the answer reaches it), never a silent
  // close; refusals are logged at most once per log_interval. 0 per address: no per-address
  // limit (behind a proxy every client has the proxy's address).
  // newsdesk derives max_connections and max_streams from its open-file limit when they are 0
  // (fit_descriptor_budget in server/app/config.hpp); the server itself needs them set.
  std::size_t max_connections = 10'000;
  std::size_t max_connections_per_ip = 256;
  std::size_t max_streams = 4'096;
  std::size_t max_streams_per_ip = 16;
  // Streams from one address range (IPv4 /24, IPv6 /64: what one network holds), so a few dozen
  // addresses cannot take every stream either. 0: an eighth of max_streams (at least
  // max_streams_per_ip), and no range limit when max_streams_per_ip is 0 (behind a proxy).
  std::size_t max_streams_per_range = 0;
  // Connections being refused at once (each holds a descriptor while its 503 goes out); past
  // this, new ones over a limit are closed at once.
  std::size_t max_refusing = 256;
  std::chrono::seconds retry_after{5};
  // After stop(), how long a kept-alive connection waiting for its next request may still send
  // one (it is answered, with "Connection: close") before it is closed. Long enough for a
  // request already on its way to arrive; short, so idle browsers do not hold shutdown up for
  // read_timeout.
  std::chrono::milliseconds stop_idle_grace{500};
};

class event_loops;

class http_server {
 public:
  // The listener runs on `ioc`. Connections run on `loops` when given (each on one thread for
  // its whole life), otherwise each on a strand of `ioc`. `loops` must outlive the server.
  http_server(boost::asio::io_context& ioc, request_handler handler, http_server_limits limits = {},
              event_loops* loops = nullptr);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Binds and listens. Throws std::runtime_error naming the address on failure.
  void listen(const std::string& address, unsigned short port);
  // The bound port (useful after listening on port 0).
  unsigned short port() const;
  // Starts accepting connections.
  void start();
  // Closes the listener (connections the kernel has already completed are accepted and served
  // first); responses written from now on carry "Connection: close" so kept-alive clients
  // finish their current request and leave; a connection idle between requests gets
  // `stop_idle_grace` to send one more, then is closed. Requests being read or handled are
  // answered. Safe from any thread.
  void stop();
  std::size_t open_connections() const; // plain, streaming and being refused
  std::size_t open_streams() const;
  // Connections and streams refused because a budget was full, since start.
  std::uint64_t refused() const;

  struct state; // defined in http_server_state.hpp (internal); shared with the sessions it serves

 private:
  std::shared_ptr<state> state_;
};

// For tests and fuzzing, without a socket: reads requests from `bytes` exactly as a connection
// does (the same parser, limits and read loop; the bytes arrive `chunk` at a time, then EOF) and
// calls `on_request` with each request a connection would hand to its handler, for as long as
// the connection would stay open. Returns the status a connection answers before closing (400,
// 413, 431, or 501 for a transfer coding other than chunked), or 0 when it would just close
// (EOF, or a request without keep-alive).
unsigned read_requests(std::string_view bytes, std::size_t chunk, const http_server_limits& limits,
                       const std::function<void(http_request)>& on_request);

} // namespace newsdesk::server
