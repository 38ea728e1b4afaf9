#include "server/app/routes.hpp"

#include "server/app/low_priority_pool.hpp"
#include "server/core/log.hpp"
#include "server/http/static_files.hpp"
#include "server/news/news_query.hpp"
#include "server/news/news_service.hpp"
#include "server/views/news_page.hpp"
#include "server/views/news_views.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>
#include <tuple>
#include <utility>

namespace newsdesk::server {

namespace net = boost::asio;

namespace {

http_response page_response(std::string content_type, std::string body) {
  http_response res;
  res.content_type = std::move(content_type);
  res.body = std::move(body);
  res.with_header("Cache-Control", "no-store");
  res.with_header("X-Content-Type-Options", "nosniff");
  return res;
}

// Host header characters allowed into feed URLs: a name or address and a port, nothing else.
bool plain_host(std::string_view host) {
  return !host.empty() && host.size() <= 255 && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '[' || c == ']';
  });
}

} // namespace

struct routes::prebuild_timer {
  explicit prebuild_timer(low_priority_pool& pool)
      : timer(pool.get_executor())
      , polish(pool.get_executor()) {}
  net::steady_timer timer;
  net::steady_timer polish; // polish_views() once the headlines are still for polish_after
};

routes::routes(news_service& news, std::shared_ptr<const news_page> page, const static_files& files,
               low_priority_pool& pool, low_priority_pool& filtered_pool, host_policy hosts)
    : news_(news)
    , files_(files)
    , pool_(pool)
    , filtered_pool_(filtered_pool)
    , public_url_(std::move(hosts.public_url))
    , hosts_(std::move(hosts))
    , page_(std::move(page))
    , cache_(representation_cache::default_max_bytes, max_cached_views)
    , prebuild_timer_(std::make_unique<prebuild_timer>(pool)) {
  while (!public_url_.empty() && public_url_.back() == '/')
    public_url_.pop_back();
  router_.bind(route_id::root, [](http_request, responder respond) {
    respond(text_response(302).with_header("Location", "/news"));
  });
  bind_json(route_id::healthz, [] { return std::string("{\"status\":\"ok\"}\n"); });
  router_.bind(route_id::static_files, [this](http_request request, responder respond) {
    const auto under = request.path().substr(route_of(route_id::static_files).path.size());
    respond(files_.serve(under, request));
  });
  for (auto id : {route_id::news, route_id::news_json, route_id::news_atom,
                  route_id::news_feed_json, route_id::opml})
    router_.bind(id, [this](http_request request, responder respond) {
      auto path = std::string(request.path());
      serve_news(std::move(request), path, std::move(respond));
    });
  router_.bind(route_id::refresh, [this](http_request request, responder respond) {
    serve_refresh(request, std::move(respond));
  });
}

routes::~routes() = default;

void routes::set_page(std::shared_ptr<const news_page> page) {
  {
    std::lock_guard lock(page_mutex_);
    page_ = std::move(page);
  }
  // Pages built with the old template: the next view rebuilds them (bumping the version key).
  template_generation_.fetch_add(1);
}

std::shared_ptr<const news_page> routes::page() const {
  std::lock_guard lock(page_mutex_);
  return page_;
}

void routes::bind(route_id id, request_handler handler) {
  router_.bind(id, std::move(handler));
}

void routes::bind_json(route_id id, std::function<std::string()> body) {
  router_.bind(id, [body = std::move(body)](http_request, responder respond) {
    respond(page_response(json_content_type, body()));
  });
}

// The allowed host `host` is (compared without case), or nullptr.
const std::string* routes::allowed_host(std::optional<std::string_view> host) const {
  if (!host)
    return nullptr;
  for (const auto& allowed : hosts_.allowed_hosts)
    if (iequals(allowed, *host))
      return &allowed;
  return nullptr;
}

std::string routes::base_url(const http_request& request) const {
  if (!public_url_.empty())
    return public_url_;
  auto host = request.header("Host");
  if (!hosts_.allowed_hosts.empty()) {
    // Only names the operator listed reach the feeds (and the cache's keys).
    const auto* allowed = allowed_host(host);
    return "http://" + (allowed ? *allowed : hosts_.allowed_hosts.front());
  }
  return "http://" + std::string(host && plain_host(*host) ? *host : std::string_view("localhost"));
}

void routes::handle(http_request request, responder respond) const {
  // Health checks and scrapers of a load balancer name an address, not the site: always let in.
  const auto path = request.path();
  const bool operational = path == "/healthz" || path == "/readyz" || path == "/metrics";
  if (hosts_.reject_unknown && !hosts_.allowed_hosts.empty() && !operational &&
      !allowed_host(request.header("Host")))
    return respond(text_response(400, "Bad Request: this service does not answer for that Host"));
  router_.handle(std::move(request), std::move(respond));
}

std::string routes::cache_key(const std::string& path, const news_query& query,
                              const std::string& base) const {
  auto key = view_key(path, query, base);
  if (path == "/news") {
    // The page shows ages in minutes ("3 min ago"), so it is also built once a minute (its
    // bytes and ETag change only when an age shown did), and again after a template reload.
    // Older pages are dropped with the next change or by the LRU.
    const auto minute = std::chrono::duration_cast<std::chrono::minutes>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    key += "#template=" + std::to_string(template_generation_.load()) +
           "#minute=" + std::to_string(minute);
  }
  return key;
}

const routes::unfiltered_keys& routes::keys_of(const std::string& path,
                                               const std::string& base) const {
  struct memo {
    const routes* owner;
    std::string path, base;
    std::int64_t minute;
    std::uint64_t generation;
    unfiltered_keys keys;
  };
  // A few entries: the unfiltered paths, and for feeds the Hosts clients named (the oldest
  // entry is replaced past that).
  constexpr std::size_t max_memos = 16;
  thread_local std::vector<memo> memos;
  thread_local std::size_t next_replaced = 0;
  const auto minute = std::chrono::duration_cast<std::chrono::minutes>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const auto generation = template_generation_.load();
  memo* found = nullptr;
  for (auto& m : memos)
    if (m.owner == this && m.path == path && m.base == base) {
      found = &m;
      break;
    }
  if (found && found->minute == minute && found->generation == generation)
    return found->keys;
  if (!found) {
    if (memos.size() < max_memos)
      found = &memos.emplace_back();
    else
      found = &memos[next_replaced++ % max_memos];
    found->owner = this;
    found->path = path;
    found->base = base;
    found->keys.slot = path + "@" + base;
  }
  found->minute = minute;
  found->generation = generation;
  found->keys.key = cache_key(path, news_query{}, base);
  return found->keys;
}

std::shared_ptr<const representation> routes::current_view(const std::string& slot,
                                                           const std::string& key,
                                                           std::uint64_t version, bool& renew) {
  std::lock_guard lock(current_mutex_);
  auto it = current_.find(slot);
  if (it == current_.end())
    return nullptr;
  auto& view = it->second;
  // Bytes of older headlines (or of the minute before, for /news) answer until the new ones are
  // built: serving never waits for a build. One renewal at a time for the newest key and
  // version; another after a while if that one's build failed.
  if (view.key != key || view.version < version) {
    const auto now = std::chrono::steady_clock::now();
    if (view.renewal_key != key || view.renewal_version < version ||
        now - view.renewal_started > std::chrono::seconds(5)) {
      view.renewal_key = key;
      view.renewal_version = version;
      view.renewal_started = now;
      renew = true;
    }
  }
  return view.bytes;
}

void routes::remember_view(const std::string& slot, const std::string& key, std::uint64_t version,
                           std::shared_ptr<const representation> bytes) {
  // What this replaces is freed after the lock is released: every /news request takes the lock,
  // and the build thread holding it may lose its core to anything (it runs below serving).
  decltype(current_) dropped;
  std::shared_ptr<const representation> replaced;
  std::lock_guard lock(current_mutex_);
  // Feeds have a slot per Host a client named: a bound, so made-up hosts cannot grow it.
  if (current_.size() >= max_current_views && !current_.count(slot))
    dropped.swap(current_);
  auto& view = current_[slot];
  if (view.version > version)
    return;
  view.key = key;
  view.version = version;
  replaced = std::exchange(view.bytes, std::move(bytes));
}

bool routes::views_built() const {
  std::lock_guard lock(current_mutex_);
  auto page = current_.find("/news@");
  return page != current_.end() && page->second.bytes != nullptr;
}

void routes::serve_news(http_request request, const std::string& path, responder respond) {
  const bool feed = path == "/news.atom" || path == "/news.feed.json" || path == "/opml";
  // Only the feeds name their own and the page's address.
  auto base = feed ? base_url(request) : std::string();
  if (!request.query().empty()) {
    // Filtered views are parsed, looked up and built at low priority (see low_priority_pool).
    return net::post(filtered_pool_.get_executor(),
                     [this, request = std::move(request), path, base = std::move(base),
                      respond = std::move(respond)]() mutable {
                       serve_view(request, path, base, std::move(respond));
                     });
  }
  // The fast path: an unfiltered view already built for the current headlines is answered here,
  // on the network thread, with no parsing, building or waiting. Until the headlines are ready
  // (a cold start) views go through serve_view, which waits for them.
  const auto snapshot = news_.snapshot();
  if (snapshot->ready) {
    bool renew = false;
    const auto& keys = keys_of(path, base);
    if (auto ready = current_view(keys.slot, keys.key, snapshot->version, renew)) {
      if (renew)
        build_ahead(snapshot, path, news_query{}, base);
      fast_hits_.fetch_add(1, std::memory_order_relaxed);
      return respond(ready->respond(request));
    }
  }
  serve_view(request, path, base, std::move(respond));
}

void routes::serve_view(const http_request& request, const std::string& path,
                        const std::string& base, responder respond) {
  auto parsed = parse_news_query(request.query(), news_.snapshot()->sites);
  if (auto* error = std::get_if<std::string>(&parsed))
    return respond(text_response(400, "Bad Request: " + *error));
  auto query = std::get<news_query>(std::move(parsed));
  const bool unfiltered = query.empty();
  // A story's view shows its whole coverage, also headlines its sites no longer list: read from
  // the store here, on the filtered views' pool.
  std::vector<news_item> coverage;
  if (query.story) {
    try {
      coverage = news_.story_headlines(query.story);
    } catch (const std::exception& e) {
      log_warn("msg=\"cannot read a story\" story=" + std::to_string(query.story) +
               " error=" + logfmt_quoted(e.what()));
      return respond(text_response(503, "Service Unavailable: the story cannot be read now"));
    }
    if (coverage.empty())
      return respond(text_response(404, "Not Found: no story " + std::to_string(query.story) +
                                            " (unknown, or older than the history kept)"));
  }
  news_.when_ready([this, path, query = std::move(query), base, request, unfiltered,
                    coverage = std::move(coverage), respond = std::move(respond)](
                       std::shared_ptr<const news_snapshot> snapshot) mutable {
    if (query.story)
      snapshot =
          std::make_shared<const news_snapshot>(with_coverage(*snapshot, std::move(coverage)));
    auto key = cache_key(path, query, base);
    // The unfiltered views are kept across changes (rebuilt by prebuild); /news is keyed by its
    // minute, so its older minutes are left to the LRU, with every filtered view. So are feeds
    // for a Host a client named (no public_url): made-up hosts must not pile up pinned views.
    const bool pinned =
        path != "/news" && query.empty() && (path == "/news.json" || !public_url_.empty());
    cache_.get(key, view_version(*snapshot, query), pinned,
               unfiltered ? net::any_io_executor(pool_.get_executor())
                          : net::any_io_executor(filtered_pool_.get_executor()),
               view_builder(snapshot, path, query, base),
               [this, path, key, slot = path + "@" + base, unfiltered, version = snapshot->version,
                ready = snapshot->ready, request = std::move(request),
                respond = std::move(respond)](std::shared_ptr<const representation> r) {
                 if (!r)
                   return respond(text_response(500));
                 if (unfiltered && ready)
                   remember_view(slot, key, version, r);
                 respond(r->respond(request));
               });
  });
}

void routes::prebuild(const std::shared_ptr<const news_snapshot>& snapshot) {
  std::lock_guard lock(prebuild_mutex_);
  if (prebuild_next_) {
    if (prebuild_next_->version >= snapshot->version)
      return;
    ++prebuild_superseded_;
  }
  prebuild_next_ = snapshot;
  if (!prebuilding_) {
    prebuilding_ = true;
    net::post(pool_.get_executor(), [this] { prebuild_round(); });
  }
}

void routes::prebuild_round() {
  std::shared_ptr<const news_snapshot> snapshot;
  {
    std::lock_guard lock(prebuild_mutex_);
    snapshot = std::move(prebuild_next_);
    prebuild_next_.reset();
    if (!snapshot) {
      prebuilding_ = false;
      return;
    }
  }
  const auto started = std::chrono::steady_clock::now();
  // The views everyone asks for. Feeds need a base URL: only with a configured public one.
  std::vector<std::pair<std::string, std::string>> views{{"/news.json", ""}, {"/news", ""}};
  if (!public_url_.empty()) {
    views.emplace_back("/news.atom", public_url_);
    views.emplace_back("/news.feed.json", public_url_);
  }
  // The round's views become the current ones together, when the last is built: a reader who
  // saw a headline in one (the JSON) finds it in the others (the page).
  struct round {
    std::mutex mutex;
    std::size_t left;
    std::vector<std::tuple<std::string, std::string, std::shared_ptr<const representation>>> built;
  };
  auto r = std::make_shared<round>();
  r->left = views.size();
  for (const auto& [path, base] : views)
    build_ahead(
        snapshot, path, news_query{}, base,
        [this, r, snapshot, started, slot = path + "@" + base,
         key = cache_key(path, news_query{}, base)](std::shared_ptr<const representation> b) {
          std::lock_guard lock(r->mutex);
          if (b)
            r->built.emplace_back(slot, key, std::move(b));
          if (--r->left > 0)
            return;
          if (snapshot->ready)
            for (auto& [s, k, bytes] : r->built)
              remember_view(s, k, snapshot->version, std::move(bytes));
          prebuild_round_done(started);
        });
}

void routes::prebuild_round_done(std::chrono::steady_clock::time_point started) {
  const auto took = std::chrono::steady_clock::now() - started;
  bool warn = false;
  std::uint64_t superseded;
  {
    std::lock_guard lock(prebuild_mutex_);
    ++prebuild_rounds_;
    prebuild_last_ = took;
    prebuild_ended_ = std::chrono::steady_clock::now();
    superseded = prebuild_superseded_;
    // Views compressed quick while the headlines moved are compressed again at the best effort
    // once no round has come for polish_after (setting the time cancels the earlier wait).
    // Under the lock: stop() cancels the wait from another thread.
    if (!stopped_) {
      prebuild_timer_->polish.expires_after(polish_after);
      prebuild_timer_->polish.async_wait([this](boost::system::error_code ec) {
        if (!ec)
          polish_views();
      });
    }
    // Rounds that take this long mean the page lags the headlines: say so, once a minute.
    const auto now = std::chrono::steady_clock::now();
    if (took > std::chrono::seconds(5) && now - prebuild_warned_ > std::chrono::minutes(1)) {
      prebuild_warned_ = now;
      warn = true;
    }
  }
  if (warn)
    log_warn("msg=\"views fall behind the headlines\" round_ms=" +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
             " superseded=" + std::to_string(superseded));
  // The next round waits at least as long as this one took: however fast the headlines
  // change, building their views takes at most about half of a thread.
  prebuild_timer_->timer.expires_after(
      std::max<std::chrono::steady_clock::duration>(took, std::chrono::milliseconds(100)));
  prebuild_timer_->timer.async_wait([this](boost::system::error_code ec) {
    if (!ec)
      prebuild_round();
  });
}

void routes::stop() {
  std::lock_guard lock(prebuild_mutex_);
  stopped_ = true;
  prebuild_timer_->polish.cancel(); // the build pool's threads end without waiting for it
}

void routes::polish_views() {
  std::vector<std::pair<std::string, std::shared_ptr<const representation>>> quick;
  {
    std::lock_guard lock(current_mutex_);
    for (const auto& [slot, view] : current_)
      if (view.bytes && view.bytes->quick())
        quick.emplace_back(slot, view.bytes);
  }
  for (const auto& [slot, bytes] : quick) {
    auto better = bytes->polished();
    std::shared_ptr<const representation> replaced; // freed after the lock, as in remember_view
    std::lock_guard lock(current_mutex_);
    // Unless a newer build took the slot meanwhile.
    if (auto it = current_.find(slot); it != current_.end() && it->second.bytes == bytes)
      replaced = std::exchange(it->second.bytes, std::move(better));
  }
}

representation_cache::builder routes::view_builder(std::shared_ptr<const news_snapshot> snapshot,
                                                   const std::string& path, const news_query& query,
                                                   const std::string& base) const {
  // Feeds name their own target as their self link, in the query's canonical spelling (never
  // the request's raw text).
  auto target = view_target(path, query);
  // Compression effort fits the rate of change: the best for the unfiltered views while the
  // headlines are still (their bytes are then sent many times over), quick while they change
  // (polish_views() compresses them again once they are still), and for views built on request
  // (a site's own, a search).
  compression effort = compression::quick;
  if (query.empty()) {
    std::lock_guard lock(prebuild_mutex_);
    if (std::chrono::steady_clock::now() - prebuild_ended_ > polish_after)
      effort = compression::best;
  }
  return [page = page(), snapshot = std::move(snapshot), path, query, base,
          target = std::move(target), effort] {
    auto content = build_view(*page, *snapshot, path, query, base, target);
    content.effort = effort;
    return content;
  };
}

void routes::build_ahead(const std::shared_ptr<const news_snapshot>& snapshot,
                         const std::string& path, const news_query& query, const std::string& base,
                         representation_cache::handler done) {
  auto key = cache_key(path, query, base);
  cache_.get(key, view_version(*snapshot, query), path != "/news" && query.empty(),
             pool_.get_executor(), view_builder(snapshot, path, query, base),
             [this, slot = path + "@" + base, key, version = snapshot->version,
              remember = snapshot->ready && query.empty(),
              done = std::move(done)](std::shared_ptr<const representation> r) {
               if (done)
                 return done(std::move(r));
               if (r && remember)
                 remember_view(slot, key, version, std::move(r));
             });
}

std::string routes::cache_metrics() const {
  auto c = cache_.stats();
  std::string out;
  auto line = [&out](const char* name, const char* help, const char* type, std::uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(v) + "\n";
  };
  line("newsdesk_representation_hits_total",
       "Requests for /news, /news.json or a feed answered from bytes already built.", "counter",
       c.hits + fast_hits_.load(std::memory_order_relaxed));
  line("newsdesk_representation_misses_total",
       "Requests that waited for their representation to be built.", "counter", c.misses);
  line("newsdesk_representation_builds_total", "Representations built (rendered and compressed).",
       "counter", c.builds);
  line("newsdesk_representation_superseded_total",
       "Versions of a representation never built: a newer one was asked for while it waited.",
       "counter", c.superseded);
  line("newsdesk_representation_unchanged_total",
       "Rebuilds that produced the same bytes (kept, same ETag).", "counter", c.unchanged);
  line("newsdesk_representation_evictions_total",
       "Filtered representations dropped to stay within the cache's bytes.", "counter",
       c.evictions);
  line("newsdesk_representation_entries", "Representations held.", "gauge", c.entries);
  line("newsdesk_representation_bytes", "Bytes held by representations, all encodings.", "gauge",
       c.bytes);
  std::uint64_t rounds, superseded;
  double last_seconds;
  {
    std::lock_guard lock(prebuild_mutex_);
    rounds = prebuild_rounds_;
    superseded = prebuild_superseded_;
    last_seconds = std::chrono::duration<double>(prebuild_last_).count();
  }
  line("newsdesk_view_build_rounds_total",
       "Rounds of building the unfiltered views for new headlines.", "counter", rounds);
  line("newsdesk_view_build_superseded_total",
       "Headline changes whose views were never built: a newer change came first.", "counter",
       superseded);
  out += "# HELP newsdesk_view_build_round_seconds How long the last round of view builds took.\n"
         "# TYPE newsdesk_view_build_round_seconds gauge\nnewsdesk_view_build_round_seconds " +
         std::to_string(last_seconds) + "\n";
  return out;
}

void routes::serve_refresh(const http_request& request, responder respond) {
  std::optional<std::string> site;
  auto query = request.query();
  if (!query.empty()) {
    if (query.rfind("site=", 0) != 0 || query.find('&') != std::string_view::npos)
      return respond(text_response(400, "Bad Request: expected ?site=NAME or nothing"));
    site = form_decode(query.substr(5));
  }
  nlohmann::json started = nlohmann::json::array(), running = nlohmann::json::array(),
                 too_soon = nlohmann::json::array();
  for (const auto& [name, outcome] : news_.refresh_now(site)) {
    switch (outcome) {
    case news_service::trigger::started:
      started.push_back(name);
      break;
    case news_service::trigger::already_running:
      running.push_back(name);
      break;
    case news_service::trigger::too_soon:
      too_soon.push_back(name);
      break;
    case news_service::trigger::unknown_site:
      return respond(text_response(404, "Not Found: no such site"));
    }
  }
  nlohmann::json body = {
      {"started", started}, {"already_running", running}, {"rate_limited", too_soon}};
  auto res = page_response(json_content_type, body.dump() + "\n");
  res.status = started.empty() && running.empty() && !too_soon.empty() ? 429 : 202;
  if (res.status == 429)
    res.with_header("Retry-After", "10");
  respond(std::move(res));
}

} // namespace newsdesk::server
