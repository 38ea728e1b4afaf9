#pragma once

// Internal to server/http, not for callers outside it. How a connection reads one request:
// Beast's parser, with the server's size limits applied to the request as a whole rather than to
// each read; then the checks on Host and framing the parser leaves to the server, and the
// conversion to the http_request the handler gets (request_reader.cpp).

#include "server/http/http_server.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>

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

namespace detail {

// A request refused for how it is framed or addressed: its status and text (status 0: none).
struct refusal {
  unsigned status = 0;
  std::string text;
};

// The rules of RFC 9112 on a whole request's Host and framing that the parser leaves to the
// server: status 0 when `msg` passes them, else 400 or 501 and the text to answer with. A refused
// request's connection is closed after the answer (what follows cannot be told from a body).
refusal check_request(const boost::beast::http::request<boost::beast::http::string_body>& msg);

// `msg` as the handler gets it (its body moved out): an absolute-form target ("GET
// http://host/news") becomes origin-form, its authority the one Host header.
http_request to_request(boost::beast::http::request<boost::beast::http::string_body>& msg);

} // namespace detail

} // namespace newsdesk::server
