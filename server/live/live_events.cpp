#include "server/live/live_events.hpp"

#include "scrapers/url.hpp"
#include "server/core/free_memory.hpp"
#include "server/core/log.hpp"
#include "server/news/headline.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/news_query.hpp"
#include "server/news/site_change.hpp"
#include "server/views/site_status.hpp"
#include "server/views/story_view.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace newsdesk::server {

namespace net = boost::asio;
using json = nlohmann::json;
using error_code = boost::system::error_code;

namespace {

// Every stream's first bytes, one buffer for all.
event_stream::chunk retry_chunk() {
  static const auto chunk = std::make_shared<const std::string>("retry: 3000\n\n");
  return chunk;
}

// Streams that end between two trims of the allocator's free memory: a burst of a few hundred
// short streams leaves megabytes in malloc's arenas; fewer are not worth a walk over the heap.
constexpr std::size_t trim_after = 256;

} // namespace

struct live_events::state : std::enable_shared_from_this<live_events::state> {
  state(net::io_context& ioc_, net::thread_pool& pool_, headline_store* store_,
        std::map<std::string, site_look> sites_)
      : pool(pool_)
      , store(store_)
      , epoch(store_ ? store_->epoch() : std::string())
      , sites(std::make_shared<const std::map<std::string, site_look>>(std::move(sites_)))
      , strand(net::make_strand(ioc_))
      , heartbeat_timer(strand)
      , publish_strand(net::make_strand(pool_)) {}

  net::thread_pool& pool;
  headline_store* store;
  const std::string epoch; // the store's: the first half of every event id
  std::function<std::shared_ptr<const news_snapshot>()> snapshot_source;
  mutable std::mutex sites_mutex; // guards sites (replaced whole on a reload)
  std::shared_ptr<const std::map<std::string, site_look>> sites;

  // A client's stream, what it asked for (site= and q=, as the page it belongs to), and the
  // newest id it has been considered for (by its replay, then live), so a headline both
  // replayed and then published is sent once.
  struct client {
    std::shared_ptr<event_stream> stream;
    std::int64_t through = 0;
    news_query filter;
    std::chrono::steady_clock::time_point last_event = std::chrono::steady_clock::now();
  };
  // A headline ready to send: its id, its SSE text, and the item the filters look at.
  struct event {
    std::int64_t id = 0;
    std::string text;
    news_item item;
  };
  mutable std::mutex mutex; // guards clients, prune_at, stopped, resets and ended_since_trim
  std::vector<client> clients;
  // When registering finds this many clients, the closed ones are dropped (add_locked()).
  std::size_t prune_at = 64;

  // Registers `c`. Streams closed without a push to find it out (refused over the streams'
  // budget, or whose client left) are dropped now and then, in time amortised over
  // registrations, so a storm of reconnects does not pile them up until the next ping.
  void add_locked(client c) {
    if (clients.size() >= prune_at) {
      drop_clients_locked([](const client& k) { return k.stream->closed(); });
      prune_at = std::max<std::size_t>(64, 2 * clients.size());
    }
    clients.push_back(std::move(c));
  }
  bool stopped = false;
  // The reset events of the current snapshot, by filter (filter_key): made once, shared by every
  // client starting over while that snapshot is current (a reconnect storm costs one reset's
  // bytes, not one per client). Emptied when the snapshot changes; at most max_resets filters.
  std::uint64_t resets_version = 0;
  std::map<std::string, event_stream::chunk> resets;
  static constexpr std::size_t max_resets = 32;
  // Streams ended since their memory was last handed back (return_free_memory).
  std::size_t ended_since_trim = 0;

  // The heartbeat lives on this strand.
  net::strand<net::io_context::executor_type> strand;
  net::steady_timer heartbeat_timer;
  // Published batches are turned into events here: off the caller's thread (a store write's),
  // and one at a time so events go out in publish order.
  net::strand<net::thread_pool::executor_type> publish_strand;

  std::string event_id(std::int64_t id) const {
    return epoch.empty() ? std::to_string(id) : epoch + ":" + std::to_string(id);
  }

  // A headline as events carry it: its JSON (to_json) plus how its site looks; null when it must
  // not be shown (an unknown site, no title, a link that is not http(s)).
  json shown(const news_item& item) const {
    std::shared_ptr<const std::map<std::string, site_look>> known;
    {
      std::lock_guard lock(sites_mutex);
      known = sites;
    }
    const auto& h = item.headline;
    auto look = known->find(h.site);
    if (item.id <= 0 || look == known->end() || h.title.empty() ||
        !scrapers::url::is_http_url(h.url))
      return nullptr;
    json data = item;
    data["site_display_name"] = look->second.display_name;
    data["colour"] = look->second.colour;
    return data;
  }

  // dump() escapes newlines, so the data stays on one line as SSE requires.
  static std::string line_of(const json& data) {
    return data.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  std::string headline_event(std::int64_t id, const json& data) const {
    return "id: " + event_id(id) + "\nevent: headline\ndata: " + line_of(data) + "\n\n";
  }

  // One SSE event for a headline; empty when it must not be shown.
  std::string event_for(const news_item& item) const {
    auto data = shown(item);
    return data.is_null() ? std::string() : headline_event(item.id, data);
  }

  // Drops clients for which `gone` is true, counting them.
  template <class Gone> void drop_clients_locked(Gone gone) {
    const auto before = clients.size();
    clients.erase(std::remove_if(clients.begin(), clients.end(), gone), clients.end());
    ended_since_trim += before - clients.size();
  }

  void broadcast_locked(std::string_view text) {
    const auto shared = std::make_shared<const std::string>(text);
    drop_clients_locked([&](const client& c) { return !c.stream->push(shared); });
  }

  // What tells two filters' resets apart: the sites, the words and the story.
  static std::string filter_key(const news_query& filter) {
    std::string key;
    for (const auto& s : filter.sites)
      key += s + ",";
    key += "|";
    key += filter.q;
    return key + "|" + std::to_string(filter.story);
  }

  // The reset event for `filter` of `snapshot`: what the page shows (the newest page_size
  // headlines the filter passes), and the newest id held, from the cache while the snapshot is
  // current (a storm of reconnects with unknown ids costs no build per client, and no copy).
  event_stream::chunk reset_locked(const news_snapshot& snapshot, const news_query& filter) {
    if (snapshot.version != resets_version) {
      resets.clear();
      resets_version = snapshot.version;
    }
    const auto key = filter_key(filter);
    if (auto found = resets.find(key); found != resets.end())
      return found->second;
    auto chosen = snapshot.headlines.select(
        [&filter](const news_item& item) { return filter.matches(item); }, page_size);
    const std::vector<news_item> current(chosen.begin(), chosen.end());
    auto made = std::make_shared<const std::string>(
        "id: " + event_id(snapshot.last_id) + "\nevent: reset\ndata: " + headlines_json(current) +
        "\n\n");
    if (resets.size() < max_resets)
      resets.emplace(key, made);
    return made;
  }

  // Sends each event to the clients that have not had its id yet and whose filter it passes.
  // `events` ascend by id.
  void send_locked(const std::vector<event>& events) {
    std::string text;
    for (const auto& e : events)
      text += e.text;
    const auto all = std::make_shared<const std::string>(std::move(text)); // shared, not copied
    const auto newest = events.back().id;
    drop_clients_locked([&](client& c) {
      bool ok;
      if (c.through < events.front().id && !c.filter.filters_headlines()) {
        ok = c.stream->push(all);
        c.last_event = std::chrono::steady_clock::now();
      } else {
        std::string some;
        for (const auto& e : events)
          if (e.id > c.through && c.filter.matches(e.item))
            some += e.text;
        ok = some.empty() || c.stream->push(some);
        if (!some.empty())
          c.last_event = std::chrono::steady_clock::now();
      }
      c.through = std::max(c.through, newest);
      return !ok;
    });
  }

  // Streams that have had no event for max_idle are closed: the browser reconnects with its
  // Last-Event-ID and misses nothing, and a client that only holds streams open gives them up.
  void close_idle_locked() {
    const auto cutoff = std::chrono::steady_clock::now() - max_idle;
    drop_clients_locked([&](const client& c) {
      if (c.last_event > cutoff && !c.stream->closed())
        return false;
      c.stream->close();
      return true;
    });
  }

  void schedule_heartbeat() {
    heartbeat_timer.expires_after(heartbeat);
    heartbeat_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec)
        return;
      bool trim = false;
      {
        std::lock_guard lock(self->mutex);
        if (self->stopped)
          return;
        self->close_idle_locked();
        self->broadcast_locked(": ping\n\n");
        trim = self->ended_since_trim >= trim_after;
        if (trim)
          self->ended_since_trim = 0;
      }
      // Many streams ended (a reconnect storm, readers leaving): the memory their connections
      // held is handed back, not kept at the peak.
      if (trim)
        return_free_memory();
      self->schedule_heartbeat();
    });
  }

  // Runs on publish_strand: one batch at a time, so events go out in publish order.
  void publish(const std::vector<news_item>& items,
               const std::unordered_map<std::int64_t, std::size_t>& sources) {
    std::vector<event> events;
    for (const auto& item : items) {
      auto data = shown(item);
      if (data.is_null())
        continue;
      auto text = headline_event(item.id, data);
      // A headline that joined a story another headline started: how many sites tell it now.
      if (auto found = sources.find(item.story); found != sources.end() && item.story != item.id) {
        json story = {
            {"story", item.story}, {"headline", std::move(data)}, {"sources", found->second}};
        text += "event: story\ndata: " + line_of(story) + "\n\n";
      }
      events.push_back({item.id, std::move(text), item});
    }
    if (events.empty())
      return;
    std::sort(events.begin(), events.end(),
              [](const event& a, const event& b) { return a.id < b.id; });
    std::lock_guard lock(mutex);
    send_locked(events);
  }
};

live_events::live_events(net::io_context& ioc, net::thread_pool& pool, headline_store* store,
                         std::map<std::string, site_look> sites)
    : state_(std::make_shared<state>(ioc, pool, store, std::move(sites))) {}

live_events::~live_events() {
  stop();
}

void live_events::set_sites(std::map<std::string, site_look> sites) {
  auto replacement = std::make_shared<const std::map<std::string, site_look>>(std::move(sites));
  std::lock_guard lock(state_->sites_mutex);
  state_->sites = std::move(replacement);
}

void live_events::set_snapshot_source(
    std::function<std::shared_ptr<const news_snapshot>()> source) {
  state_->snapshot_source = std::move(source);
}

void live_events::publish(std::vector<news_item> items,
                          std::unordered_map<std::int64_t, std::size_t> story_sources) {
  if (items.empty())
    return;
  net::post(state_->publish_strand,
            [st = state_, items = std::move(items), sources = std::move(story_sources)] {
              {
                std::lock_guard lock(st->mutex);
                if (st->stopped)
                  return;
              }
              st->publish(items, sources);
            });
}

void live_events::publish_status(const std::vector<site_report>& sites) {
  if (sites.empty())
    return;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::string text;
  for (const auto& s : sites) {
    const auto status = status_of(s, now);
    const json data = {{"site", s.name},        {"display_name", s.display_name},
                       {"state", status.state}, {"state_text", status.state_text},
                       {"quiet", status.quiet}, {"problem", status.problem}};
    text += "event: site\ndata: " + state::line_of(data) + "\n\n";
  }
  // In publish order with the headlines: a page hears a site fail after what it last found.
  net::post(state_->publish_strand, [st = state_, text = std::move(text)] {
    std::lock_guard lock(st->mutex);
    if (!st->stopped)
      st->broadcast_locked(text);
  });
}

void live_events::publish_pictures(const std::vector<news_item>& items) {
  if (items.empty())
    return;
  std::string text;
  for (const auto& item : items) {
    const json data = {{"id", item.id}, {"picture", item.picture}};
    text += "event: picture\ndata: " + state::line_of(data) + "\n\n";
  }
  net::post(state_->publish_strand, [st = state_, text = std::move(text)] {
    std::lock_guard lock(st->mutex);
    if (!st->stopped)
      st->broadcast_locked(text);
  });
}

void live_events::start() {
  net::dispatch(state_->strand, [st = state_] { st->schedule_heartbeat(); });
}

void live_events::stop() {
  std::vector<std::shared_ptr<event_stream>> streams;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopped)
      return;
    state_->stopped = true;
    for (auto& c : state_->clients)
      streams.push_back(std::move(c.stream));
    state_->clients.clear();
  }
  for (auto& s : streams)
    s->close();
  net::dispatch(state_->strand, [st = state_] { st->heartbeat_timer.cancel(); });
}

std::size_t live_events::clients() const {
  std::lock_guard lock(state_->mutex);
  // Streams whose client left are forgotten at the next event, heartbeat or new client.
  return static_cast<std::size_t>(
      std::count_if(state_->clients.begin(), state_->clients.end(),
                    [](const state::client& c) { return !c.stream->closed(); }));
}

void live_events::handle(http_request request, responder respond) {
  // The same site= and q= as the page the client shows: it is sent only what that page lists.
  std::shared_ptr<const std::map<std::string, site_look>> known;
  {
    std::lock_guard lock(state_->sites_mutex);
    known = state_->sites;
  }
  auto parsed = parse_news_query(request.query(), [&known](std::string_view name) {
    return known->count(std::string(name)) > 0;
  });
  if (auto* error = std::get_if<std::string>(&parsed))
    return respond(text_response(400, "Bad Request: " + *error));
  auto filter = std::get<news_query>(std::move(parsed));
  filter.limit = 0; // a stream has no length

  // Where the client left off: Last-Event-ID on a reconnect ("EPOCH:ID", as sent), or ?after=ID
  // from the page's first connection (it knows the newest id it shows, from this store). An id
  // that cannot be replayed (another store's, a malformed one, or one past the newest, as after a
  // restore from a backup) starts the client over with a reset: never silence, never a gap.
  std::int64_t after = 0;
  bool start_over = false;
  auto parse_id = [&](std::string_view text) {
    if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
      if (text.substr(0, colon) != state_->epoch)
        start_over = true;
      text.remove_prefix(colon + 1);
    }
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < 0)
      start_over = true;
    else
      after = v;
  };
  for (auto rest = request.query(); !rest.empty();) {
    auto parameter = rest.substr(0, rest.find('&'));
    rest.remove_prefix(std::min(rest.size(), parameter.size() + 1));
    if (parameter.rfind("after=", 0) == 0)
      parse_id(parameter.substr(6));
  }
  if (auto last = request.header("Last-Event-ID"))
    parse_id(*last);

  // The stream's slot first: a client over the streams' budget gets its 503 before anything is
  // set up for it.
  if (request.reserve_stream)
    if (auto refused = request.reserve_stream())
      return respond(std::move(*refused));

  // Registering and replaying happen under the lock that publishing takes, and each client
  // remembers the newest id it was sent, so no event is lost or sent twice between the replay
  // and the live stream. The store reads run on the worker pool, off the network threads.
  net::post(state_->pool, [st = state_, after, start_over, filter = std::move(filter),
                           respond = std::move(respond)]() mutable {
    auto stream = std::make_shared<event_stream>(max_backlog_bytes);
    stream->push(retry_chunk()); // reconnect after 3 s
    {
      std::lock_guard lock(st->mutex);
      if (st->stopped)
        return respond(text_response(503));
      state::client c{stream, 0, std::move(filter)};
      if ((after > 0 || start_over) && st->store) {
        try {
          // An id of another store needs no read: the client starts over from what is shown.
          // Rows after `after` may have been pruned (the client was away longer than the
          // retention), or never written here: it starts over too.
          start_over =
              start_over || after < st->store->pruned_through() || after > st->store->last_id();
          if (!start_over) {
            auto rows = st->store->since(after, max_replay);
            for (const auto& row : rows) {
              auto item = item_of(row);
              if (c.filter.matches(item))
                stream->push(st->event_for(item));
            }
            c.through = rows.empty() ? after : rows.back().id;
          }
        } catch (const std::exception& e) {
          log_warn("msg=\"live events: replay failed\" error=" + logfmt_quoted(e.what()));
        }
        // Read under the lock: a batch published after this snapshot comes after the reset
        // (its ids are past the snapshot's newest), one published before is in it.
        if (start_over && st->snapshot_source) {
          const auto snapshot = st->snapshot_source();
          c.through = snapshot->last_id;
          stream->push(st->reset_locked(*snapshot, c.filter));
        }
      }
      st->add_locked(std::move(c));
    }
    http_response res;
    res.content_type = "text/event-stream; charset=utf-8";
    res.with_header("Cache-Control", "no-store");
    res.with_header("X-Accel-Buffering", "no"); // tell nginx-style proxies not to buffer
    res.stream = std::move(stream);
    respond(std::move(res));
  });
}

} // namespace newsdesk::server
