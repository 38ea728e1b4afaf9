#include "broker/delivery.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "broker/frame.hpp"
#include "broker/mqtt_router.hpp"
#include "broker/peer.hpp"
#include "broker/queue_delivery.hpp"
#include "server/core/log.hpp"

namespace newsdesk::broker::detail {

std::size_t delivery::publish(std::string_view name, std::span<const msg_view> msgs, peer* from,
                              const block_ptr* whole, const publish_meta& meta) {
  const config& cfg = ctx_.cfg;
  counters& ctr = ctx_.ctr;
  const std::size_t n = msgs.size();
  std::shared_ptr<channel> ch = index_.find(name);
  if (!ch && is_queue_name(name)) {
    if (from && from->channels_created_ >= cfg.max_channels_per_connection) {
      add(ctr.messages_in, n);
      add(ctr.drop_channel_limit, n);
      flush_.defer_close(*from, close_reason::channel_limit);
      return n;
    }
    ch = index_.find_or_create(name);
    if (!ch) {
      add(ctr.messages_in, n);
      add(ctr.drop_channel_limit, n);
      return n;
    }
    if (from)
      ++from->channels_created_;
  }
  if (ch && ch->is_queue) {
    const std::size_t taken = queues_.publish(*ch, msgs, from);
    add(ctr.messages_in, taken);
    index_.maybe_erase(*ch); // a channel this call created but left empty (all dropped) must go
    return taken;
  }
  block_ptr block;
  if (whole)
    block = *whole;
  // MQTT sessions first: the wildcard ones may match where the channel has no subscriber.
  const bool mqtt_may_match = (ch && !ch->mqtt_subs.empty()) || mqtt_.has_wildcards();
  const std::size_t mqtt_targets =
      mqtt_may_match ? mqtt_.fan_out(name, ch.get(), msgs, from, meta, block) : 0;
  if (!ch || (ch->subs.empty() && ch->locals.empty())) {
    add(ctr.messages_in, n);
    if (mqtt_targets == 0)
      add(ctr.drop_no_subscriber, n);
    return n;
  }
  if (!ch->subs.empty()) {
    std::size_t total = 0;
    for (const auto& m : msgs)
      total += m.size;
    if (!block)
      block = copy_run(msgs, total);
    for (peer* s : ch->subs)
      offer(*s, block, total, msgs);
  }
  if (!ch->locals.empty())
    deliver_local(*ch, msgs);
  add(ctr.messages_in, n);
  return n;
}

// In-process subscribers get each message as a string of its own (they hold on to single
// messages, not runs of frames): one copy per message, shared by all of them. Handlers cannot
// change ch.locals while this loops: subscribe and cancel reach the tables through posts.
void delivery::deliver_local(channel& ch, std::span<const msg_view> msgs) {
  for (const auto& m : msgs) {
    auto data = std::make_shared<const std::string>(m.data + frame_header_bytes,
                                                    m.size - frame_header_bytes);
    for (const auto& s : ch.locals) {
      s->calling.store(true);
      if (!s->cancelled.load()) {
        // Counted before the call, so whoever the handler wakes sees the delivery counted.
        add(ctx_.ctr.deliveries, 1);
        try {
          s->handler(data);
        } catch (const std::exception& e) {
          newsdesk::server::log_error("msg=\"broker: in-process subscriber threw\" channel=" +
                                      newsdesk::server::logfmt_quoted(ch.name) +
                                      " error=" + newsdesk::server::logfmt_quoted(e.what()));
        } catch (...) {
          newsdesk::server::log_error("msg=\"broker: in-process subscriber threw\" channel=" +
                                      newsdesk::server::logfmt_quoted(ch.name));
        }
      }
      s->calling.store(false);
      s->calling.notify_all();
    }
  }
}

// Slow-consumer policy for /topic: what does not fit is dropped for that subscriber only
// (drop_newest), or the subscriber is disconnected (disconnect).
void delivery::offer(peer& s, const block_ptr& block, std::size_t total,
                     std::span<const msg_view> msgs) {
  if (!s.takes_deliveries())
    return;
  const config& cfg = ctx_.cfg;
  const std::size_t n = msgs.size();
  if (s.fits(cfg, n, total)) {
    s.enqueue(slice{block, 0, static_cast<std::uint32_t>(total), static_cast<std::uint32_t>(n)});
    add(ctx_.ctr.deliveries, n);
    flush_.mark(s);
    return;
  }
  if (cfg.slow_consumer == slow_consumer_policy::disconnect) {
    add(ctx_.ctr.drop_queue_full, n);
    flush_.defer_close(s, close_reason::slow_consumer);
    return;
  }
  std::size_t k = 0;
  std::size_t bytes = 0;
  while (k < n && s.fits(cfg, k + 1, bytes + msgs[k].size))
    bytes += msgs[k++].size;
  if (k > 0) {
    // Copy the accepted prefix so a long-lived partial slice never pins the whole batch.
    auto part = make_block(bytes);
    std::memcpy(part.get(), block.get(), bytes);
    s.enqueue(slice{std::move(part), 0, static_cast<std::uint32_t>(bytes),
                    static_cast<std::uint32_t>(k)});
    add(ctx_.ctr.deliveries, k);
    flush_.mark(s);
  }
  add(ctx_.ctr.drop_queue_full, n - k);
  s.owed_dropped_ += total - bytes;
  if (cfg.hard_limit_bytes > 0 && s.out_bytes_ + s.owed_dropped_ > cfg.hard_limit_bytes)
    flush_.defer_close(s, close_reason::hard_limit);
}

} // namespace newsdesk::broker::detail
