// Plain HTTP request/response values passed between the Beast session and the routes.
//
// Keeping Beast out of these types means only the connection's code (http_session.cpp,
// request_reader.cpp) compiles Beast here; routes, pages and tests build quickly against this
// header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace newsdesk::server {

using header_list = std::vector<std::pair<std::string, std::string>>;

// A response body written while it is produced (Server-Sent Events). Producers push chunks
// from any thread; the connection writes them in order. A chunk many streams carry alike (a batch
// of events, a reset with every headline) is pushed as one shared buffer, never copied per
// stream. A client that reads too slowly to keep its backlog (the bytes it has yet to be sent,
// shared or not) under one chunk plus `max_buffered_bytes` is cut off (push returns false), so
// it never holds more memory than that, nor holds other clients back. The stream ends when the
// producer or the connection closes it.
class event_stream {
 public:
  using chunk = std::shared_ptr<const std::string>;

  explicit event_stream(std::size_t max_buffered_bytes)
      : max_bytes_(max_buffered_bytes) {}

  // Queues `text` (copied), or `shared` (kept). False when the stream is closed, or closes now
  // because the backlog would pass the limit beyond its first chunk (a chunk pushed when nothing
  // is waiting is taken whatever its size).
  bool push(std::string_view text);
  bool push(chunk shared);
  void close();
  bool closed() const;

  // The connection's side: `wake` runs (on the pushing thread) whenever there is data or the
  // stream closes; take() empties the backlog.
  void on_activity(std::function<void()> wake);
  std::vector<chunk> take();

 private:
  void drop_backlog_locked(); // frees what is waiting: the stream is closed

  mutable std::mutex mutex_;
  std::vector<chunk> backlog_;
  std::size_t backlog_bytes_ = 0;
  std::size_t max_bytes_;
  std::size_t allowed_bytes_ = 0; // the backlog's first chunk plus max_bytes_
  bool closed_ = false;
  std::function<void()> wake_;
};

// An immutable body in an anonymous in-memory file (memfd), for bodies served many times over
// like the cached /news page. It is also mapped, so a connection can send it either way: small
// bodies with their headers in one write, large ones with sendfile(2), where the kernel hands the
// file's pages to the socket instead of copying the bytes out of this process on every response
// (which is how nginx serves static files).
class memory_file {
 public:
  // Throws std::system_error when the kernel refuses an in-memory file or its mapping.
  static std::shared_ptr<const memory_file> create(std::string_view bytes);
  ~memory_file();
  memory_file(const memory_file&) = delete;
  memory_file& operator=(const memory_file&) = delete;

  int fd() const { return fd_; }
  std::size_t size() const { return size_; }
  std::string_view bytes() const { return {data_, size_}; }

 private:
  memory_file(int fd, const char* data, std::size_t size)
      : fd_(fd)
      , data_(data)
      , size_(size) {}
  int fd_;
  const char* data_; // the file's pages, mapped read-only (null when empty)
  std::size_t size_;
};

struct http_response {
  unsigned status = 200;
  std::string content_type; // with charset for text, e.g. "text/html; charset=utf-8"
  header_list headers;      // extra headers (Location, ETag, Cache-Control, ...)
  std::string body;
  // When set, sent instead of `body`, straight from the file (see memory_file).
  std::shared_ptr<const memory_file> file_body;
  // When set, the headers go out at once (no Content-Length; the connection closes at the end)
  // and the body is whatever the stream produces.
  std::shared_ptr<event_stream> stream;
  // Header lines formatted ahead of time (append_header_line), sent after `headers`: what a
  // response served many times over carries every time (see representation).
  std::shared_ptr<const std::string> header_lines;
  // When set, the connection is handed over instead of answered (an upgrade to another
  // protocol: MQTT over WebSocket): the server writes nothing, lets the socket go and calls
  // this, on the connection's thread, with its descriptor, the callee's from then on. A HEAD
  // request, or one followed by bytes already read (pipelined), is answered 400 instead, and
  // one arriving while the server stops 503.
  std::function<void(int fd)> take_over;

  std::size_t body_size() const { return file_body ? file_body->size() : body.size(); }
  // The first header of that name (case-insensitive) in `headers` or `header_lines`.
  std::optional<std::string_view> header(std::string_view name) const;

  http_response& with_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

struct http_request {
  std::string method; // upper case as received, e.g. "GET"
  std::string target; // request-target as received, e.g. "/news?site=cnn"
  header_list headers;
  std::string body;

  // The target before '?', and after it (empty when absent).
  std::string_view path() const;
  std::string_view query() const;
  // First header of that name, compared case-insensitively.
  std::optional<std::string_view> header(std::string_view name) const;

  // Set by http_server on a request it may answer with a stream (its connection holds a plain
  // slot): takes a slot of the streams' budget for it now, so that a handler refuses a stream
  // over the budget before it sets anything up for it, and the refusal is the 503 it is (in the
  // access log and /metrics) rather than a stream cut after the fact. Returns nothing when the
  // slot is taken (answer with the stream; anything else gives the slot back), else the 503 to
  // answer with. Call it at most once, before the handler returns (on the connection's thread).
  // Null outside a connection (tests); a stream answered without it is checked as it starts.
  std::function<std::optional<http_response>()> reserve_stream;
};

// The Content-Type of every JSON answer (/news.json, /healthz, /readyz, /api/...).
inline constexpr const char* json_content_type = "application/json; charset=utf-8";

// A short plain-text answer: "404 Not Found\n". Users see generic text; logs get the detail.
http_response text_response(unsigned status, std::string_view text = {});

// Percent-encodes a query value for a link (everything but letters, digits and -._~).
std::string form_encode(std::string_view text);

// Decodes an application/x-www-form-urlencoded component of a query ('+' is a space). Invalid
// escapes are kept as written.
std::string form_decode(std::string_view text);

// Reason phrase for a status code ("Not Found"), or "Unknown".
std::string_view reason_phrase(unsigned status);

// Delivers the response for one request. Call exactly once, from any thread.
using responder = std::function<void(http_response)>;

// Handles one request. HEAD requests arrive with method "HEAD" and must be answered like
// GET; the session sends the headers only. May answer later, from any thread.
using request_handler = std::function<void(http_request, responder)>;

bool iequals(std::string_view a, std::string_view b);

// Whether a response header can be sent as it is: a token for a name, no line breaks or NUL in
// the value (anything else could split the response).
bool header_fits(std::string_view name, std::string_view value);
// Appends "\r\nName: value" to a response head being formatted.
void append_header_line(std::string& head, std::string_view name, std::string_view value);
// The same for a header that header_fits(); any other is left out and logged.
void append_checked_header_line(std::string& head, std::string_view name, std::string_view value);
// Appends `n` in decimal, with no allocation (std::to_chars): for lines built per request.
void append_decimal(std::string& out, std::uint64_t n);

// The value of a hexadecimal digit, or -1.
inline int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace newsdesk::server
