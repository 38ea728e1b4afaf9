#include "tests/support/http_get.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace newsdesk::testing {

namespace {
using clock_type = std::chrono::steady_clock;

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Reads until the peer closes or the deadline passes.
std::string read_all(int fd, clock_type::time_point deadline) {
  std::string out;
  char buf[65536];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    if (left <= 0)
      break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0)
      break;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Parses one answer at `pos`; advances pos. Returns false when incomplete.
// `to_end`: a body without Content-Length runs to the end; `head`: no body follows at all.
bool parse_one(const std::string& raw, std::size_t& pos, http_answer& out, bool to_end,
               bool no_body = false) {
  auto head_end = raw.find("\r\n\r\n", pos);
  if (head_end == std::string::npos)
    return false;
  std::string head = raw.substr(pos, head_end - pos);
  auto line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || status_line.rfind("HTTP/1.", 0) != 0)
    return false;
  out.status = std::atoi(status_line.c_str() + 9);
  std::size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
  std::size_t length = std::string::npos;
  while (at < head.size()) {
    auto end = head.find("\r\n", at);
    if (end == std::string::npos)
      end = head.size();
    auto line = head.substr(at, end - at);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      auto name = line.substr(0, colon);
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      if (same_name(name, "Content-Length"))
        length = std::stoul(value);
      out.headers.emplace_back(name, value);
    }
    at = end + 2;
  }
  std::size_t body_start = head_end + 4;
  if (length == std::string::npos)
    length = to_end ? raw.size() - body_start : 0;
  if (no_body || out.status == 304 || out.status == 204)
    length = 0;
  if (raw.size() - body_start < length)
    return false;
  out.body = raw.substr(body_start, length);
  pos = body_start + length;
  return true;
}
} // namespace

int connect_loopback(unsigned short port, int receive_buffer, const char* from) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  if (receive_buffer > 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  if (from) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (::inet_pton(AF_INET, from, &local.sin_addr) != 1 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      int error = errno;
      ::close(fd);
      errno = error;
      return -1;
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

unsigned short unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string http_answer::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (same_name(k, name))
      return v;
  return {};
}

std::string raw_exchange(unsigned short port, const std::string& bytes,
                         std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  int fd = connect_loopback(port);
  if (fd < 0)
    return {};
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  auto out = read_all(fd, deadline);
  ::close(fd);
  return out;
}

http_answer send_request(unsigned short port, const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         std::chrono::milliseconds timeout) {
  auto started = clock_type::now();
  std::string request = method + " " + target +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers)
    request += k + ": " + v + "\r\n";
  request += "\r\n";
  auto raw = raw_exchange(port, request, timeout);
  http_answer answer;
  std::size_t pos = 0;
  if (!parse_one(raw, pos, answer, true, method == "HEAD"))
    answer = {};
  else if (method == "HEAD")
    answer.body = raw.substr(pos); // must be empty
  answer.elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);
  return answer;
}

keep_alive_connection::keep_alive_connection(unsigned short port)
    : fd_(connect_loopback(port))
    , port_(port) {}

keep_alive_connection::~keep_alive_connection() {
  if (fd_ >= 0)
    ::close(fd_);
}

http_answer keep_alive_connection::get(const std::string& target,
                                       std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n\r\n";
  if (fd_ < 0 || ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
                     static_cast<ssize_t>(request.size()))
    return {};
  char buf[65536];
  for (;;) {
    http_answer answer;
    std::size_t pos = 0;
    if (parse_one(pending_, pos, answer, false)) {
      pending_.erase(0, pos);
      return answer;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    pollfd p{fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
      return {};
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0)
      return {};
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

std::vector<http_answer> parse_answers(const std::string& raw) {
  std::vector<http_answer> answers;
  std::size_t pos = 0;
  for (;;) {
    http_answer a;
    if (!parse_one(raw, pos, a, false))
      break;
    answers.push_back(std::move(a));
  }
  return answers;
}

} // namespace newsdesk::testing
