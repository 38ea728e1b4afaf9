#include "server/render/http_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <openssl/ssl.h>

namespace newsdesk::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using clock_type = std::chrono::steady_clock;

std::string http_fetch_result::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return {};
}

struct http_client::impl {
  impl(net::io_context& ioc_, const tls_options& tls)
      : ioc(ioc_)
      , tls_ctx(ssl::context::tls_client) {
    tls_ctx.set_default_verify_paths();
    if (!tls.ca_file.empty())
      tls_ctx.load_verify_file(tls.ca_file);
    tls_ctx.set_verify_mode(tls.verify_peer ? ssl::verify_peer : ssl::verify_none);
    verify_peer = tls.verify_peer;
  }
  net::io_context& ioc;
  ssl::context tls_ctx;
  bool verify_peer = true;
};

namespace {

// Whether connecting to `a` stays on the public Internet: not loopback, private (RFC 1918,
// unique local), shared (100.64/10), link-local, unspecified, multicast or reserved.
bool is_public(const net::ip::address& a) {
  if (a.is_v6()) {
    const auto v6 = a.to_v6();
    if (v6.is_v4_mapped())
      return is_public(net::ip::make_address_v4(net::ip::v4_mapped, v6));
    const auto b = v6.to_bytes();
    const bool unique_local = (b[0] & 0xfe) == 0xfc;
    return !(v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_site_local() ||
             v6.is_multicast() || unique_local);
  }
  const auto b = a.to_v4().to_bytes();
  return !(b[0] == 0 || b[0] == 10 || b[0] == 127 || b[0] >= 224 ||
           (b[0] == 100 && (b[1] & 0xc0) == 64) || (b[0] == 169 && b[1] == 254) ||
           (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
           (b[0] == 192 && b[1] == 0 && b[2] == 0) || (b[0] == 198 && (b[1] & 0xfe) == 18));
}

struct target {
  bool https = false;
  std::string host;
  std::string port;
  std::string host_header;
  std::string path_and_query;
};

std::optional<target> split_url(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed)
    return std::nullopt;
  const auto& u = *parsed;
  target t;
  auto scheme = u.scheme_id();
  if (scheme == boost::urls::scheme::https)
    t.https = true;
  else if (scheme != boost::urls::scheme::http)
    return std::nullopt;
  // host_address() is the name or the IP literal without brackets, decoded.
  t.host = u.host_address();
  if (t.host.empty())
    return std::nullopt;
  t.port = u.has_port() ? std::string(u.port()) : (t.https ? "443" : "80");
  t.host_header = std::string(u.encoded_host_and_port());
  t.path_and_query = std::string(u.encoded_path());
  if (t.path_and_query.empty())
    t.path_and_query = "/";
  if (u.has_query())
    t.path_and_query += "?" + std::string(u.encoded_query());
  return t;
}

// One request from resolve to the last body byte. Everything runs on one strand, so the
// deadline timer and the I/O handlers never race.
template <class Stream> class fetch_op : public std::enable_shared_from_this<fetch_op<Stream>> {
 public:
  fetch_op(net::any_io_executor ex, Stream stream, target t, http_fetch_options opts,
           std::optional<http_client::post_body> payload,
           std::function<void(http_fetch_result)> done)
      : resolver_(ex)
      , stream_(std::move(stream))
      , timer_(ex)
      , progress_timer_(ex)
      , target_(std::move(t))
      , options_(std::move(opts))
      , payload_(std::move(payload))
      , done_(std::move(done))
      , started_(clock_type::now()) {}

  void run() {
    timer_.expires_after(options_.timeout);
    timer_.async_wait([self = this->shared_from_this()](error_code ec) {
      if (ec)
        return;
      self->timed_out_ = true;
      self->resolver_.cancel();
      error_code ignored;
      beast::get_lowest_layer(self->stream_).socket().close(ignored);
    });
    resolver_.async_resolve(
        target_.host, target_.port,
        beast::bind_front_handler(&fetch_op::on_resolve, this->shared_from_this()));
  }

 private:
  void on_resolve(error_code ec, tcp::resolver::results_type results) {
    if (ec)
      return fail(fetch_failure::resolve, ec, "cannot resolve " + target_.host);
    std::vector<tcp::endpoint> endpoints;
    std::string internal;
    for (const auto& entry : results) {
      if (!options_.public_addresses_only || is_public(entry.endpoint().address()))
        endpoints.push_back(entry.endpoint());
      else if (internal.empty())
        internal = entry.endpoint().address().to_string();
    }
    if (endpoints.empty()) {
      http_fetch_result result;
      result.failure = fetch_failure::refused_address;
      result.error = target_.host + " is " + internal +
                     ", an internal address: only a site whose own URL names an internal "
                     "address is fetched from one";
      return finish(std::move(result));
    }
    beast::get_lowest_layer(stream_).async_connect(
        endpoints, beast::bind_front_handler(&fetch_op::on_connect, this->shared_from_this()));
  }

  void on_connect(error_code ec, const tcp::endpoint&) {
    if (ec)
      return fail(fetch_failure::connect, ec, "");
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      do_write();
    } else {
      stream_.async_handshake(
          ssl::stream_base::client,
          beast::bind_front_handler(&fetch_op::on_handshake, this->shared_from_this()));
    }
  }

  void on_handshake(error_code ec) {
    if (ec)
      return fail(fetch_failure::tls, ec, "TLS handshake failed");
    do_write();
  }

  void do_write() {
    request_.version(11);
    request_.method(payload_ ? http::verb::post : http::verb::get);
    request_.target(target_.path_and_query);
    request_.set(http::field::host, target_.host_header);
    request_.set(http::field::user_agent, "newsdesk/0.1");
    request_.set(http::field::accept,
                 "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8");
    request_.set(http::field::connection, "close");
    for (const auto& [name, value] : options_.headers)
      request_.set(name, value);
    if (payload_) {
      request_.set(http::field::content_type, payload_->content_type);
      request_.body() = std::move(payload_->data);
      request_.prepare_payload();
    }
    http::async_write(stream_, request_,
                      beast::bind_front_handler(&fetch_op::on_write, this->shared_from_this()));
  }

  void on_write(error_code ec, std::size_t) {
    if (ec)
      return fail(fetch_failure::io, ec, "sending the request failed");
    parser_.header_limit(64 * 1024); // real sites send large Set-Cookie and CSP headers
    parser_.body_limit(options_.max_body_bytes);
    read_some();
  }

  // The answer read a piece at a time, so its pace can be watched (watch_progress).
  void read_some() {
    http::async_read_some(stream_, buffer_, parser_,
                          [self = this->shared_from_this()](error_code ec, std::size_t bytes) {
                            self->on_read_some(ec, bytes);
                          });
  }

  void on_read_some(error_code ec, std::size_t bytes) {
    if (!ec && !parser_.is_done()) {
      if (received_ == 0 && bytes > 0 && options_.progress_bytes > 0)
        watch_progress(); // the floor applies from the first byte
      received_ += bytes;
      return read_some();
    }
    on_read(ec);
  }

  // Every progress_window: fewer than progress_bytes since the last look cuts the connection.
  void watch_progress() {
    progress_timer_.expires_after(options_.progress_window);
    progress_timer_.async_wait([self = this->shared_from_this(), seen = received_](error_code ec) {
      if (ec || self->parser_.is_done())
        return;
      if (self->received_ - seen >= self->options_.progress_bytes)
        return self->watch_progress();
      self->too_slow_ = self->received_ - seen;
      error_code ignored;
      beast::get_lowest_layer(self->stream_).socket().close(ignored);
    });
  }

  void on_read(error_code ec) {
    if (too_slow_) {
      http_fetch_result result;
      result.failure = fetch_failure::too_slow;
      result.error = "the answer came too slowly: " + std::to_string(*too_slow_) + " bytes in " +
                     std::to_string(options_.progress_window.count()) + " ms (at least " +
                     std::to_string(options_.progress_bytes) + " needed)";
      return finish(std::move(result));
    }
    if (ec == http::error::body_limit)
      return fail(fetch_failure::too_large, ec,
                  "response larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    if (ec && ec.category() == make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream)
      return fail(fetch_failure::protocol, ec, "malformed HTTP response");
    if (ec)
      return fail(fetch_failure::io, ec, "reading the response failed");
    auto& msg = parser_.get();
    http_fetch_result result;
    result.status = msg.result_int();
    for (const auto& field : msg)
      result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    result.body = std::move(msg.body());
    finish(std::move(result));
  }

  void fail(fetch_failure kind, error_code ec, std::string what) {
    http_fetch_result result;
    if (timed_out_) {
      result.failure = fetch_failure::timeout;
      result.error = "no answer within " + std::to_string(options_.timeout.count()) + " ms";
    } else {
      result.failure = kind;
      result.error = what.empty() ? ec.message() : what + " (" + ec.message() + ")";
    }
    if (parser_.is_header_done()) // e.g. too_large: the server answered, with a body past the limit
      result.status = parser_.get().result_int();
    finish(std::move(result));
  }

  void finish(http_fetch_result result) {
    timer_.cancel();
    progress_timer_.cancel();
    error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    result.elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started_);
    auto done = std::move(done_);
    done(std::move(result));
  }

  tcp::resolver resolver_;
  Stream stream_;
  net::steady_timer timer_;
  net::steady_timer progress_timer_;
  std::size_t received_ = 0;            // bytes of the answer so far
  std::optional<std::size_t> too_slow_; // set when watch_progress cut it: bytes in the window
  target target_;
  http_fetch_options options_;
  std::optional<http_client::post_body> payload_;
  std::function<void(http_fetch_result)> done_;
  clock_type::time_point started_;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response_parser<http::string_body> parser_;
};

} // namespace

bool names_internal_address(std::string_view url) {
  auto t = split_url(std::string(url));
  if (!t)
    return false;
  error_code ec;
  auto address = net::ip::make_address(t->host, ec);
  return !ec && !is_public(address);
}

http_client::http_client(net::io_context& ioc, const tls_options& tls)
    : impl_(std::make_unique<impl>(ioc, tls)) {}

http_client::~http_client() = default;

void http_client::get(const std::string& url, http_fetch_options options,
                      std::function<void(http_fetch_result)> done) {
  start(url, std::nullopt, std::move(options), std::move(done));
}

void http_client::post(const std::string& url, std::string content_type, std::string body,
                       http_fetch_options options, std::function<void(http_fetch_result)> done) {
  start(url, post_body{std::move(content_type), std::move(body)}, std::move(options),
        std::move(done));
}

void http_client::start(const std::string& url, std::optional<post_body> payload,
                        http_fetch_options options, std::function<void(http_fetch_result)> done) {
  auto t = split_url(url);
  auto ex = net::make_strand(impl_->ioc);
  if (!t) {
    net::post(ex, [done = std::move(done), url] {
      http_fetch_result result;
      result.failure = fetch_failure::bad_url;
      result.error = "not an http(s) URL: " + url;
      done(std::move(result));
    });
    return;
  }
  if (!t->https) {
    auto op = std::make_shared<fetch_op<beast::tcp_stream>>(ex, beast::tcp_stream(ex),
                                                            std::move(*t), std::move(options),
                                                            std::move(payload), std::move(done));
    net::dispatch(ex, [op] { op->run(); });
    return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(ex, impl_->tls_ctx);
  // SNI, and the name the certificate must carry.
  // SSL_set_tlsext_host_name is a macro with a C cast; this is the call it stands for.
  if (!SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                const_cast<char*>(t->host.c_str()))) {
    net::post(ex, [done = std::move(done)] {
      http_fetch_result result;
      result.failure = fetch_failure::tls;
      result.error = "cannot set TLS server name";
      done(std::move(result));
    });
    return;
  }
  if (impl_->verify_peer)
    stream.set_verify_callback(ssl::host_name_verification(t->host));
  auto op = std::make_shared<fetch_op<beast::ssl_stream<beast::tcp_stream>>>(
      ex, std::move(stream), std::move(*t), std::move(options), std::move(payload),
      std::move(done));
  net::dispatch(ex, [op] { op->run(); });
}

} // namespace newsdesk::server
