#include "broker/queue_delivery.hpp"

#include <cstring>

#include <boost/asio/post.hpp>

#include "broker/frame.hpp"
#include "broker/peer.hpp"

namespace newsdesk::broker::detail {

std::size_t queue_delivery::publish(channel& ch, std::span<const msg_view> msgs, peer* from) {
  const config& cfg = ctx_.cfg;
  const std::size_t n = msgs.size();
  std::size_t taken = 0;
  if (ch.backlog.empty()) // otherwise the backlog goes first, to keep the order
    taken = assign_and_deliver(ch, msgs);
  if (taken == n)
    return n;
  const auto rest = msgs.subspan(taken);
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < rest.size() && ch.backlog_messages + k < cfg.backlog_max_messages &&
         ch.backlog_bytes + bytes + rest[k].size <= cfg.backlog_max_bytes &&
         backlog_total_ + run_overhead + bytes + rest[k].size <= cfg.backlog_total_max_bytes)
    bytes += rest[k++].size;
  if (k > 0) {
    auto block = make_block(bytes);
    char* p = block.get();
    for (std::size_t i = 0; i < k; ++i) {
      std::memcpy(p, rest[i].data, rest[i].size);
      p += rest[i].size;
    }
    ch.backlog.push_back(slice{std::move(block), 0, static_cast<std::uint32_t>(bytes),
                               static_cast<std::uint32_t>(k)});
    ch.backlog_messages += k;
    ch.backlog_bytes += bytes;
    backlog_total_ += bytes + run_overhead;
    add(ctx_.ctr.backlog_messages, k);
    add(ctx_.ctr.backlog_bytes, bytes);
    if (!ch.subs.empty())
      schedule_pump(ch);
  }
  taken += k;
  if (taken == n)
    return n;
  if (from == nullptr) {
    add(ctx_.ctr.drop_backlog_full, n - taken);
    return n;
  }
  // Backpressure: stop reading this publisher until the backlog has room.
  from->paused_ = true;
  from->blocked_on_ = index_.find(ch.name);
  ch.blocked.push_back(from->shared_from_this());
  add(ctx_.ctr.publishers_paused, 1);
  const bool channel_has_room = ch.backlog_messages < cfg.backlog_max_messages &&
                                ch.backlog_bytes + msgs[taken].size <= cfg.backlog_max_bytes;
  if (channel_has_room && !ch.starved) {
    // Only the broker-wide cap stopped it: another channel's pump must wake it.
    ch.starved = true;
    starved_.push_back(from->blocked_on_);
  }
  return taken;
}

// Round-robin: each message goes to the next subscriber in turn whose queue has room. Builds
// one block per receiving subscriber. Returns how many messages (a prefix) were delivered.
std::size_t queue_delivery::assign_and_deliver(channel& ch, std::span<const msg_view> msgs) {
  const std::size_t k = ch.subs.size();
  if (k == 0)
    return 0;
  assign_.clear();
  for (const auto& m : msgs) {
    std::size_t found = k;
    for (std::size_t t = 0; t < k; ++t) {
      const std::size_t idx = (ch.rr + t) % k;
      const peer& s = *ch.subs[idx];
      if (s.takes_deliveries() && s.fits(ctx_.cfg, 1, m.size)) {
        found = idx;
        break;
      }
    }
    if (found == k)
      break;
    peer& s = *ch.subs[found];
    s.reserved_messages_ += 1;
    s.reserved_bytes_ += m.size;
    assign_.push_back(static_cast<std::uint32_t>(found));
    ch.rr = (found + 1) % k;
  }
  const std::size_t count = assign_.size();
  if (count == 0)
    return 0;
  target_block_.resize(k);
  target_pos_.assign(k, 0);
  for (std::size_t i = 0; i < k; ++i)
    if (ch.subs[i]->reserved_messages_ > 0)
      target_block_[i] = make_block(ch.subs[i]->reserved_bytes_);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t t = assign_[i];
    std::memcpy(target_block_[t].get() + target_pos_[t], msgs[i].data, msgs[i].size);
    target_pos_[t] += msgs[i].size;
  }
  for (std::size_t i = 0; i < k; ++i) {
    peer& s = *ch.subs[i];
    if (s.reserved_messages_ == 0)
      continue;
    s.enqueue(slice{std::move(target_block_[i]), 0, static_cast<std::uint32_t>(s.reserved_bytes_),
                    static_cast<std::uint32_t>(s.reserved_messages_)});
    add(ctx_.ctr.deliveries, s.reserved_messages_);
    s.reserved_messages_ = 0;
    s.reserved_bytes_ = 0;
    flush_.mark(s);
  }
  return count;
}

void queue_delivery::schedule_pump(channel& ch) {
  if (ch.pump_posted)
    return;
  ch.pump_posted = true;
  boost::asio::post(ctx_.strand,
                    [self = ctx_.keep_alive(this), c = index_.find(ch.name)] { self->pump(*c); });
}

void queue_delivery::room_freed(peer& p) {
  // One paused by the broker-wide cap can have an empty backlog of its own, hence `blocked`.
  if (p.chan_ && p.chan_->is_queue && (!p.chan_->backlog.empty() || !p.chan_->blocked.empty()))
    schedule_pump(*p.chan_);
}

// Moves backlog messages to subscribers with room, in order, then lets paused publishers go.
void queue_delivery::pump(channel& ch) {
  ch.pump_posted = false;
  while (!ch.backlog.empty() && !ch.subs.empty()) {
    pump_msgs_.clear();
    for (std::size_t i = 0; i < ch.backlog.size() && pump_msgs_.size() < pump_batch; ++i) {
      const slice& s = ch.backlog.at(i);
      const char* p = s.block.get() + s.offset;
      for (std::uint32_t m = 0; m < s.messages && pump_msgs_.size() < pump_batch; ++m) {
        const auto size = static_cast<std::uint32_t>(frame_header_bytes + read_length(p));
        pump_msgs_.push_back({p, size, 0});
        p += size;
      }
    }
    const std::size_t taken = assign_and_deliver(ch, pump_msgs_);
    if (taken == 0)
      break;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < taken; ++i)
      bytes += pump_msgs_[i].size;
    std::size_t left = taken;
    std::size_t at = 0;
    while (left > 0) {
      slice& f = ch.backlog.front();
      if (f.messages <= left) {
        left -= f.messages;
        at += f.messages;
        ch.backlog.pop_front();
        backlog_total_ -= run_overhead;
        continue;
      }
      std::size_t adv = 0;
      for (std::size_t i = 0; i < left; ++i)
        adv += pump_msgs_[at + i].size;
      f.offset += static_cast<std::uint32_t>(adv);
      f.length -= static_cast<std::uint32_t>(adv);
      f.messages -= static_cast<std::uint32_t>(left);
      left = 0;
    }
    ch.backlog_messages -= taken;
    ch.backlog_bytes -= bytes;
    backlog_total_ -= bytes;
    sub(ctx_.ctr.backlog_messages, taken);
    sub(ctx_.ctr.backlog_bytes, bytes);
    if (taken < pump_msgs_.size())
      break;
  }
  resume_blocked(ch);
  resume_starved();
  index_.maybe_erase(ch);
}

void queue_delivery::resume_blocked(channel& ch) {
  if (ch.blocked.empty() || ch.backlog_messages >= ctx_.cfg.backlog_max_messages ||
      ch.backlog_bytes >= ctx_.cfg.backlog_max_bytes)
    return;
  for (auto& p : ch.blocked) {
    sub(ctx_.ctr.publishers_paused, 1);
    boost::asio::post(ctx_.strand, [s = std::move(p)] { s->resume(); });
  }
  ch.blocked.clear();
}

// Resumes publishers that only the broker-wide backlog cap held back, once there is room. One
// that still finds none pauses again; nothing here loops, since only a pump calls this.
void queue_delivery::resume_starved() {
  if (starved_.empty() || backlog_total_ >= ctx_.cfg.backlog_total_max_bytes)
    return;
  auto waiting = std::move(starved_);
  starved_.clear();
  for (auto& ch : waiting) {
    ch->starved = false;
    resume_blocked(*ch);
    index_.maybe_erase(*ch);
  }
}

void queue_delivery::unblock(peer& p) {
  std::erase_if(p.blocked_on_->blocked,
                [&p](const std::shared_ptr<peer>& q) { return q.get() == &p; });
  sub(ctx_.ctr.publishers_paused, 1);
}

void queue_delivery::expire_unattended(steady::time_point now) {
  const config& cfg = ctx_.cfg;
  if (cfg.backlog_ttl.count() <= 0)
    return;
  std::vector<std::shared_ptr<channel>> expired;
  for (const auto& [name, ch] : index_.channels())
    if (ch->is_queue && ch->subs.empty() && !ch->backlog.empty() &&
        ch->unattended_since != steady::time_point{} &&
        now - ch->unattended_since > cfg.backlog_ttl)
      expired.push_back(ch);
  for (auto& ch : expired)
    expire_backlog(*ch);
}

// Drops a backlog nobody came for, frees what it held and lets its publishers go on.
void queue_delivery::expire_backlog(channel& ch) {
  backlog_total_ -= ch.backlog_bytes + ch.backlog.size() * run_overhead;
  sub(ctx_.ctr.backlog_messages, ch.backlog_messages);
  sub(ctx_.ctr.backlog_bytes, ch.backlog_bytes);
  const auto dropped = ch.backlog_messages;
  ch.backlog.clear();
  ch.backlog_messages = 0;
  ch.backlog_bytes = 0;
  resume_blocked(ch);
  resume_starved();
  index_.maybe_erase(ch);
  add(ctx_.ctr.drop_expired, dropped);
}

void queue_delivery::reset() {
  starved_.clear();
  backlog_total_ = 0;
}

} // namespace newsdesk::broker::detail
