// The MQTT protocol of a connection (mqtt_session.hpp); its transports are in
// mqtt_transport.cpp.
#include "broker/mqtt_session.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "broker/core.hpp"
#include "broker/frame.hpp"
#include "broker/mqtt_codec.hpp"
#include "broker/mqtt_router.hpp"

namespace newsdesk::broker::detail {

namespace {

namespace reason = mqtt::reason;
namespace v3 = mqtt::v3_connack;

constexpr std::string_view topic_prefix = "/topic/";
/// Longest client id taken: ids are table keys kept while the session lives.
constexpr std::size_t max_client_id = 256;

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

std::uint32_t seconds_of(std::chrono::milliseconds d) {
  return static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

} // namespace

void mqtt_session::opened(bool loopback) {
  loopback_ = loopback;
  last_read_ = steady::now();
}

// ---------------------------------------------------------------------------------------------
// Read side

bool mqtt_session::received(char* buf, std::size_t have, std::size_t n) {
  add(core_->ctx().ctr.bytes_in, n);
  active_ = true;
  if (identified_) // before CONNECT it keeps the time of accept (first_frame_timeout)
    last_read_ = steady::now();
  const std::size_t total = have + n;
  const std::size_t used = consume(buf, total);
  if (closed_)
    return false;
  if (used == total) {
    if (in_.capacity() > 4096) // an idle connection keeps no large buffer
      std::string().swap(in_);
    else
      in_.clear();
  } else {
    in_.assign(buf + used, total - used);
  }
  return !done_ && !draining_;
}

// Handles every complete packet in data[0, size); returns how many bytes it used.
std::size_t mqtt_session::consume(char* data, std::size_t size) {
  const std::size_t max_packet = core_->cfg().mqtt.max_packet_bytes;
  control().clear();
  core_->run_scratch().clear();
  consuming_ = true;
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
    pos += h.size();
    dispatch(h, packet, std::string_view(packet + h.header_bytes, h.remaining));
  }
  publish_run();
  consuming_ = false;
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

void mqtt_session::dispatch(const mqtt::header_result& h, char* packet, std::string_view body) {
  if (!connected_) {
    if (h.type() != mqtt::packet_type::connect)
      return fail(close_reason::mqtt_before_connect, reason::protocol_error);
    return on_connect(h, body);
  }
  if (h.type() == mqtt::packet_type::publish)
    return on_publish(h, packet, body);
  publish_run();
  if (closed_)
    return;
  switch (h.type()) {
  case mqtt::packet_type::subscribe:
    return on_subscribe(h, body);
  case mqtt::packet_type::unsubscribe:
    return on_unsubscribe(h, body);
  case mqtt::packet_type::puback:
  case mqtt::packet_type::pubrec:
  case mqtt::packet_type::pubcomp:
    return on_ack(h, body);
  case mqtt::packet_type::pubrel:
    return on_pubrel(h, body);
  case mqtt::packet_type::pingreq:
    if (h.flags() != 0 || h.remaining != 0)
      return fail(close_reason::mqtt_malformed, reason::malformed_packet);
    return mqtt::append_pingresp(control());
  case mqtt::packet_type::disconnect:
    return on_disconnect(h, body);
  default: // a second CONNECT, AUTH, or packets only a server sends
    return fail(close_reason::mqtt_protocol_error, reason::protocol_error);
  }
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
  if (!take_will(cp))
    return;

  const std::uint32_t max_expiry = seconds_of(mc.max_session_expiry);
  std::uint32_t expiry = 0;
  if (version_ == mqtt::v5)
    expiry = std::min(cp.session_expiry, max_expiry);
  else if (!cp.clean_start)
    expiry = max_expiry; // 3.1.1 asks for "until it comes back"; kept this long at most
  no_expiry_asked_ = version_ == mqtt::v5 && cp.session_expiry == 0;
  const auto r = router.attach(*this, client_id, cp.clean_start, expiry, cp.receive_maximum);
  if (!r.state)
    return refuse(reason::quota_exceeded, v3::server_unavailable, close_reason::mqtt_refused);

  connected_ = true;
  last_read_ = steady::now();
  keep_alive_ = cp.keep_alive;
  client_max_packet_ = cp.maximum_packet_size;
  mqtt::connack_properties props;
  props.maximum_packet_size = static_cast<std::uint32_t>(mc.max_packet_bytes);
  props.receive_maximum = static_cast<std::uint16_t>(mc.receive_maximum);
  props.session_expiry = expiry;
  props.send_session_expiry = version_ == mqtt::v5 && expiry != cp.session_expiry;
  props.assigned_client_id = assigned;
  mqtt::append_connack(control(), version_, r.session_present, reason::success, props);
  send_control(); // the CONNACK goes before anything the resumed session owes
  router.resume(*r.state);
}

// Keeps the CONNECT's will, if it has one: false (refused, answered) when the client may not
// publish there or the will budget of its address, or of all, is spent.
bool mqtt_session::take_will(const mqtt::connect_packet& cp) {
  if (!cp.has_will)
    return true;
  core& c = *core_;
  bool reserved = false;
  if (topic_prefix.size() + cp.will.topic.size() > c.cfg().max_channel_name ||
      cp.will.payload.size() > c.cfg().max_frame_bytes || !may_publish(cp.will.topic, reserved)) {
    refuse(reason::not_authorized, v3::not_authorized, close_reason::not_authorized);
    return false;
  }
  auto w = std::make_unique<mqtt_will>();
  w->channel = std::string(topic_prefix) + std::string(cp.will.topic);
  w->payload = std::string(cp.will.payload);
  w->qos = cp.will.qos;
  w->retain = cp.will.retain;
  if (version_ == mqtt::v5) {
    // The expiry counts from when the will is published (core::publish_will), not from now.
    w->extras = make_extras({cp.will.props.list, false, 0});
    w->has_expiry = cp.will.props.has_expiry;
    w->expiry_s = cp.will.props.expiry;
    w->delay_s = cp.will.delay;
  }
  w->bytes = w->channel.size() + w->payload.size() + (w->extras ? w->extras->properties.size() : 0);
  if (!c.charge_will(*this, w->bytes)) {
    refuse(reason::quota_exceeded, v3::server_unavailable, close_reason::mqtt_will_budget);
    return false;
  }
  w->address = address_;
  will_ = std::move(w);
  return true;
}

bool mqtt_session::may_publish(std::string_view topic, bool& reserved) {
  std::string name(topic_prefix);
  name += topic;
  // $SYS/ is the broker's own (sys_topics.hpp), whatever the settings say.
  reserved = core_->is_reserved(name) || topic.starts_with("$SYS/") || topic == "$SYS";
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
  if (p.has_subscription_id) { // only servers send one (MQTT 5, 3.3.4)
    publish_run();
    return fail(close_reason::mqtt_protocol_error, reason::protocol_error);
  }
  if (p.payload.size() > c.cfg().max_frame_bytes) {
    publish_run();
    return fail(close_reason::mqtt_packet_too_large, reason::packet_too_large);
  }
  if (topic_prefix.size() + p.topic.size() > c.cfg().max_channel_name) {
    publish_run();
    return fail(close_reason::mqtt_bad_topic, reason::topic_name_invalid);
  }
  extras_ptr extras = p.props.list.empty() ? nullptr : make_extras(p.props);
  auto& run = c.run_scratch();
  std::string& run_channel = c.run_channel_scratch();
  const bool continues = !run.empty() && p.qos == run_qos_ && !p.retain && !extras &&
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
      if (p.qos > 0)
        mqtt::append_ack(control(),
                         p.qos == 1 ? mqtt::packet_type::puback : mqtt::packet_type::pubrec,
                         version_, p.packet_id, reason::not_authorized);
      return;
    }
    run_channel.assign(topic_prefix);
    run_channel += p.topic;
    run_qos_ = p.qos;
  }
  if (p.qos == 2) {
    // Delivered when it arrives; its id is kept until PUBREL, so a resent one is not.
    switch (c.mqtt().receive_qos2(*state_, p.packet_id)) {
    case mqtt_router::qos2_receipt::over_limit:
      // Closed before this one is acknowledged (its client still owns it), after the answers
      // to those before it.
      publish_run();
      if (version_ != mqtt::v5)
        return finish(close_reason::mqtt_protocol_error);
      return fail(close_reason::mqtt_protocol_error, reason::receive_maximum_exceeded);
    case mqtt_router::qos2_receipt::duplicate:
      return mqtt::append_ack(control(), mqtt::packet_type::pubrec, version_, p.packet_id,
                              reason::success);
    case mqtt_router::qos2_receipt::fresh:
      break;
    }
  }
  if (p.retain)
    c.mqtt().retain(p.topic, p.payload, p.qos, extras);
  // The broker's stored form is a 4-byte length before the data. The 4 bytes before this
  // payload belong to this packet (fixed header, topic, packet id: at least 5 bytes) and have
  // been read already, so the length goes there and the run needs no copy.
  const std::size_t at = h.header_bytes + p.payload_offset;
  char* stored = packet + at - frame_header_bytes;
  write_length(stored, static_cast<std::uint32_t>(p.payload.size()));
  run.push_back({stored, static_cast<std::uint32_t>(frame_header_bytes + p.payload.size()), 0});
  if (p.qos > 0)
    mqtt::append_ack(control(), p.qos == 1 ? mqtt::packet_type::puback : mqtt::packet_type::pubrec,
                     version_, p.packet_id, reason::success);
  if (p.retain || extras) { // alone: a retained message, or one with properties, ends its run
    run_retain_ = p.retain;
    run_extras_ = std::move(extras);
    publish_run();
  }
}

void mqtt_session::publish_run() {
  auto& run = core_->run_scratch();
  if (!run.empty() && !closed_)
    core_->publish(core_->run_channel_scratch(), run, *this,
                   {run_qos_, run_retain_, std::move(run_extras_)});
  run.clear();
  run_retain_ = false;
  run_extras_.reset();
}

void mqtt_session::on_subscribe(const mqtt::header_result& h, std::string_view body) {
  core& c = *core_;
  std::uint16_t id = 0;
  std::uint32_t subscription_id = 0;
  std::vector<mqtt::subscribe_entry> entries;
  if (const mqtt::error e = mqtt::parse_subscribe(
          body, h.flags(), version_, c.cfg().mqtt.max_subscriptions, id, entries, &subscription_id);
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
    const share_name shared = split_share(s.filter);
    if (!shared.filter.empty() && s.no_local) // MQTT 5, 3.8.3.1
      return fail(close_reason::mqtt_protocol_error, reason::protocol_error);
    if (!mqtt::valid_topic_filter(s.filter) ||
        (s.filter.starts_with("$share/") && shared.filter.empty()))
      code = reason::topic_filter_invalid;
    else if (!perms_->may_read(shared.filter.empty() ? s.filter : shared.filter))
      code = reason::not_authorized;
    else
      code = router.subscribe(*state_, s.filter,
                              {s.qos, s.no_local, s.retain_as_published, subscription_id}, existed);
    // Retained messages are not sent for shared subscriptions (MQTT 5, 4.8.2).
    send_retained.push_back(code < 0x80 && shared.filter.empty() &&
                            (s.retain_handling == 0 || (s.retain_handling == 1 && !existed)));
    codes.push_back(code >= 0x80 && version_ != mqtt::v5 ? 0x80 : code);
  }
  mqtt::append_suback(control(), version_, id, codes);
  send_control(); // SUBACK first, then the retained messages it made due
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (send_retained[i])
      router.send_retained(*state_, entries[i].filter, codes[i], subscription_id);
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

// PUBACK, PUBREC or PUBCOMP for a message the broker sent.
void mqtt_session::on_ack(const mqtt::header_result& h, std::string_view body) {
  std::uint16_t id = 0;
  std::uint8_t code = 0;
  if (const mqtt::error e = mqtt::parse_ack(body, h.flags(), 0, version_, id, code);
      e != mqtt::error::none) {
    const auto [why, rc] = verdict(e);
    return fail(why, rc);
  }
  core_->mqtt().acknowledged(*state_, h.type(), id, code, control());
}

// PUBREL for a QoS 2 message the client sent: delivered already; PUBCOMP ends it.
void mqtt_session::on_pubrel(const mqtt::header_result& h, std::string_view body) {
  std::uint16_t id = 0;
  std::uint8_t code = 0;
  if (const mqtt::error e = mqtt::parse_ack(body, h.flags(), 0x02, version_, id, code);
      e != mqtt::error::none) {
    const auto [why, rc] = verdict(e);
    return fail(why, rc);
  }
  const bool held = core_->mqtt().release_qos2(*state_, id);
  mqtt::append_ack(control(), mqtt::packet_type::pubcomp, version_, id,
                   held ? reason::success : reason::packet_identifier_not_found);
}

void mqtt_session::on_disconnect(const mqtt::header_result& h, std::string_view body) {
  mqtt::disconnect_packet d;
  if (const mqtt::error e = mqtt::parse_disconnect(body, h.flags(), version_, d);
      e != mqtt::error::none) {
    const auto [why, rc] = verdict(e);
    return fail(why, rc);
  }
  if (d.has_session_expiry) {
    // A session that was to end with its connection cannot be made to last (MQTT 5, 3.14.2.2.2).
    if (no_expiry_asked_ && d.session_expiry > 0)
      return fail(close_reason::mqtt_protocol_error, reason::protocol_error);
    if (state_)
      state_->expiry_s =
          std::min(d.session_expiry, seconds_of(core_->cfg().mqtt.max_session_expiry));
  }
  will_cancelled_ = d.reason != reason::disconnect_with_will;
  finish(close_reason::done);
}

// ---------------------------------------------------------------------------------------------
// Answers

std::string& mqtt_session::control() {
  return core_->mqtt_control_scratch();
}

// Queues the control packets this read produced (CONNACK, SUBACK, acknowledgements, PINGRESP)
// as one slice: the scratch string is the core's, so an idle connection keeps none.
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
  core_->mqtt().drop_will(std::move(will_));
  finish(why);
}

// Stop reading, write what is queued (and the control packets of this read), then close.
void mqtt_session::finish(close_reason why) {
  done_ = true;
  done_reason_ = why;
}

void mqtt_session::end(close_reason why, std::uint8_t v5_code) {
  if (closed_ || done_)
    return; // closing already, once its queue is written
  if (!connected_ || version_ != mqtt::v5)
    return close(why);
  std::string d;
  mqtt::append_disconnect(d, v5_code);
  if (consuming_) {
    control() += d; // after the answers of this read
  } else {
    block_ptr b = make_block(d.size());
    std::memcpy(b.get(), d.data(), d.size());
    enqueue(slice{std::move(b), 0, static_cast<std::uint32_t>(d.size()), 0});
    core_->mark_flush(*this);
  }
  finish(why);
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
// Ending

void mqtt_session::flush() {
  if (!waiting_write_)
    do_write();
}

void mqtt_session::written_all() {
  owed_dropped_ = 0;
  if (done_)
    close(done_reason_);
  else if (draining_)
    close(close_reason::shutdown);
}

void mqtt_session::begin_drain() {
  draining_ = true;
  if (out_.empty())
    close(close_reason::shutdown);
}

void mqtt_session::close(close_reason why) {
  if (closed_)
    return;
  auto keep = shared_from_this(); // the tables below may hold the last owner
  closed_ = true;
  add(core_->ctx().ctr.disconnect(why), 1);
  std::string().swap(in_);
  close_transport(why == close_reason::done || why == close_reason::shutdown);
  mqtt_router& router = core_->mqtt();
  std::unique_ptr<mqtt_will> will = std::move(will_);
  if (will_cancelled_ || core_->shutting_down())
    router.drop_will(std::move(will));
  // Taken over: the session is the new connection's, and the will went with it (attach).
  if (state_)
    router.detach(*this, std::move(will));
  else
    router.drop_will(std::move(will));
  core_->remove_peer(*this);
}

} // namespace newsdesk::broker::detail
