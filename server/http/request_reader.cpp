// How a connection reads one request, from bytes to an http_request: the parser under the
// limits, the checks on Host and framing that RFC 9112 leaves to the server, and the conversion
// for the handler; and read_requests(), the same read loop without a socket, for tests and the
// fuzzer. The session (http_session.cpp) drives the same steps over its socket.
#include "server/http/request_reader.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using error_code = boost::system::error_code;

namespace {
// The most one read asks for; the buffer's bound usually caps it first.
constexpr std::size_t max_read_bytes = 64 * 1024;

// An absolute-form target ("GET http://host/news", as proxies send; the scheme in any case,
// RFC 3986 3.1) split into the authority it names and the origin-form rest, "/" when empty.
struct absolute_target {
  std::string_view host;
  std::string_view rest;
};

// iequals here is http_message's, never beast::iequals: Beast 1.81's reads one byte past both
// strings when they differ only in case, and a target is stored without a terminator (a request
// for "HTTP://" read past its heap block under the fuzzer).
std::optional<absolute_target> split_absolute(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() < scheme.size() || !iequals(target.substr(0, scheme.size()), scheme))
      continue;
    const auto after = target.substr(scheme.size());
    const auto slash = std::min(after.find_first_of("/?"), after.size());
    return absolute_target{after.substr(0, slash), after.substr(slash)};
  }
  return std::nullopt;
}

// RFC 9112 3.2: an HTTP/1.1 request without exactly one Host header is answered 400 (a target
// in absolute form carries its own). HTTP/1.0 clients may omit it.
bool host_ok(const http::request<http::string_body>& msg) {
  if (msg.version() < 11 || split_absolute(msg.target()))
    return true;
  return msg.count(http::field::host) == 1;
}

// The host a request names: its absolute-form target's authority, else its Host header.
std::string_view named_host(const http::request<http::string_body>& msg) {
  if (const auto absolute = split_absolute(msg.target()))
    return absolute->host;
  return msg[http::field::host];
}

// RFC 9110 7.2: a Host with an invalid value is a 400. Its port, when it has one, must be 1 to
// 65535 in digits: anything else ("name:99999999999") would otherwise reach the feeds' links.
bool host_port_ok(std::string_view host) {
  std::string_view after_name;
  if (host.starts_with('[')) { // an IPv6 literal: its colons are not the port's
    const auto close = host.find(']');
    if (close == std::string_view::npos)
      return false;
    after_name = host.substr(close + 1);
  } else {
    after_name = host.substr(std::min(host.find(':'), host.size()));
  }
  if (after_name.empty())
    return true;
  const auto port = after_name.substr(1);
  if (after_name.front() != ':' || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const auto value = std::stoul(std::string(port));
  return value >= 1 && value <= 65535;
}

// A socket stand-in for read_requests(): hands out at most `chunk` bytes per read, then EOF.
class memory_stream {
 public:
  memory_stream(std::string_view bytes, std::size_t chunk)
      : rest_(bytes)
      , chunk_(std::max<std::size_t>(chunk, 1)) {}
  template <class Buffers> std::size_t read_some(const Buffers& buffers, error_code& ec) {
    if (rest_.empty()) {
      ec = net::error::eof;
      return 0;
    }
    ec = {};
    auto n = net::buffer_copy(buffers, net::buffer(rest_.data(), std::min(rest_.size(), chunk_)));
    rest_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view rest_;
  std::size_t chunk_;
};
} // namespace

request_reader::request_reader(const http_server_limits& limits)
    : limits_(limits) {
  parser_.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
  parser_.body_limit(limits.max_body_bytes);
}

beast::flat_buffer request_reader::make_buffer(const http_server_limits& limits) {
  return beast::flat_buffer(limits.max_header_bytes);
}

error_code request_reader::parse(beast::flat_buffer& buffer) {
  for (;;) {
    if (parser_.is_done())
      return {};
    if (buffer.size() == 0)
      return http::error::need_more;
    // Not eager: a call that starts in the headers stops where they end, so its bytes are all
    // header bytes; after them each call takes one chunk line, chunk or the trailers.
    const bool in_header = !parser_.is_header_done();
    error_code ec;
    const auto used = parser_.put(buffer.data(), ec);
    buffer.consume(used);
    (in_header ? header_bytes_ : body_bytes_) += used;
    if (header_bytes_ > limits_.max_header_bytes)
      return http::error::header_limit;
    if (body_bytes_ > limits_.max_body_bytes)
      return http::error::body_limit;
    if (ec)
      return ec; // need_more included
    if (used == 0 && !parser_.is_done())
      return http::error::need_more;
  }
}

beast::flat_buffer::mutable_buffers_type request_reader::prepare(beast::flat_buffer& buffer,
                                                                 error_code& ec) const {
  ec = {};
  const auto room = beast::read_size(buffer, max_read_bytes);
  if (room == 0) {
    ec = http::error::buffer_overflow;
    return buffer.prepare(0);
  }
  return buffer.prepare(room);
}

error_code request_reader::parse_eof() {
  if (!parser_.got_some())
    return http::error::end_of_stream;
  error_code ec;
  parser_.put_eof(ec);
  return ec;
}

unsigned status_for_read_error(error_code ec) {
  if (ec == http::error::end_of_stream) // closed between requests: nothing to answer
    return 0;
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
    return 431;
  if (ec == http::error::body_limit)
    return 413;
  if (ec.category() == make_error_code(http::error::bad_target).category() ||
      ec == http::error::partial_message)
    return 400;
  return 0;
}

http_request detail::to_request(http::request<http::string_body>& msg) {
  http_request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.headers.reserve(static_cast<std::size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& field : msg)
    req.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  req.body = std::move(msg.body());
  // RFC 9112 3.2.2: an absolute-form target's host replaces the Host header, and the rest is
  // the usual origin-form.
  if (const auto absolute = split_absolute(msg.target())) {
    std::string host(absolute->host);
    std::string origin(absolute->rest);
    if (origin.empty() || origin.front() == '?')
      origin.insert(0, "/");
    req.target = std::move(origin);
    std::erase_if(req.headers, [](const auto& h) { return iequals(h.first, "Host"); });
    req.headers.emplace_back("Host", std::move(host));
  }
  return req;
}

// RFC 9112's rules on a request's Host and framing that the parser leaves to the server, in
// one place. Transfer-Encoding (6.1, 6.3): a list whose last coding is not chunked leaves the
// body's length unknown (the parser reads no body, and the body's bytes would be taken for the
// next request: smuggling), so it is a 400 and the connection closes; in HTTP/1.0 it is faulty
// framing; chunked twice is malformed; other codings are not implemented here (501).
detail::refusal detail::check_request(const http::request<http::string_body>& msg) {
  if (!host_ok(msg))
    return {400, "Bad Request: HTTP/1.1 needs one Host header"};
  if (!host_port_ok(named_host(msg)))
    return {400, "Bad Request: the Host's port must be a number from 1 to 65535"};
  if (msg.count(http::field::transfer_encoding) == 0)
    return {};
  if (msg.version() < 11)
    return {400, "Bad Request: Transfer-Encoding in an HTTP/1.0 request"};
  std::vector<std::string_view> codings; // of every Transfer-Encoding line, in order
  const auto [first, last] = msg.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    std::string_view list = field->value();
    while (!list.empty()) {
      auto comma = list.find(',');
      auto coding = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
        coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
        coding.remove_suffix(1);
      if (!coding.empty())
        codings.push_back(coding);
    }
  }
  if (codings.empty() || !iequals(codings.back(), "chunked"))
    return {400, "Bad Request: Transfer-Encoding must end with chunked"};
  codings.pop_back();
  if (std::any_of(codings.begin(), codings.end(),
                  [](std::string_view c) { return iequals(c, "chunked"); }))
    return {400, "Bad Request: chunked applied more than once"};
  if (!codings.empty())
    return {501, "Not Implemented: transfer coding " + std::string(codings.front().substr(0, 64))};
  return {};
}

unsigned read_requests(std::string_view bytes, std::size_t chunk, const http_server_limits& limits,
                       const std::function<void(http_request)>& on_request) {
  memory_stream stream(bytes, chunk);
  auto buffer = request_reader::make_buffer(limits);
  for (;;) {
    request_reader reader(limits);
    error_code ec;
    while ((ec = reader.parse(buffer)) == http::error::need_more) { // the session's read loop
      auto space = reader.prepare(buffer, ec);
      if (ec)
        break;
      buffer.commit(stream.read_some(space, ec));
      if (ec == net::error::eof)
        ec = reader.parse_eof();
      if (ec)
        break;
    }
    if (ec)
      return status_for_read_error(ec);
    auto& msg = reader.parser().get();
    if (auto refused = detail::check_request(msg); refused.status != 0)
      return refused.status;
    const bool keep_alive = msg.keep_alive();
    on_request(detail::to_request(msg));
    if (!keep_alive)
      return 0;
  }
}

} // namespace newsdesk::server
