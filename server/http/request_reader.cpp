#include "server/http/request_reader.hpp"

#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

namespace newsdesk::server {

namespace beast = boost::beast;
namespace http = beast::http;
using error_code = boost::system::error_code;

namespace {
// The most one read asks for; the buffer's bound usually caps it first.
constexpr std::size_t max_read_bytes = 64 * 1024;
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

} // namespace newsdesk::server
