#include "server/http/http_message.hpp"

#include "server/core/log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <system_error>
#include <utility>

namespace newsdesk::server {

std::shared_ptr<const memory_file> memory_file::create(std::string_view bytes) {
  int fd = ::memfd_create("newsdesk-body", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "memfd_create");
  auto fail = [fd](const char* what) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(), what);
  };
  for (std::size_t done = 0; done < bytes.size();) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail("writing an in-memory file");
    done += static_cast<std::size_t>(n);
  }
  // Sealed: nothing can change the bytes while responses are being sent from them.
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  const char* data = nullptr;
  if (!bytes.empty()) {
    void* mapped = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED)
      fail("mapping an in-memory file");
    data = static_cast<const char*>(mapped);
  }
  return std::shared_ptr<memory_file>(new memory_file(fd, data, bytes.size()));
}

memory_file::~memory_file() {
  if (data_)
    ::munmap(const_cast<char*>(data_), size_);
  ::close(fd_);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view http_request::path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view http_request::query() const {
  std::string_view t = target;
  auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::optional<std::string_view> http_request::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return std::nullopt;
}

std::optional<std::string_view> http_response::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  if (!header_lines)
    return std::nullopt;
  std::string_view rest = *header_lines; // "\r\nName: value" per line
  while (rest.size() > 2) {
    rest.remove_prefix(2);
    const auto end = std::min(rest.find("\r\n"), rest.size());
    const auto line = rest.substr(0, end);
    rest.remove_prefix(end);
    const auto colon = line.find(": ");
    if (colon != std::string_view::npos && iequals(line.substr(0, colon), name))
      return line.substr(colon + 2);
  }
  return std::nullopt;
}

bool header_fits(std::string_view name, std::string_view value) {
  const auto bad_name = [](char c) {
    return c <= ' ' || c >= 127 || c == ':' || c == '(' || c == ')' || c == ',' || c == '"';
  };
  return !name.empty() && std::none_of(name.begin(), name.end(), bad_name) &&
         value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

void append_header_line(std::string& head, std::string_view name, std::string_view value) {
  head += "\r\n";
  head += name;
  head += ": ";
  head += value;
}

void append_checked_header_line(std::string& head, std::string_view name, std::string_view value) {
  if (header_fits(name, value))
    return append_header_line(head, name, value);
  log_warn("msg=\"response header left out: it would split the response\" name=" +
           logfmt_quoted(name.substr(0, 64)));
}

std::string_view reason_phrase(unsigned status) {
  switch (status) {
  case 200:
    return "OK";
  case 204:
    return "No Content";
  case 301:
    return "Moved Permanently";
  case 302:
    return "Found";
  case 304:
    return "Not Modified";
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 413:
    return "Payload Too Large";
  case 414:
    return "URI Too Long";
  case 426:
    return "Upgrade Required";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Unknown";
  }
}

std::string form_encode(std::string_view text) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string form_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
               hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

http_response text_response(unsigned status, std::string_view text) {
  http_response res;
  res.status = status;
  res.content_type = "text/plain; charset=utf-8";
  res.body = std::to_string(status) + " " +
             std::string(text.empty() ? reason_phrase(status) : text) + "\n";
  return res;
}

bool event_stream::push(std::string_view text) {
  return push(std::make_shared<const std::string>(text));
}

bool event_stream::push(chunk shared) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (closed_)
      return false;
    // A stream with nothing waiting is keeping up: it takes one chunk of any size (one
    // refresh's batch of events, bounded by the store's limits), and up to the limit more
    // behind it, so that a small event right behind a large batch the connection has not
    // taken yet (a site's status, a story) is no sign of a slow reader. A stream whose
    // backlog would pass that is too slow: dropped, it reconnects and replays what it missed.
    if (backlog_.empty())
      allowed_bytes_ = shared->size() + max_bytes_;
    if (backlog_bytes_ + shared->size() > allowed_bytes_) {
      closed_ = true;
      drop_backlog_locked(); // nothing will send it
      wake = std::move(wake_);
    } else {
      backlog_bytes_ += shared->size();
      backlog_.push_back(std::move(shared));
      wake = wake_;
    }
  }
  if (wake)
    wake();
  return !closed();
}

void event_stream::close() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (closed_)
      return;
    closed_ = true;
    // Nothing will send it: free it now, not when the publisher next finds the stream closed
    // (a stream refused over the streams' budget held its whole reset until the next ping).
    drop_backlog_locked();
    wake = std::move(wake_); // the connection holds itself through wake_: release it
  }
  if (wake)
    wake();
}

bool event_stream::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void event_stream::on_activity(std::function<void()> wake) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_)
      wake_ = wake;
  }
  wake(); // whatever was pushed before the connection was ready
}

void event_stream::drop_backlog_locked() {
  std::vector<chunk>().swap(backlog_);
  backlog_bytes_ = 0;
}

std::vector<event_stream::chunk> event_stream::take() {
  std::lock_guard lock(mutex_);
  backlog_bytes_ = 0;
  return std::exchange(backlog_, {});
}

void append_decimal(std::string& out, std::uint64_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

} // namespace newsdesk::server
