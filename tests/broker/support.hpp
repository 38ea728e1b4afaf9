#pragma once
// Test helpers: an in-process broker on 127.0.0.1:0 run by its own thread, and a blocking
// POSIX-socket client with timeouts (independent of Asio, like a client in another language).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "broker/broker.hpp"
#include "broker/frame.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_get.hpp"

namespace newsdesk::broker::test {

using namespace std::chrono_literals;

using testing::eventually;

inline config test_config() {
  config c;
  c.port = 0;
  c.send_buffer_bytes = 16 * 1024; // so a stuck reader fills its queue, not kernel buffers
  c.mqtt.port = 0;
  return c;
}

/// A broker listening on 127.0.0.1:0, run by one background thread.
class running_broker {
 public:
  explicit running_broker(config c = test_config(), int threads = 1)
      : work_(ioc_.get_executor())
      , server_(ioc_, std::move(c)) {
    server_.listen();
    server_.start();
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this] { ioc_.run(); });
  }

  ~running_broker() {
    if (!shut_)
      shutdown(2000ms);
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_)
      t.join();
  }

  /// Runs the graceful shutdown; true if its handler ran within `timeout`.
  bool shutdown(std::chrono::milliseconds timeout) {
    shut_ = true;
    auto done = std::make_shared<std::promise<void>>();
    auto f = done->get_future();
    server_.async_shutdown([done] { done->set_value(); });
    return f.wait_for(timeout) == std::future_status::ready;
  }

  std::uint16_t port() const { return server_.local_endpoint().port(); }
  std::uint16_t mqtt_port() const { return server_.mqtt_endpoint().port(); }
  server& srv() { return server_; }
  stats_snapshot stats() const { return server_.stats(); }

  bool wait_subscribers(std::uint64_t n, std::chrono::milliseconds t = 5000ms) {
    return eventually([&] { return server_.stats().subscribers_current == n; }, t);
  }

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  server server_;
  std::vector<std::thread> threads_;
  bool shut_ = false;
};

/// A blocking socket connected to 127.0.0.1:`port` (tests/support/http_get.hpp, with SO_RCVBUF
/// when `rcvbuf` > 0: a small one makes a slow reader), with TCP_NODELAY; throws when it fails.
inline int connect_nodelay(std::uint16_t port, int rcvbuf = 0) {
  const int fd = newsdesk::testing::connect_loopback(port, rcvbuf);
  if (fd < 0)
    throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/// A blocking client speaking the broker protocol over a plain socket.
class client {
 public:
  explicit client(std::uint16_t port, int rcvbuf = 0)
      : fd_(connect_nodelay(port, rcvbuf)) {}
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  ~client() { close(); }

  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  /// Closes with RST instead of FIN (a client that vanishes).
  void abort() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  void send_raw(std::string_view bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      off += static_cast<std::size_t>(n);
    }
  }
  void send_frame(std::string_view payload) { send_raw(encode_frame(payload)); }
  void publish(std::string_view channel, std::string_view data) {
    std::string out;
    append_frame(out, channel);
    append_frame(out, data);
    send_raw(out);
  }

  /// The next frame's payload, or nullopt on timeout, EOF or error.
  std::optional<std::string> read_frame(std::chrono::milliseconds timeout = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto r = try_decode(std::string_view(buf_).substr(off_), 0xffffffffU);
      if (r.status == decode_status::frame) {
        std::string payload(r.payload);
        off_ += r.size;
        if (off_ == buf_.size()) {
          buf_.clear();
          off_ = 0;
        }
        return payload;
      }
      if (!fill(end))
        return std::nullopt;
    }
  }

  /// True once the broker closed the connection (EOF or reset), discarding data meanwhile.
  bool wait_closed(std::chrono::milliseconds timeout = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (fill(end)) {
      buf_.clear();
      off_ = 0;
    }
    return eof_;
  }

  int fd() const { return fd_; }

 private:
  // Reads what is available, waiting until `end`. False on timeout, EOF or error.
  bool fill(std::chrono::steady_clock::time_point end) {
    if (fd_ < 0 || eof_)
      return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return false;
    char tmp[65536];
    const auto n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    if (off_ > 0) {
      buf_.erase(0, off_);
      off_ = 0;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string buf_;
  std::size_t off_ = 0;
};

} // namespace newsdesk::broker::test
