#pragma once

// How a connection reads one request: Beast's parser, with the server's size limits applied to
// the request as a whole rather than to each read.

#include "server/http/http_server.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>

namespace newsdesk::server {

// Feeds one request's bytes to a parser under `http_server_limits`:
// - the request line and headers together stay within max_header_bytes, however many reads
//   they arrive in (Beast's own header limit applies to each call's unparsed bytes only, so
//   20,000 short header lines arriving a few at a time would pass it);
// - the body as sent (chunk data, chunk-size lines and their extensions, the trailers) stays
//   within max_body_bytes (Beast's body limit counts chunk data only);
// - the buffer never holds more than max_header_bytes of unparsed bytes, so no single header
//   line, chunk line or trailer block may be longer (the trailers are parsed only once whole:
//   without this bound they grow the buffer without limit).
// Past a limit, parse() or prepare() returns http::error::header_limit (431),
// http::error::buffer_overflow (431) or http::error::body_limit (413); status_for_read_error()
// maps them. One reader per request; not thread-safe (a connection's own thread only).
class request_reader {
 public:
  using parser_type = boost::beast::http::request_parser<boost::beast::http::string_body>;

  explicit request_reader(const http_server_limits& limits);

  // The connection's buffer, bounded as above; it carries pipelined bytes from one request to
  // the next.
  static boost::beast::flat_buffer make_buffer(const http_server_limits& limits);

  // Parses what `buffer` holds, consuming what the parser used. Returns {} once the request is
  // whole, http::error::need_more when it needs more bytes, or the error that refuses it.
  boost::system::error_code parse(boost::beast::flat_buffer& buffer);
  // Space in `buffer` for the next read, or http::error::buffer_overflow in `ec` when the
  // buffer already holds max_header_bytes that the parser cannot use yet.
  boost::beast::flat_buffer::mutable_buffers_type prepare(boost::beast::flat_buffer& buffer,
                                                          boost::system::error_code& ec) const;
  // The client closed its side: http::error::end_of_stream before any byte of a request (a
  // close between requests), else the parser's verdict (partial_message for a cut request).
  boost::system::error_code parse_eof();

  parser_type& parser() { return parser_; }

 private:
  const http_server_limits& limits_;
  parser_type parser_;
  std::size_t header_bytes_ = 0; // parsed so far: request line and headers
  std::size_t body_bytes_ = 0;   // parsed so far after the headers, as sent
};

// 431, 413 or 400 for a request that must be refused; 0 for anything else.
unsigned status_for_read_error(boost::system::error_code ec);

} // namespace newsdesk::server
