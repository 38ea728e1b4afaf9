// A Server-Sent Events reader over a raw socket, for end-to-end tests of /events.
#pragma once

#include "tests/support/http_get.hpp"

#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace newsdesk::testing {

// Reads a Server-Sent Events stream over a raw socket.
struct sse_client {
  int fd = -1;
  std::string received;

  // `from`: the loopback address to connect from (connect_loopback); the default's when empty.
  explicit sse_client(unsigned short port, const std::string& target = "/events",
                      const std::string& last_event_id = {}, int receive_buffer = 0,
                      const std::string& from = {}) {
    fd = connect_loopback(port, receive_buffer, from.empty() ? nullptr : from.c_str());
    REQUIRE(fd >= 0);
    std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n";
    if (!last_event_id.empty())
      request += "Last-Event-ID: " + last_event_id + "\r\n";
    request += "\r\n";
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  }
  ~sse_client() { ::close(fd); }

  // Reads until `needle` has arrived (true) or the deadline passes or the server closes.
  bool wait_for(const std::string& needle,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received.find(needle) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return false;
      char buf[65536];
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        return received.find(needle) != std::string::npos;
      received.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
};

// How many times `needle` occurs in `text`.
inline std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace newsdesk::testing
