// The pages people open and the endpoints operators probe: the routes newsdesk answers itself
// (the headlines as a page, JSON, Atom, JSON Feed and OPML, refreshes, health and static files),
// dispatched by the route table (route_table.hpp), which lists every route with its methods.
// The headline views take ?site=a,b&q=words&limit=N; POST /api/refresh takes ?site=NAME.
#pragma once

#include "server/app/config.hpp"
#include "server/app/route_table.hpp"
#include "server/http/http_message.hpp"
#include "server/views/representation_cache.hpp"

#include <atomic>
#include <chrono>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace boost::asio {} // namespace boost::asio

namespace newsdesk::server {

class news_service;
class news_page;
class static_files;
class low_priority_pool;
struct news_snapshot;
struct news_query;

class routes {
 public:
  // `public_url` ("https://news.example.org") makes feed links absolute; empty: taken from
  // the request's Host header.
  // The unfiltered views are built on `build_pool` (below serving's priority, apart from the
  // store's writes and /readyz); filtered ones are looked up and built on `filtered_pool`, so a
  // flood of them cannot slow the rest.
  // Which Host names newsdesk answers for, and so what the feeds' absolute links start with:
  // `public_url` when set; else the request's Host when `allowed_hosts` (host or host:port,
  // compared without case) is empty or lists it; else the first allowed host, or, with
  // `reject_unknown`, a 400 for any request naming another (Django's ALLOWED_HOSTS).
  struct host_policy {
    std::string public_url;
    std::vector<std::string> allowed_hosts;
    bool reject_unknown = false;
  };
  routes(news_service& news, std::shared_ptr<const news_page> page, const static_files& files,
         low_priority_pool& build_pool, low_priority_pool& filtered_pool, host_policy hosts);
  ~routes();

  // Serves pages from `page` from now on (a template reload). Thread-safe.
  void set_page(std::shared_ptr<const news_page> page);

  // Binds a route another component answers (/events, /metrics, ...); it gets the whole
  // request. Before the first request only (see router).
  void bind(route_id id, request_handler handler);
  // Binds a route answered with the JSON `body` returns, uncached (component status endpoints).
  void bind_json(route_id id, std::function<std::string()> body);

  // Any thread.
  void handle(http_request request, responder respond) const;

  // The headlines changed: the unfiltered views (the page, JSON, and the feeds when a public URL
  // is configured) are built for `snapshot` on the pool, before anyone asks. Changes coalesce:
  // one round of builds runs at a time, for the newest snapshot, and the next round starts no
  // sooner than the last one took (so builds take at most about half of a thread however fast
  // the headlines change); a snapshot replaced before its round started is never built. Until
  // a round ends the previous bytes answer. A site's own views are built when first asked for.
  void prebuild(const std::shared_ptr<const news_snapshot>& snapshot);

  // True once /news has bytes built for ready headlines (what readiness waits for): from then on
  // the fast path answers it at once, whatever changes later (the previous bytes answer until the
  // next ones are built). Any thread.
  bool views_built() const;

  // The representation cache's counters, in Prometheus text format (for /metrics).
  std::string cache_metrics() const;
  // At shutdown: no more background work is scheduled (views waiting to be polished are not).
  void stop();

 private:
  void serve_news(http_request request, const std::string& path, responder respond);
  // A view that the fast path could not answer: parsed, then found in the cache or built.
  void serve_view(const http_request& request, const std::string& path, const std::string& base,
                  responder respond);
  void serve_refresh(const http_request& request, responder respond);
  std::string base_url(const http_request& request) const;
  std::shared_ptr<const news_page> page() const;
  // The representation cache's key for a view (for /news: with its template and minute).
  std::string cache_key(const std::string& path, const news_query& query,
                        const std::string& base) const;
  // The slot ("path@base") and cache_key() of an unfiltered view, kept per network thread for
  // as long as they hold (a minute for /news, until a template reload), so that the fast path
  // builds no string. The reference lasts until this thread's next call.
  struct unfiltered_keys {
    std::string slot, key;
  };
  const unfiltered_keys& keys_of(const std::string& path, const std::string& base) const;
  // The unfiltered views as last built, one per `slot` (path and, for feeds, base URL): what the
  // fast path answers from while `version` is still the current one. When the view's `key` has
  // moved on (/news of a new minute), the old bytes are still answered and `renew` is set for
  // one caller in a while, which starts the new build.
  std::shared_ptr<const representation>
  current_view(const std::string& slot, const std::string& key, std::uint64_t version, bool& renew);
  // Compresses the current unfiltered views that were compressed quick again at the best
  // effort (on the build pool), each replacing its slot's bytes unless a newer build did.
  void polish_views();
  // How long the headlines stay still (no prebuild round) before the views are polished.
  static constexpr std::chrono::seconds polish_after{20};
  // What builds a view's bytes from `snapshot` (with the page template of now).
  representation_cache::builder view_builder(std::shared_ptr<const news_snapshot> snapshot,
                                             const std::string& path, const news_query& query,
                                             const std::string& base) const;
  // Builds a view of `snapshot` on the pool (unless already built) with nobody waiting; an
  // unfiltered view of ready headlines becomes the current one, or, when `done` is given, is
  // handed to it instead.
  void build_ahead(const std::shared_ptr<const news_snapshot>& snapshot, const std::string& path,
                   const news_query& query, const std::string& base,
                   representation_cache::handler done = {});
  void remember_view(const std::string& slot, const std::string& key, std::uint64_t version,
                     std::shared_ptr<const representation> bytes);
  // A round of prebuilds for the newest snapshot waiting, if any (on the pool).
  void prebuild_round();
  void prebuild_round_done(std::chrono::steady_clock::time_point started);

  news_service& news_;
  const static_files& files_;
  low_priority_pool& pool_; // builds the unfiltered views
  low_priority_pool& filtered_pool_;
  std::string public_url_;
  host_policy hosts_;
  const std::string* allowed_host(std::optional<std::string_view> host) const;
  router router_;

  mutable std::mutex page_mutex_; // guards page_
  std::shared_ptr<const news_page> page_;
  std::atomic<std::uint64_t> template_generation_{0}; // set_page() calls so far
  representation_cache cache_;
  struct current {
    std::string key;
    std::uint64_t version = 0;
    std::shared_ptr<const representation> bytes;
    // The build under way for a newer key or version, and when it started.
    std::string renewal_key;
    std::uint64_t renewal_version = 0;
    std::chrono::steady_clock::time_point renewal_started{};
  };
  static constexpr std::size_t max_current_views = 64;
  // Built views hold up to three descriptors each (config.hpp's body_descriptors): the pinned
  // ones (/news.json and the public_url's three feeds), those kept for the fast path and the
  // cache's others share that budget.
  static constexpr std::size_t max_pinned_views = 4;
  static constexpr std::size_t max_cached_views =
      body_descriptors / 3 - max_pinned_views - max_current_views;
  mutable std::mutex current_mutex_; // guards current_
  std::unordered_map<std::string, current> current_;
  std::atomic<std::uint64_t> fast_hits_{0}; // requests the fast path answered

  struct prebuild_timer; // the wait between two rounds (an asio timer, kept out of this header)
  std::unique_ptr<prebuild_timer> prebuild_timer_;
  bool stopped_ = false;                               // stop() was called (under prebuild_mutex_)
  mutable std::mutex prebuild_mutex_;                  // guards the prebuild fields below
  std::shared_ptr<const news_snapshot> prebuild_next_; // the newest snapshot not yet built
  bool prebuilding_ = false;                           // a round runs or waits for its timer
  std::uint64_t prebuild_rounds_ = 0;
  std::uint64_t prebuild_superseded_ = 0; // snapshots replaced before their round started
  std::chrono::steady_clock::duration prebuild_last_{}; // the last round's duration
  // When the last round ended. A start counts as one: a cold start's headlines change by the
  // second, and the best compression of a 3,000-site /news.json took 12 s of its first round.
  std::chrono::steady_clock::time_point prebuild_ended_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point prebuild_warned_{}; // the last "falling behind" line
};

} // namespace newsdesk::server
