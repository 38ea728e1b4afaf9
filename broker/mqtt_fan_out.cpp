// MQTT delivery (mqtt_router.hpp): which sessions a publish reaches, QoS 0 encodings shared by
// every subscriber, the QoS 1 and 2 queues and windows, and acknowledgements.
#include <algorithm>
#include <cstring>

#include "broker/frame.hpp"
#include "broker/mqtt_router.hpp"

namespace newsdesk::broker::detail {

namespace {

constexpr std::string_view topic_prefix = "/topic/";

// The property list a receiver gets for a message with extras `e`, sent at `now`: the forwarded
// properties and what is left of its Message Expiry Interval, rounded up (a message still being
// sent is never told 0).
std::string properties_of(const mqtt_extras* e, steady::time_point now) {
  if (!e)
    return {};
  std::string p = e->properties;
  if (e->has_expiry) {
    const auto left = e->expires_at > now
                          ? std::chrono::ceil<std::chrono::seconds>(e->expires_at - now).count()
                          : 1;
    mqtt::append_expiry_property(p, static_cast<std::uint32_t>(std::max<long long>(left, 1)));
  }
  return p;
}

bool expired(const extras_ptr& e, steady::time_point now) {
  return e && e->has_expiry && e->expires_at <= now;
}

} // namespace

void mqtt_router::add_target(const mqtt_subscription& sub, const peer* from) {
  if (sub.group && !sub.owner) { // a share group: each message of the run picks a member
    groups_hit_.push_back(sub.group);
    return;
  }
  mqtt_client_state* s = sub.owner;
  if (sub.no_local && from && s->conn == from)
    return;
  if (s->stamp != stamp_) {
    s->stamp = stamp_;
    s->target = static_cast<std::uint32_t>(targets_.size());
    targets_.push_back({s, sub.qos, sub.retain_as_published, false});
  } else {
    target& t = targets_[s->target];
    t.qos = std::max(t.qos, sub.qos);
    t.retain_as_published = t.retain_as_published || sub.retain_as_published;
  }
  if (sub.id != 0) {
    ids_.emplace_back(s->target, sub.id);
    targets_[s->target].has_ids = true;
  }
}

// One member of a share group gets a message: the next connected one in turn, else (nobody
// connected) the next whose kept session collects it (QoS > 0), else nobody (false). The pick
// becomes the last target.
bool mqtt_router::add_shared(mqtt_share_group& g) {
  const std::size_t n = g.members.size();
  mqtt_subscription* pick = nullptr;
  for (int pass = 0; pass < 2 && !pick; ++pass)
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t at = (g.next + k) % n;
      mqtt_subscription* m = g.members[at];
      const mqtt_connection* c = m->owner->conn;
      if (pass == 0 ? (c && c->takes_deliveries()) : m->qos > 0) {
        pick = m;
        g.next = at + 1;
        break;
      }
    }
  if (!pick)
    return false;
  targets_.push_back({pick->owner, pick->qos, pick->retain_as_published, pick->id != 0});
  if (pick->id != 0)
    ids_.emplace_back(static_cast<std::uint32_t>(targets_.size() - 1), pick->id);
  return true;
}

void mqtt_router::collect(const wildcard_node& n, std::size_t i, bool dollar, const peer* from) {
  // Wildcards at the first level do not match topics starting with '$' (MQTT 4.7.2).
  const bool wild_ok = !(i == 0 && dollar);
  if (wild_ok)
    for (const mqtt_subscription* s : n.hash_subs)
      add_target(*s, from);
  if (i == levels_.size()) {
    for (const mqtt_subscription* s : n.subs)
      add_target(*s, from);
    return;
  }
  if (n.children.empty())
    return;
  if (auto it = n.children.find(levels_[i]); it != n.children.end())
    collect(*it->second, i + 1, dollar, from);
  if (wild_ok)
    if (auto it = n.children.find(std::string_view("+")); it != n.children.end())
      collect(*it->second, i + 1, dollar, from);
}

// The extras target `index` gets: the message's, plus its subscription identifiers when it
// has any (a copy of its own, made only then).
extras_ptr mqtt_router::extras_for(const target& t, std::size_t index,
                                   const extras_ptr& extras) const {
  if (!t.has_ids)
    return extras;
  auto own = std::make_shared<mqtt_extras>(extras ? *extras : mqtt_extras{});
  for (const auto& [at, id] : ids_)
    if (at == index)
      mqtt::append_subscription_id_property(own->properties, id);
  return own;
}

std::size_t mqtt_router::fan_out(std::string_view channel_name, channel* ch,
                                 std::span<const msg_view> msgs, const peer* from,
                                 const publish_meta& meta, block_ptr& stored) {
  if (!channel_name.starts_with(topic_prefix))
    return 0;
  const std::string_view topic = channel_name.substr(topic_prefix.size());
  if (topic.empty())
    return 0;
  ++stamp_;
  targets_.clear();
  ids_.clear();
  groups_hit_.clear();
  if (ch)
    for (const mqtt_subscription* s : ch->mqtt_subs)
      add_target(*s, from);
  if (wildcard_subs_ > 0) {
    levels_.clear();
    std::size_t start = 0;
    for (;;) {
      const std::size_t slash = topic.find('/', start);
      if (slash == std::string_view::npos) {
        levels_.push_back(topic.substr(start));
        break;
      }
      levels_.push_back(topic.substr(start, slash - start));
      start = slash + 1;
    }
    collect(root_, 0, topic.front() == '$', from);
  }
  if (targets_.empty() && groups_hit_.empty())
    return 0;

  // QoS 0: one block per protocol version, shared by all its subscribers that need no copy of
  // their own (subscription identifiers, RETAIN as published).
  const auto now = steady::now();
  const std::string v5_properties = properties_of(meta.extras.get(), now);
  block_ptr encoded[2];
  std::size_t total[2] = {0, 0};
  std::size_t largest[2] = {0, 0};
  auto encode = [&](int v) {
    const std::uint8_t version = v == 1 ? mqtt::v5 : mqtt::v311;
    const std::string_view props = v == 1 ? std::string_view(v5_properties) : std::string_view();
    std::size_t bytes = 0;
    sizes_[v].clear();
    for (const auto& m : msgs) {
      const std::size_t one =
          mqtt::publish_bytes(version, topic.size(), m.size - frame_header_bytes, 0, props.size());
      bytes += one;
      largest[v] = std::max(largest[v], one);
      sizes_[v].push_back(static_cast<std::uint32_t>(one));
    }
    encoded[v] = make_block(bytes);
    char* p = encoded[v].get();
    for (const auto& m : msgs) {
      const std::size_t len = m.size - frame_header_bytes;
      p = mqtt::write_publish_header(p, version, topic, len, 0, false, false, 0, props);
      std::memcpy(p, m.data + frame_header_bytes, len);
      p += len;
    }
    total[v] = bytes;
  };
  std::shared_ptr<const std::string> topic_copy;
  // A target's copy of its own, one message at a time (QoS 0 with subscription identifiers or
  // RETAIN as published, a client taking smaller packets, a share group's pick), or its QoS 1
  // and 2 messages (kept per session, from a copy of the run that outlives the read buffer).
  auto deliver_own = [&](std::size_t i, std::span<const msg_view> some, std::uint32_t at) {
    const target& t = targets_[i];
    const std::uint8_t q = std::min(meta.qos, t.qos);
    const bool retain = meta.retain && t.retain_as_published;
    const extras_ptr own = extras_for(t, i, meta.extras);
    if (q == 0) {
      mqtt_connection* c = t.s->conn;
      if (!c || !c->takes_deliveries())
        return; // QoS 0 is not kept for an absent client
      for (const auto& m : some) {
        const std::size_t len = m.size - frame_header_bytes;
        if (!c->fits(ctx_.cfg, 1, len))
          add(ctx_.ctr.drop_queue_full, 1);
        else if (enqueue_one(*c, topic, m.data + frame_header_bytes, len, 0, retain, false, 0,
                             own.get()))
          add(ctx_.ctr.deliveries, 1);
      }
      flush_.mark(*c);
      return;
    }
    if (!stored) {
      std::size_t bytes = 0;
      for (const auto& m : msgs)
        bytes += m.size;
      stored = copy_run(msgs, bytes);
    }
    if (!topic_copy)
      topic_copy = std::make_shared<const std::string>(topic);
    for (const auto& m : some) {
      queue_message(*t.s, mqtt_message{stored, at + static_cast<std::uint32_t>(frame_header_bytes),
                                       m.size - static_cast<std::uint32_t>(frame_header_bytes),
                                       topic_copy, own, 0, q, retain, false});
      at += m.size;
    }
    pump(*t.s);
  };
  const std::size_t reached = targets_.size();
  for (std::size_t i = 0; i < reached; ++i) {
    const target& t = targets_[i];
    mqtt_connection* c = t.s->conn;
    // QoS 0 without a copy of its own: the shared encoding of the run.
    if (std::min(meta.qos, t.qos) == 0 && !t.has_ids && !(meta.retain && t.retain_as_published) &&
        c && c->takes_deliveries()) {
      const int v = c->version_ == mqtt::v5 ? 1 : 0;
      if (!encoded[v])
        encode(v);
      if (c->client_max_packet_ == 0 || largest[v] <= c->client_max_packet_) {
        offer(*c, encoded[v], total[v], sizes_[v]);
        continue;
      }
    }
    deliver_own(i, msgs, 0);
  }
  // Share groups: each message to one member, in turn.
  std::size_t picks = 0;
  for (mqtt_share_group* g : groups_hit_) {
    std::uint32_t at = 0;
    for (std::size_t k = 0; k < msgs.size(); ++k) {
      if (add_shared(*g)) {
        deliver_own(targets_.size() - 1, msgs.subspan(k, 1), at);
        ++picks;
      }
      at += msgs[k].size;
    }
  }
  return reached + picks;
}

// The slow-consumer policy of the frame protocol's /topic delivery (delivery::offer), for a
// run encoded as MQTT (`sizes`: each packet's bytes): what does not fit is dropped for this
// subscriber only, or it is disconnected.
void mqtt_router::offer(mqtt_connection& c, const block_ptr& block, std::size_t total,
                        std::span<const std::uint32_t> sizes) {
  const config& cfg = ctx_.cfg;
  const std::size_t n = sizes.size();
  if (c.fits(cfg, n, total)) {
    c.enqueue(slice{block, 0, static_cast<std::uint32_t>(total), static_cast<std::uint32_t>(n)});
    add(ctx_.ctr.deliveries, n);
    flush_.mark(c);
    return;
  }
  if (cfg.slow_consumer == slow_consumer_policy::disconnect) {
    add(ctx_.ctr.drop_queue_full, n);
    flush_.defer_close(c, close_reason::slow_consumer);
    return;
  }
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < n && c.fits(cfg, k + 1, bytes + sizes[k]))
    bytes += sizes[k++];
  if (k > 0) {
    // A copy of the prefix, so a long-lived partial slice never pins the whole run.
    block_ptr part = make_block(bytes);
    std::memcpy(part.get(), block.get(), bytes);
    c.enqueue(slice{std::move(part), 0, static_cast<std::uint32_t>(bytes),
                    static_cast<std::uint32_t>(k)});
    add(ctx_.ctr.deliveries, k);
    flush_.mark(c);
  }
  add(ctx_.ctr.drop_queue_full, n - k);
  c.owed_dropped_ += total - bytes;
  if (cfg.hard_limit_bytes > 0 && c.out_bytes_ + c.owed_dropped_ > cfg.hard_limit_bytes)
    flush_.defer_close(c, close_reason::hard_limit);
}

// False (counted in drops.too_large, nothing queued) when the packet is larger than the
// client's Maximum Packet Size.
bool mqtt_router::enqueue_one(mqtt_connection& c, std::string_view topic, const char* payload,
                              std::size_t length, std::uint8_t qos, bool retain, bool dup,
                              std::uint16_t packet_id, const mqtt_extras* extras) {
  const std::string props =
      c.version_ == mqtt::v5 ? properties_of(extras, steady::now()) : std::string();
  const std::size_t size = mqtt::publish_bytes(c.version_, topic.size(), length, qos, props.size());
  if (c.client_max_packet_ != 0 && size > c.client_max_packet_) {
    add(ctx_.ctr.drop_too_large, 1);
    return false;
  }
  block_ptr b = make_block(size);
  char* p = mqtt::write_publish_header(b.get(), c.version_, topic, length, qos, retain, dup,
                                       packet_id, props);
  std::memcpy(p, payload, length);
  c.enqueue(slice{std::move(b), 0, static_cast<std::uint32_t>(size), 1});
  return true;
}

void mqtt_router::enqueue_control(mqtt_connection& c, std::string_view bytes) {
  block_ptr b = make_block(bytes.size());
  std::memcpy(b.get(), bytes.data(), bytes.size());
  c.enqueue(slice{std::move(b), 0, static_cast<std::uint32_t>(bytes.size()), 0});
}

void mqtt_router::deliver_one(mqtt_client_state& s, const std::shared_ptr<const std::string>& topic,
                              const block_ptr& block, std::uint32_t offset, std::uint32_t length,
                              std::uint8_t qos, bool retain, const extras_ptr& extras) {
  if (qos > 0) {
    queue_message(s, mqtt_message{block, offset, length, topic, extras, 0, qos, retain, false});
    pump(s);
    return;
  }
  mqtt_connection* c = s.conn;
  if (!c || !c->takes_deliveries())
    return;
  if (enqueue_one(*c, *topic, block.get() + offset, length, 0, retain, false, 0, extras.get())) {
    add(ctx_.ctr.deliveries, 1);
    flush_.mark(*c);
  }
}

void mqtt_router::queue_message(mqtt_client_state& s, mqtt_message m) {
  if (!s.held)
    s.held = std::make_unique<mqtt_held>();
  mqtt_held& h = *s.held;
  if (!h.pending)
    h.pending = std::make_unique<std::deque<mqtt_message>>();
  if (h.pending->size() >= ctx_.cfg.mqtt.max_queued_messages ||
      h.pending_bytes + m.length > ctx_.cfg.queue_max_bytes) {
    add(ctx_.ctr.drop_queue_full, 1);
    return;
  }
  h.pending_bytes += m.length;
  h.pending->push_back(std::move(m));
}

// Sends pending QoS 1 and 2 messages while the window has room; those whose Message Expiry
// passed while they waited are dropped (drops.expired).
void mqtt_router::pump(mqtt_client_state& s) {
  mqtt_connection* c = s.conn;
  if (!s.held || !s.held->pending || !c || !c->takes_deliveries())
    return;
  mqtt_held& h = *s.held;
  const auto now = steady::now();
  bool sent = false;
  while (h.inflight.size() < s.window && !h.pending->empty()) {
    mqtt_message m = std::move(h.pending->front());
    h.pending->pop_front();
    h.pending_bytes -= m.length;
    if (expired(m.extras, now)) {
      add(ctx_.ctr.drop_expired, 1);
      continue;
    }
    // The next id not in flight (the window is far below 65535, so this ends quickly).
    do {
      if (++s.next_id == 0)
        s.next_id = 1;
    } while (std::any_of(h.inflight.begin(), h.inflight.end(),
                         [&](const mqtt_message& f) { return f.packet_id == s.next_id; }));
    if (!enqueue_one(*c, *m.topic, m.block.get() + m.offset, m.length, m.qos, m.retain, false,
                     s.next_id, m.extras.get()))
      continue;
    m.packet_id = s.next_id;
    add(ctx_.ctr.deliveries, 1);
    h.inflight.push_back(std::move(m));
    sent = true;
  }
  if (h.pending->empty())
    h.pending.reset();
  if (h.empty())
    s.held.reset();
  if (sent)
    flush_.mark(*c);
}

// A resumed session: what was sent and never acknowledged goes again with the same ids: DUP
// set, or PUBREL for a QoS 2 message the client has received.
void mqtt_router::resend(mqtt_client_state& s) {
  mqtt_connection* c = s.conn;
  if (!c || !s.held || s.held->inflight.empty())
    return;
  std::string releases;
  for (const mqtt_message& m : s.held->inflight) {
    if (m.released)
      mqtt::append_ack(releases, mqtt::packet_type::pubrel, c->version_, m.packet_id,
                       mqtt::reason::success);
    else
      enqueue_one(*c, *m.topic, m.block.get() + m.offset, m.length, m.qos, m.retain, true,
                  m.packet_id, m.extras.get());
  }
  if (!releases.empty())
    enqueue_control(*c, releases);
  flush_.mark(*c);
}

void mqtt_router::acknowledged(mqtt_client_state& s, mqtt::packet_type type, std::uint16_t id,
                               std::uint8_t code, std::string& control) {
  const std::uint8_t version = s.conn ? s.conn->version_ : mqtt::v311;
  mqtt_held* h = s.held.get();
  auto it = h ? std::find_if(h->inflight.begin(), h->inflight.end(),
                             [&](const mqtt_message& m) { return m.packet_id == id; })
              : decltype(h->inflight.begin()){};
  const bool found = h && it != h->inflight.end();
  switch (type) {
  case mqtt::packet_type::puback:
    if (!found || it->qos != 1)
      return; // a duplicate or stale PUBACK: nothing owed
    break;
  case mqtt::packet_type::pubrec:
    if (!found || it->qos != 2) {
      // Not ours (any more): let the client finish its side.
      mqtt::append_ack(control, mqtt::packet_type::pubrel, version, id,
                       mqtt::reason::packet_identifier_not_found);
      return;
    }
    if (code < 0x80) {
      // Received: the payload is no longer needed, only the id until PUBCOMP.
      it->released = true;
      it->block.reset();
      it->topic.reset();
      it->extras.reset();
      mqtt::append_ack(control, mqtt::packet_type::pubrel, version, id, mqtt::reason::success);
      return;
    }
    break; // the client refused it: done
  case mqtt::packet_type::pubcomp:
    if (!found || !it->released)
      return;
    break;
  default:
    return;
  }
  h->inflight.erase(it);
  if (h->empty()) {
    s.held.reset();
    return;
  }
  pump(s);
}

} // namespace newsdesk::broker::detail
