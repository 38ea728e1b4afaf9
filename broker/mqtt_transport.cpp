// MQTT over TCP (mqtt_session.hpp): the session's socket in the core's reactor, read into the
// core's shared buffer and written with gathered non-blocking writes, as the frame protocol's.
#include <cstring>

#include "broker/core.hpp"
#include "broker/mqtt_session.hpp"
#include "broker/reactor.hpp"

namespace newsdesk::broker::detail {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

class mqtt_tcp_session final : public mqtt_session {
 public:
  using mqtt_session::mqtt_session;

  void start() override;
  void do_read() override;
  void do_write() override;

 private:
  void close_transport(bool graceful) override { close_socket(graceful); }
};

void mqtt_tcp_session::start() {
  error_code ec;
  open_socket(ec);
  bool loopback = false;
  if (!ec)
    loopback = peer_is_loopback(fd_, ec);
  if (ec) {
    broker::detail::fail(ec, "mqtt socket options");
    return close(close_reason::io_error);
  }
  opened(loopback);
  do_read();
}

void mqtt_tcp_session::do_read() {
  if (closed_ || done_ || draining_)
    return;
  core& c = *core_;
  const std::size_t chunk = c.cfg().read_chunk_bytes;
  char* buf = c.read_buffer();
  const std::size_t have = in_.size();
  std::memcpy(buf, in_.data(), have);
  error_code ec;
  const std::size_t n = read_some(fd_, buf + have, chunk, ec);
  if (ec == net::error::would_block || ec == net::error::try_again) {
    waiting_read_ = true; // the reactor says when more arrives
    return;
  }
  if (ec == net::error::timed_out)
    return close(close_reason::write_timeout);
  if (ec) {
    if (!is_expected_close(ec))
      broker::detail::fail(ec, "mqtt read");
    return close(ec == net::error::eof || ec == net::error::connection_reset
                     ? (in_.empty() ? close_reason::client_closed : close_reason::truncated_frame)
                     : close_reason::io_error);
  }
  if (received(buf, have, n))
    read_again_or_wait(n == chunk);
}

void mqtt_tcp_session::do_write() {
  write_to_socket("mqtt write");
}

} // namespace

std::shared_ptr<peer> make_mqtt_session(const std::shared_ptr<core>& c, tcp::socket socket) {
  return std::make_shared<mqtt_tcp_session>(c, release_socket(socket));
}

} // namespace newsdesk::broker::detail
