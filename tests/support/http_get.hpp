// A deliberately plain blocking HTTP/1.1 client for tests: raw POSIX sockets, so it shares no
// code with the server under test. Every call has a deadline.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace newsdesk::testing {

struct http_answer {
  int status = 0; // 0: no answer (connection failed, timed out or closed early)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds elapsed{0};

  // First header of that name (case-insensitive), or "".
  std::string header(const std::string& name) const;
};

// A socket connected to 127.0.0.1:`port`, or -1 with errno set. `receive_buffer` > 0 sets
// SO_RCVBUF first (a small one makes a slow reader). `from`: the loopback address to connect
// from ("127.0.3.7": any of 127.0.0.0/8 is this host), for tests of per-address limits.
int connect_loopback(unsigned short port, int receive_buffer = 0, const char* from = nullptr);

// A loopback port nothing listens on (bound, then closed).
unsigned short unused_port();

// Sends one request on a new connection ("Connection: close") and reads the whole answer.
http_answer send_request(unsigned short port, const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers = {},
                         std::chrono::milliseconds timeout = std::chrono::seconds(20));

inline http_answer http_get(unsigned short port, const std::string& target) {
  return send_request(port, "GET", target);
}

// Sends raw bytes and returns everything the server sends back until it closes or the
// deadline passes.
std::string raw_exchange(unsigned short port, const std::string& bytes,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));

// One connection kept open across requests (keep-alive), for tests that check a connection
// survives something (a reload, a shutdown).
class keep_alive_connection {
 public:
  explicit keep_alive_connection(unsigned short port);
  ~keep_alive_connection();
  keep_alive_connection(const keep_alive_connection&) = delete;
  keep_alive_connection& operator=(const keep_alive_connection&) = delete;

  // Sends GET `target` on this connection and reads its answer (status 0: the connection was
  // closed, or no whole answer came within the deadline).
  http_answer get(const std::string& target,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  int fd_ = -1;
  unsigned short port_;
  std::string pending_; // bytes read past the last answer
};

// Parses the answers found in `raw` (for keep-alive tests): each needs a Content-Length.
std::vector<http_answer> parse_answers(const std::string& raw);

} // namespace newsdesk::testing
