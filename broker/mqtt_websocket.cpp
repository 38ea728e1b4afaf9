// MQTT over a WebSocket (mqtt_session.hpp, websocket.hpp): Beast's websocket stream on the
// broker's strand carries the session's bytes, which need not line up with messages.
#include <cstring>

#include <boost/asio/post.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/websocket.hpp>

#include "broker/core.hpp"
#include "broker/mqtt_session.hpp"
#include "broker/reactor.hpp"
#include "broker/websocket.hpp"

namespace newsdesk::broker {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using boost::system::error_code;

/// The subprotocol MQTT clients offer (MQTT 5, 6.0; 3.1.1, 6.0).
constexpr std::string_view subprotocol = "mqtt";

http::request<http::empty_body> to_beast(const websocket_request& req) {
  http::request<http::empty_body> r;
  r.method_string(req.method);
  r.target(req.target);
  r.version(11);
  for (const auto& [name, value] : req.headers)
    r.insert(name, value);
  return r;
}

// Whether the Sec-WebSocket-Protocol lines offer `mqtt`.
bool offers_mqtt(const http::request<http::empty_body>& r) {
  const auto [first, last] = r.equal_range(http::field::sec_websocket_protocol);
  for (auto field = first; field != last; ++field) {
    std::string_view list = field->value();
    while (!list.empty()) {
      const auto comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
        item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
        item.remove_suffix(1);
      if (item == subprotocol)
        return true;
    }
  }
  return false;
}

} // namespace

std::optional<websocket_refusal> check_websocket_request(const websocket_request& req) {
  const auto r = to_beast(req);
  if (!websocket::is_upgrade(r))
    return websocket_refusal{426, "Upgrade Required: MQTT over WebSocket (subprotocol mqtt)"};
  if (r[http::field::sec_websocket_key].empty() || r[http::field::sec_websocket_version] != "13")
    return websocket_refusal{400, "Bad Request: a WebSocket upgrade needs a key and version 13"};
  if (!offers_mqtt(r))
    return websocket_refusal{400, "Bad Request: MQTT over WebSocket needs the subprotocol mqtt"};
  return std::nullopt;
}

namespace detail {

namespace {

// A WebSocket also ends with its closing handshake.
bool ws_expected_close(const error_code& ec) {
  return ec == websocket::error::closed || is_expected_close(ec);
}

class mqtt_ws_session final : public mqtt_session {
 public:
  mqtt_ws_session(std::shared_ptr<core> c, tcp::socket socket, websocket_request req)
      : mqtt_session(std::move(c), -1)
      , ws_(std::move(socket))
      , request_(std::make_unique<websocket_request>(std::move(req))) {}

  void start() override;
  void do_read() override;
  void do_write() override;

 private:
  void close_transport(bool graceful) override;
  void on_accept(const error_code& ec);
  void on_read(const error_code& ec, std::size_t n);
  void on_write(const error_code& ec, std::size_t n);
  void failed(const error_code& ec, const char* step);

  /// Bytes of message data per read: a browser's packets are small, and each open WebSocket
  /// holds this buffer.
  static constexpr std::size_t chunk = 16 * 1024;

  websocket::stream<tcp::socket> ws_;
  std::unique_ptr<websocket_request> request_; // until answered
  std::unique_ptr<char[]> buffer_;             // once answered
  std::vector<net::const_buffer> iov_;         // of the write under way
  bool accepted_ = false;
  bool reading_ = false;
  bool writing_ = false;
};

void mqtt_ws_session::start() {
  error_code ec;
  const int fd = ws_.next_layer().native_handle();
  prepare_socket(fd, core_->cfg(), ec);
  const bool loopback = !ec && peer_is_loopback(fd, ec);
  registered_ = shared_from_this(); // owned while the socket is open, as in the reactor
  if (ec) {
    broker::detail::fail(ec, "mqtt websocket options");
    return close(close_reason::io_error);
  }
  opened(loopback); // first_frame_timeout also bounds the handshake
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.set(http::field::server, "newsdesk");
    res.set(http::field::sec_websocket_protocol, subprotocol);
  }));
  ws_.read_message_max(0); // messages are only a carrier: MQTT's own limits bound packets
  ws_.auto_fragment(false);
  ws_.binary(true);
  ws_.async_accept(to_beast(*request_),
                   [self = std::static_pointer_cast<mqtt_ws_session>(shared_from_this())](
                       const error_code& e) { self->on_accept(e); });
}

void mqtt_ws_session::on_accept(const error_code& ec) {
  request_.reset();
  if (closed_)
    return;
  if (ec)
    return failed(ec, "mqtt websocket handshake");
  accepted_ = true;
  buffer_ = std::make_unique_for_overwrite<char[]>(chunk);
  do_read();
  do_write(); // nothing is queued before CONNECT, but a drain may have begun
}

void mqtt_ws_session::do_read() {
  if (closed_ || done_ || draining_ || reading_ || !accepted_)
    return;
  reading_ = true;
  ws_.async_read_some(net::buffer(buffer_.get(), std::min(chunk, core_->cfg().read_chunk_bytes)),
                      [self = std::static_pointer_cast<mqtt_ws_session>(shared_from_this())](
                          const error_code& ec, std::size_t n) { self->on_read(ec, n); });
}

void mqtt_ws_session::on_read(const error_code& ec, std::size_t n) {
  reading_ = false;
  if (closed_)
    return;
  if (ec)
    return failed(ec, "mqtt websocket read");
  if (ws_.got_text()) // MQTT travels in binary messages only (MQTT 5, 6.0)
    return end(close_reason::mqtt_protocol_error, mqtt::reason::protocol_error);
  char* buf = core_->read_buffer();
  const std::size_t have = in_.size();
  std::memcpy(buf, in_.data(), have);
  std::memcpy(buf + have, buffer_.get(), n);
  if (received(buf, have, n))
    do_read();
}

void mqtt_ws_session::do_write() {
  if (closed_ || writing_ || !accepted_)
    return;
  if (out_.empty())
    return written_all();
  iov_.clear();
  gather(iov_, core::max_iov);
  writing_ = true;
  if (stalled_since_ == steady::time_point{})
    stalled_since_ = steady::now(); // write_deadline bounds each message
  ws_.async_write(iov_, [self = std::static_pointer_cast<mqtt_ws_session>(shared_from_this())](
                            const error_code& ec, std::size_t n) { self->on_write(ec, n); });
}

void mqtt_ws_session::on_write(const error_code& ec, std::size_t n) {
  writing_ = false;
  if (closed_)
    return;
  if (ec)
    return failed(ec, "mqtt websocket write");
  sent(n);
  do_write();
}

void mqtt_ws_session::failed(const error_code& ec, const char* step) {
  if (!ws_expected_close(ec))
    broker::detail::fail(ec, step);
  close(ws_expected_close(ec)
            ? (in_.empty() ? close_reason::client_closed : close_reason::truncated_frame)
            : close_reason::io_error);
}

void mqtt_ws_session::close_transport(bool graceful) {
  tcp::socket& socket = ws_.next_layer();
  error_code ignored;
  if (graceful && accepted_ && !writing_) {
    // A close frame (1000, normal closure) between messages, where no write is under way, so a
    // browser sees a clean end; then the TCP close. The session is leaving the tables now, so
    // it waits for no answer.
    static constexpr char close_frame[] = {'\x88', '\x02', '\x03', '\xe8'};
    write_now(socket.native_handle(), close_frame, sizeof close_frame);
  }
  if (graceful)
    socket.shutdown(tcp::socket::shutdown_send, ignored);
  socket.close(ignored); // pending operations end with operation_aborted
  close_socket(false);   // the reference to itself goes after this step
}

} // namespace

std::shared_ptr<peer> make_mqtt_websocket_session(const std::shared_ptr<core>& c,
                                                  tcp::socket socket, websocket_request req) {
  return std::make_shared<mqtt_ws_session>(c, std::move(socket), std::move(req));
}

} // namespace detail

} // namespace newsdesk::broker
