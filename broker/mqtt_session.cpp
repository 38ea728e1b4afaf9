#include "broker/mqtt_session.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>

#include "broker/core.hpp"
#include "broker/frame.hpp"
#include "broker/mqtt_codec.hpp"
#include "broker/mqtt_router.hpp"
#include "broker/reactor.hpp"

namespace newsdesk::broker::detail {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
namespace reason = mqtt::reason;
namespace v3 = mqtt::v3_connack;

constexpr std::string_view topic_prefix = "/topic/";
/// Longest client id taken: ids are table keys kept while the session lives.
constexpr std::size_t max_client_id = 256;

bool is_expected_close(const error_code& ec) {
  return ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::broken_pipe ||
         ec == net::error::connection_aborted;
}

// Why a decoding error closes the connection, and what an MQTT 5 client is told.
std::pair<close_reason, std::uint8_t> verdict(mqtt::error e) {
  switch (e) {
  case mqtt::error::malformed_length:
    return {close_reason::mqtt_malformed_length, reason::malformed_packet};
  case mqtt::error::too_large:
    return {close_reason::mqtt_packet_too_large, reason::packet_too_large};
  case mqtt::error::bad_utf8:
    return {close_reason::mqtt_bad_utf8, reason::malformed_packet};
  case mqtt::error::wildcard_topic:
    return {close_reason::mqtt_bad_topic, reason::topic_name_invalid};
  case mqtt::error::protocol_error:
  case mqtt::error::unsupported_version:
    return {close_reason::mqtt_protocol_error, reason::protocol_error};
  case mqtt::error::malformed:
  case mqtt::error::none:
    break;
  }
  return {close_reason::mqtt_malformed, reason::malformed_packet};
}

struct will_data {
  std::string channel; // /topic/<will topic>
  std::string payload;
  std::uint8_t qos = 0;
  bool retain = false;
  /// What it counts against mqtt.max_will_bytes_per_address: its topic and payload.
  [[nodiscard]] std::size_t cost() const {
    return channel.size() - topic_prefix.size() + payload.size();
  }
};

class mqtt_session final : public mqtt_connection {
 public:
  mqtt_session(std::shared_ptr<core> c, int fd)
      : mqtt_connection(std::move(c), fd) {}

  void start() override;
  void flush() override;
  void resume() override {} // MQTT publishes only to /topic/ channels, which never pause
  void begin_drain() override;
  void close(close_reason why) override;
  std::optional<close_reason> read_overdue(steady::time_point now) const override;

 private:
  std::shared_ptr<mqtt_session> self() {
    return std::static_pointer_cast<mqtt_session>(shared_from_this());
  }

  // Read side
  void do_read() override;
  std::size_t consume(char* data, std::size_t size);
  void on_connect(const mqtt::header_result& h, std::string_view body);
  void on_publish(const mqtt::header_result& h, char* packet, std::string_view body);
  void on_subscribe(const mqtt::header_result& h, std::string_view body);
  void on_unsubscribe(const mqtt::header_result& h, std::string_view body);
  void on_puback(const mqtt::header_result& h, std::string_view body);
  void on_disconnect(const mqtt::header_result& h, std::string_view body);
  void publish_run();
  /// 0: allowed; else why not (reason::not_authorized), and whether it is a reserved topic.
  bool may_publish(std::string_view topic, bool& reserved);

  // Answers
  std::string& control() { return core_->mqtt_control_scratch(); }
  void send_control();
  void refuse(std::uint8_t v5_code, std::uint8_t v3_code, close_reason why);
  void fail(close_reason why, std::uint8_t v5_code);
  void finish(close_reason why);

  // Write side
  void do_write() override;
  void wait_write();

  void publish_will();
  void drop_will();

  // The flags first: they fill peer's tail padding (see there).
  bool connected_ = false; // CONNECT accepted
  bool draining_ = false;
  bool loopback_ = false;
  bool will_cancelled_ = false; // a DISCONNECT without "with will"
  std::uint8_t run_qos_ = 0;
  std::uint16_t keep_alive_ = 0; // seconds; 0: none
  close_reason done_reason_ = close_reason::done;

  std::string in_; // bytes of an incomplete packet
  // Until CONNECT: when the connection was accepted (first_frame_timeout); then the last read
  // (keep-alive).
  steady::time_point last_read_{};
  const mqtt_permissions* perms_ = nullptr;
  std::unique_ptr<will_data> will_;
};

void mqtt_session::start() {
  error_code ec;
  open_socket(ec);
  if (!ec)
    loopback_ = peer_is_loopback(fd_, ec);
  if (ec) {
    broker::detail::fail(ec, "mqtt socket options");
    return close(close_reason::io_error);
  }
  last_read_ = steady::now();
  do_read();
}

// ---------------------------------------------------------------------------------------------
// Read side

void mqtt_session::do_read() {
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
  add(c.ctx().ctr.bytes_in, n);
  active_ = true;
  if (identified_) // before CONNECT it keeps the time of accept (first_frame_timeout)
    last_read_ = steady::now();
  const std::size_t total = have + n;
  const std::size_t used = consume(buf, total);
  if (closed_)
    return;
  if (used == total) {
    if (in_.capacity() > 4096) // an idle connection keeps no large buffer
      std::string().swap(in_);
    else
      in_.clear();
  } else {
    in_.assign(buf + used, total - used);
  }
  if (done_ || draining_)
    return;
  read_again_or_wait(n == chunk);
}

// Handles every complete packet in data[0, size); returns how many bytes it used.
std::size_t mqtt_session::consume(char* data, std::size_t size) {
  const std::size_t max_packet = core_->cfg().mqtt.max_packet_bytes;
  control().clear();
  core_->run_scratch().clear();
  std::size_t pos = 0;
  while (!closed_ && !done_) {
    // Anything but CONNECT first is refused from its first byte, not after its body arrived.
    if (!connected_ && pos < size &&
        static_cast<unsigned char>(data[pos]) >> 4 !=
            static_cast<unsigned>(mqtt::packet_type::connect)) {
      fail(close_reason::mqtt_before_connect, reason::protocol_error);
      break;
    }
    const auto h = mqtt::try_decode_header({data + pos, size - pos}, max_packet);
    if (h.status == mqtt::header_status::need_more)
      break;
    if (h.status == mqtt::header_status::error) {
      publish_run();
      const auto [why, code] = verdict(h.err);
      fail(why, code);
      break;
    }
    char* packet = data + pos;
    const std::string_view body(packet + h.header_bytes, h.remaining);
    pos += h.size();
    if (!connected_) {
      if (h.type() != mqtt::packet_type::connect) {
        fail(close_reason::mqtt_before_connect, reason::protocol_error);
        break;
      }
      on_connect(h, body);
      continue;
    }
    if (h.type() == mqtt::packet_type::publish) {
      on_publish(h, packet, body);
      continue;
    }
    publish_run();
    if (closed_)
      break;
    switch (h.type()) {
    case mqtt::packet_type::subscribe:
      on_subscribe(h, body);
      break;
    case mqtt::packet_type::unsubscribe:
      on_unsubscribe(h, body);
      break;
    case mqtt::packet_type::puback:
      on_puback(h, body);
      break;
    case mqtt::packet_type::pingreq:
      if (h.flags() != 0 || h.remaining != 0)
        fail(close_reason::mqtt_malformed, reason::malformed_packet);
      else
        mqtt::append_pingresp(control());
      break;
    case mqtt::packet_type::disconnect:
      on_disconnect(h, body);
      break;
    default: // a second CONNECT, QoS 2 flow, AUTH, or packets only a server sends
      fail(close_reason::mqtt_protocol_error, reason::protocol_error);
      break;
    }
  }
  publish_run();
  if (closed_) {
    control().clear();
    return size;
  }
  send_control();
  if (done_) {
    if (out_.empty())
      close(done_reason_);
    return size;
  }
  return pos;
}

void mqtt_session::on_connect(const mqtt::header_result& h, std::string_view body) {
  core& c = *core_;
  const mqtt_config& mc = c.cfg().mqtt;
  mqtt_router& router = c.mqtt();
  mqtt::connect_packet cp;
  const mqtt::error e = mqtt::parse_connect(body, h.flags(), cp);
  version_ = cp.version == mqtt::v5 ? mqtt::v5 : mqtt::v311;
  if (e == mqtt::error::unsupported_version) {
    version_ = mqtt::v311; // answered in the oldest form every client reads
    return refuse(reason::unsupported_protocol_version, v3::unacceptable_protocol,
                  close_reason::mqtt_protocol_error);
  }
  if (e != mqtt::error::none) {
    const auto [why, code] = verdict(e);
    return fail(why, code);
  }
  c.identified(*this);

  if (cp.has_username) {
    perms_ = router.authenticate(cp.username, cp.password);
    if (!perms_)
      return refuse(reason::bad_user_name_or_password, v3::bad_user_name_or_password,
                    close_reason::auth_failed);
  } else if (mc.anonymous == mqtt_anonymous::always ||
             (mc.anonymous == mqtt_anonymous::loopback && loopback_)) {
    perms_ = &router.anonymous();
  } else {
    return refuse(reason::not_authorized, v3::not_authorized, close_reason::not_authorized);
  }

  std::string client_id(cp.client_id);
  std::string assigned;
  if (client_id.size() > max_client_id)
    return refuse(reason::client_id_not_valid, v3::identifier_rejected, close_reason::mqtt_refused);
  if (client_id.empty()) {
    if (version_ == mqtt::v311 && !cp.clean_start) // 3.1.1: a kept session needs a name
      return refuse(reason::client_id_not_valid, v3::identifier_rejected,
                    close_reason::mqtt_refused);
    client_id = assigned = router.assign_client_id();
  }

  if (cp.has_will) {
    bool reserved = false;
    if (topic_prefix.size() + cp.will.topic.size() > c.cfg().max_channel_name ||
        cp.will.payload.size() > c.cfg().max_frame_bytes || !may_publish(cp.will.topic, reserved))
      return refuse(reason::not_authorized, v3::not_authorized, close_reason::not_authorized);
    if (!c.charge_will(*this, cp.will.topic.size() + cp.will.payload.size()))
      return refuse(reason::quota_exceeded, v3::server_unavailable, close_reason::mqtt_will_budget);
    will_ = std::make_unique<will_data>();
    will_->channel = std::string(topic_prefix) + std::string(cp.will.topic);
    will_->payload = std::string(cp.will.payload);
    will_->qos = std::min<std::uint8_t>(cp.will.qos, 1);
    will_->retain = cp.will.retain;
  }

  const auto max_expiry = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(mc.max_session_expiry).count());
  std::uint32_t expiry = 0;
  if (version_ == mqtt::v5)
    expiry = std::min(cp.session_expiry, max_expiry);
  else if (!cp.clean_start)
    expiry = max_expiry; // 3.1.1 asks for "until it comes back"; kept this long at most
  const auto r = router.attach(*this, client_id, cp.clean_start, expiry, cp.receive_maximum);
  if (!r.state)
    return refuse(reason::quota_exceeded, v3::server_unavailable, close_reason::mqtt_refused);

  connected_ = true;
  last_read_ = steady::now();
  keep_alive_ = cp.keep_alive;
  client_max_packet_ = cp.maximum_packet_size;
  mqtt::connack_properties props;
  props.maximum_packet_size = static_cast<std::uint32_t>(mc.max_packet_bytes);
  props.session_expiry = expiry;
  props.send_session_expiry = version_ == mqtt::v5 && expiry != cp.session_expiry;
  props.assigned_client_id = assigned;
  mqtt::append_connack(control(), version_, r.session_present, reason::success, props);
  send_control(); // the CONNACK goes before anything the resumed session owes
  router.resume(*r.state);
}

bool mqtt_session::may_publish(std::string_view topic, bool& reserved) {
  std::string name(topic_prefix);
  name += topic;
  reserved = core_->is_reserved(name);
  return !reserved && perms_ && perms_->may_write(topic);
}

void mqtt_session::on_publish(const mqtt::header_result& h, char* packet, std::string_view body) {
  core& c = *core_;
  mqtt::publish_packet p;
  if (const mqtt::error e = mqtt::parse_publish(body, h.flags(), version_, p);
      e != mqtt::error::none) {
    publish_run();
    const auto [why, code] = verdict(e);
    return fail(why, code);
  }
  if (p.qos == 2) {
    publish_run();
    return fail(close_reason::mqtt_protocol_error, reason::qos_not_supported);
  }
  if (p.payload.size() > c.cfg().max_frame_bytes) {
    publish_run();
    return fail(close_reason::mqtt_packet_too_large, reason::packet_too_large);
  }
  if (topic_prefix.size() + p.topic.size() > c.cfg().max_channel_name) {
    publish_run();
    return fail(close_reason::mqtt_bad_topic, reason::topic_name_invalid);
  }
  auto& run = c.run_scratch();
  std::string& run_channel = c.run_channel_scratch();
  const bool continues = !run.empty() && p.qos == run_qos_ && !p.retain &&
                         std::string_view(run_channel).substr(topic_prefix.size()) == p.topic;
  if (!continues) {
    publish_run();
    bool reserved = false;
    if (!may_publish(p.topic, reserved)) {
      // MQTT 5 says no and goes on; 3.1.1 has no way to say it but closing.
      if (version_ != mqtt::v5)
        return fail(reserved ? close_reason::reserved_channel : close_reason::not_authorized,
                    reason::not_authorized);
      add(c.ctx().ctr.drop_not_authorized, 1);
      if (p.qos == 1)
        mqtt::append_puback(control(), version_, p.packet_id, reason::not_authorized);
      return;
    }
    run_channel.assign(topic_prefix);
    run_channel += p.topic;
    run_qos_ = p.qos;
  }
  if (p.retain)
    c.mqtt().retain(p.topic, p.payload, p.qos);
  // The broker's stored form is a 4-byte length before the data. The 4 bytes before this
  // payload belong to this packet (fixed header, topic, packet id: at least 5 bytes) and have
  // been read already, so the length goes there and the run needs no copy.
  const std::size_t at = h.header_bytes + p.payload_offset;
  char* stored = packet + at - frame_header_bytes;
  write_length(stored, static_cast<std::uint32_t>(p.payload.size()));
  run.push_back({stored, static_cast<std::uint32_t>(frame_header_bytes + p.payload.size()), 0});
  if (p.qos == 1)
    mqtt::append_puback(control(), version_, p.packet_id, reason::success);
  if (p.retain) // alone: a retained message ends its run
    publish_run();
}

void mqtt_session::publish_run() {
  auto& run = core_->run_scratch();
  if (run.empty() || closed_)
    return;
  core_->publish(core_->run_channel_scratch(), run, *this, run_qos_);
  run.clear();
}

void mqtt_session::on_subscribe(const mqtt::header_result& h, std::string_view body) {
  core& c = *core_;
  std::uint16_t id = 0;
  std::vector<mqtt::subscribe_entry> entries;
  if (const mqtt::error e = mqtt::parse_subscribe(body, h.flags(), version_,
                                                  c.cfg().mqtt.max_subscriptions, id, entries);
      e != mqtt::error::none) {
    const auto [why, code] = verdict(e);
    return fail(why, code);
  }
  mqtt_router& router = c.mqtt();
  std::vector<std::uint8_t> codes;
  std::vector<bool> send_retained;
  for (const auto& s : entries) {
    std::uint8_t code = 0;
    bool existed = false;
    if (!mqtt::valid_topic_filter(s.filter))
      code = reason::topic_filter_invalid;
    else if (s.filter.starts_with("$share/"))
      code = reason::shared_subscriptions_not_supported;
    else if (!perms_->may_read(s.filter))
      code = reason::not_authorized;
    else
      code = router.subscribe(*state_, s.filter, std::min<std::uint8_t>(s.qos, 1), s.no_local,
                              existed);
    send_retained.push_back(code < 0x80 &&
                            (s.retain_handling == 0 || (s.retain_handling == 1 && !existed)));
    codes.push_back(code >= 0x80 && version_ != mqtt::v5 ? 0x80 : code);
  }
  mqtt::append_suback(control(), version_, id, codes);
  send_control(); // SUBACK first, then the retained messages it made due
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (send_retained[i])
      router.send_retained(*state_, entries[i].filter, codes[i]);
}

void mqtt_session::on_unsubscribe(const mqtt::header_result& h, std::string_view body) {
  core& c = *core_;
  std::uint16_t id = 0;
  std::vector<std::string_view> filters;
  if (const mqtt::error e = mqtt::parse_unsubscribe(body, h.flags(), version_,
                                                    c.cfg().mqtt.max_subscriptions, id, filters);
      e != mqtt::error::none) {
    const auto [why, code] = verdict(e);
    return fail(why, code);
  }
  std::vector<std::uint8_t> codes;
  for (const auto f : filters)
    codes.push_back(c.mqtt().unsubscribe(*state_, f) ? reason::success
                                                     : reason::no_subscription_existed);
  mqtt::append_unsuback(control(), version_, id, codes);
}

void mqtt_session::on_puback(const mqtt::header_result& h, std::string_view body) {
  std::uint16_t id = 0;
  if (const mqtt::error e = mqtt::parse_puback(body, h.flags(), version_, id);
      e != mqtt::error::none) {
    const auto [why, code] = verdict(e);
    return fail(why, code);
  }
  core_->mqtt().acknowledged(*state_, id);
}

void mqtt_session::on_disconnect(const mqtt::header_result& h, std::string_view body) {
  std::uint8_t code = 0;
  if (const mqtt::error e = mqtt::parse_disconnect(body, h.flags(), version_, code);
      e != mqtt::error::none) {
    const auto [why, rc] = verdict(e);
    return fail(why, rc);
  }
  will_cancelled_ = code != reason::disconnect_with_will;
  finish(close_reason::done);
}

// ---------------------------------------------------------------------------------------------
// Answers

// Queues the control packets this read produced (CONNACK, SUBACK, PUBACKs, PINGRESP) as one
// slice: the scratch string is the core's, so an idle connection keeps none.
void mqtt_session::send_control() {
  std::string& ctl = control();
  if (ctl.empty() || closed_)
    return;
  block_ptr b = make_block(ctl.size());
  std::memcpy(b.get(), ctl.data(), ctl.size());
  enqueue(slice{std::move(b), 0, static_cast<std::uint32_t>(ctl.size()), 0});
  ctl.clear();
  core_->mark_flush(*this);
}

// A CONNECT refused: CONNACK with the reason, then closed once it is written.
void mqtt_session::refuse(std::uint8_t v5_code, std::uint8_t v3_code, close_reason why) {
  mqtt::append_connack(control(), version_, false, version_ == mqtt::v5 ? v5_code : v3_code, {});
  drop_will();
  finish(why);
}

// Stop reading, write what is queued (and the control packets of this read), then close.
void mqtt_session::finish(close_reason why) {
  done_ = true;
  done_reason_ = why;
}

// Closes at once. An MQTT 5 client is sent the reason if the socket takes 3 bytes now.
void mqtt_session::fail(close_reason why, std::uint8_t v5_code) {
  if (connected_ && version_ == mqtt::v5 && out_.empty()) {
    std::string d;
    mqtt::append_disconnect(d, v5_code);
    write_now(fd_, d.data(), d.size());
  }
  close(why);
}

std::optional<close_reason> mqtt_session::read_overdue(steady::time_point now) const {
  if (!identified_) {
    const auto first = core_->cfg().first_frame_timeout;
    if (first.count() > 0 && now - last_read_ > first)
      return close_reason::first_frame_timeout;
    return std::nullopt;
  }
  // MQTT 3.1.2.10: one and a half keep-alive periods without a packet.
  if (connected_ && keep_alive_ > 0 &&
      now - last_read_ > std::chrono::milliseconds(std::uint64_t{keep_alive_} * 1500))
    return close_reason::mqtt_keep_alive;
  // Keep-alive 0 asks for none; mqtt.idle_timeout bounds how long such a silent one stays.
  const auto idle = core_->cfg().mqtt.idle_timeout;
  if (connected_ && keep_alive_ == 0 && idle.count() > 0 && now - last_read_ > idle)
    return close_reason::mqtt_idle;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Write side (as the frame protocol's session)

void mqtt_session::flush() {
  if (!waiting_write_)
    do_write();
}

void mqtt_session::do_write() {
  core& c = *core_;
  for (int round = 0; round < 16; ++round) {
    if (out_.empty())
      break;
    auto& iov = c.iov_scratch();
    iov.clear();
    const std::size_t asked = gather(iov, core::max_iov);
    error_code ec;
    const std::size_t n = write_some(fd_, iov, ec);
    if (ec == net::error::would_block || ec == net::error::try_again)
      return wait_write();
    if (ec == net::error::timed_out)
      return close(close_reason::write_timeout);
    if (ec) {
      if (!is_expected_close(ec))
        broker::detail::fail(ec, "mqtt write");
      return close(close_reason::io_error);
    }
    sent(n);
    if (n < asked)
      return wait_write();
  }
  if (!out_.empty()) {
    net::post(c.strand(), [self = self()] {
      if (!self->closed_ && !self->waiting_write_)
        self->do_write();
    });
    return;
  }
  owed_dropped_ = 0;
  if (done_)
    close(done_reason_);
  else if (draining_)
    close(close_reason::shutdown);
}

void mqtt_session::wait_write() {
  waiting_write_ = true;
  if (stalled_since_ == steady::time_point{})
    stalled_since_ = steady::now();
  // The reactor says when the socket takes more (on_io).
}

// ---------------------------------------------------------------------------------------------
// Ending

void mqtt_session::begin_drain() {
  draining_ = true;
  if (out_.empty())
    close(close_reason::shutdown);
}

void mqtt_session::publish_will() {
  if (!will_ || will_cancelled_ || core_->shutting_down())
    return;
  const will_data& w = *will_;
  if (w.retain)
    core_->mqtt().retain(std::string_view(w.channel).substr(topic_prefix.size()), w.payload, w.qos);
  const std::size_t size = frame_header_bytes + w.payload.size();
  block_ptr b = make_block(size);
  write_length(b.get(), static_cast<std::uint32_t>(w.payload.size()));
  std::memcpy(b.get() + frame_header_bytes, w.payload.data(), w.payload.size());
  core_->publish_block(w.channel, b, size, w.qos);
}

void mqtt_session::drop_will() {
  if (will_)
    core_->release_will(*this, will_->cost());
  will_.reset();
}

void mqtt_session::close(close_reason why) {
  if (closed_)
    return;
  auto keep = shared_from_this(); // the tables below may hold the last owner
  closed_ = true;
  add(core_->ctx().ctr.disconnect(why), 1);
  std::string().swap(in_);
  close_socket(why == close_reason::done || why == close_reason::shutdown);
  // Taken over: the session is the new connection's, and so is the decision about the will.
  if (state_)
    publish_will();
  drop_will();
  core_->mqtt().detach(*this);
  core_->remove_peer(*this);
}

} // namespace

std::shared_ptr<peer> make_mqtt_session(const std::shared_ptr<core>& c, tcp::socket socket) {
  return std::make_shared<mqtt_session>(c, release_socket(socket));
}

} // namespace newsdesk::broker::detail
