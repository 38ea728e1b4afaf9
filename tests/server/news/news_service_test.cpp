#include "server/news/news_service.hpp"

#include "server/news/news_clock.hpp"
#include "server/store/sqlite_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>

using namespace newsdesk::server;

// ---- the refresh policy, with a manual clock and a renderer the test answers by hand ----------

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Finds one headline per page, named after the page's URL, and none on a page whose URL says
// "empty": what a refresh found is then decided by the URL the test's render answers with.
class url_scraper final : public newsdesk::scrapers::scraper {
 public:
  const newsdesk::scrapers::site_info& site() const override { return info_; }
  std::vector<newsdesk::scrapers::headline> extract(const newsdesk::scrapers::dom::document&,
                                                    std::string_view page_url) const override {
    if (page_url.find("empty") != std::string_view::npos)
      return {};
    return {{"Headline of " + std::string(page_url), std::string(page_url), ""}};
  }

 private:
  newsdesk::scrapers::site_info info_{"fake", "Fake", "https://fake.test/", "#123456"};
};

// Renders nothing by itself: each render waits until the test answers it.
class manual_renderer final : public renderer {
 public:
  std::string_view name() const override { return "manual"; }
  void render(render_request request, std::function<void(render_result)> done) override {
    std::lock_guard lock(mutex_);
    ++started_;
    pending_.push_back({std::move(request), std::move(done)});
  }

  std::size_t started() const {
    std::lock_guard lock(mutex_);
    return started_;
  }
  std::size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }
  // Answers the oldest render in flight with a page at `url` (`html`: its bytes).
  void succeed(const std::string& url, std::string html = "<html><body><p>page</p></body></html>") {
    render_result r;
    r.html = std::move(html);
    r.url = url;
    answer(std::move(r));
  }
  void fail(failure_kind kind, const std::string& message) {
    render_result r;
    r.failure = kind;
    r.message = message;
    answer(std::move(r));
  }

 private:
  struct call {
    render_request request;
    std::function<void(render_result)> done;
  };
  void answer(render_result r) {
    call c;
    {
      std::lock_guard lock(mutex_);
      REQUIRE(!pending_.empty());
      c = std::move(pending_.front());
      pending_.pop_front();
    }
    c.done(std::move(r));
  }

  mutable std::mutex mutex_;
  std::deque<call> pending_;
  std::size_t started_ = 0;
};

// One site ("a") on a manual renderer and a manual clock. The service posts render starts to
// the io_context, which the test runs on its own thread (run()); pages are parsed on a
// one-thread pool, whose completion the test waits for through on_refresh_done.
struct policy_rig {
  boost::asio::io_context ioc;
  boost::asio::thread_pool pool{1};
  manual_clock clock;
  manual_renderer fake;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> outcomes; // each finished refresh's failure kind, "" on success
  std::unique_ptr<news_service> service;

  // No jitter on intervals and an hour between refreshes; the cold-start wait ends with the
  // first advance (nobody waits on it here), so the only wait pending is the one a test is about.
  static refresh_settings quiet() {
    refresh_settings s;
    s.interval = 1h;
    s.jitter = 0;
    s.cold_start_wait = 0ms;
    return s;
  }

  explicit policy_rig(refresh_settings settings = quiet(), std::uint64_t seed = 1,
                      headline_store* store = nullptr) {
    site_config site;
    site.name = "a";
    site.scraper = std::make_shared<url_scraper>();
    site.url = "https://a.test/";
    site.renderer = "manual";
    site.wait = 0ms;
    site.timeout = 30s;
    site.interval = settings.interval;
    service = std::make_unique<news_service>(
        ioc, std::vector<site_config>{site}, std::map<std::string, renderer*>{{"manual", &fake}},
        pool, pool.get_executor(), store, settings, news_service_seams{&clock, seed});
    service->on_refresh_done([this](const site_config&, milliseconds, failure_kind kind) {
      std::lock_guard lock(mutex);
      outcomes.emplace_back(kind == failure_kind::none ? "" : to_string(kind));
      changed.notify_all();
    });
    service->start();
    advance(0ms); // the first refresh is due at once
  }
  ~policy_rig() {
    service->stop();
    pool.join(); // a parse still queued finishes before the service goes
    service.reset();
  }

  // Returns once the worker pool has run everything posted to it so far (it has one thread).
  void drain_pool() {
    std::promise<void> reached;
    boost::asio::post(pool, [&] { reached.set_value(); });
    reached.get_future().wait();
  }
  // Runs the renders the service has posted.
  void run() {
    ioc.restart();
    ioc.poll();
  }
  void advance(milliseconds by) {
    clock.advance(by);
    run();
  }
  // Waits (with a generous backstop, not as synchronisation) until `n` refreshes have finished.
  bool finished(std::size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return outcomes.size() >= n; });
  }
  std::string outcome(std::size_t i) {
    std::lock_guard lock(mutex);
    return i < outcomes.size() ? outcomes[i] : "(none)";
  }
  // The one wait pending: the site's next refresh or retry.
  milliseconds next_wait() {
    auto waits = clock.pending();
    REQUIRE(waits.size() == 1);
    return waits.front();
  }
  site_report report() { return service->snapshot()->sites.at(0); }
};

} // namespace

TEST_CASE("a manual refresh while a render is in flight starts no second render") {
  policy_rig r;
  REQUIRE(r.fake.in_flight() == 1);
  auto result = r.service->refresh_now("a");
  REQUIRE(result.size() == 1);
  CHECK(result[0].second == news_service::trigger::already_running);
  r.run();
  CHECK(r.fake.started() == 1);

  r.fake.succeed("https://a.test/1");
  REQUIRE(r.finished(1));
  CHECK(r.service->refresh_now("a").at(0).second == news_service::trigger::started);
  r.run();
  CHECK(r.fake.started() == 2);
}

TEST_CASE("transient failures are retried with full jitter under the exponential bound, then "
          "the refresh fails for good") {
  auto settings = policy_rig::quiet();
  settings.retries = 3;
  settings.retry_base = 1000ms;
  settings.retry_max = 3000ms;
  // The bound for retry k (1-based): min(retry_max, retry_base * 2^(k-1)).
  const std::vector<milliseconds> bounds{1000ms, 2000ms, 3000ms};
  std::set<long long> seen;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    policy_rig r(settings, seed);
    for (std::size_t k = 0; k < bounds.size(); ++k) {
      r.fake.fail(failure_kind::timeout, "Splash timed out after 30 s");
      auto delay = r.next_wait();
      CHECK(delay >= 0ms);
      CHECK(delay <= bounds[k]);
      seen.insert(delay.count());
      r.advance(delay);
      REQUIRE(r.fake.started() == k + 2);
    }
    r.fake.fail(failure_kind::timeout, "Splash timed out after 30 s");
    REQUIRE(r.finished(1));
    CHECK(r.outcome(0) == "timeout");
    CHECK(r.fake.started() == 4); // the first try and three retries
    CHECK(r.report().error == "Splash timed out after 30 s");
  }
  // Full jitter: the delays are spread out, not pinned to the bound.
  CHECK(seen.size() > 30);
}

TEST_CASE("a failure that is not transient is not retried") {
  auto settings = policy_rig::quiet();
  settings.retries = 3;
  policy_rig r(settings);
  r.fake.fail(failure_kind::renderer_refused, "Splash refused the URL");
  REQUIRE(r.finished(1));
  CHECK(r.outcome(0) == "renderer_refused");
  CHECK(r.fake.started() == 1);
  CHECK(r.next_wait() == 2h); // the next refresh, after the failure back-off
}

TEST_CASE("a failed refresh keeps the last good headlines, marked stale with the error") {
  auto settings = policy_rig::quiet();
  settings.retries = 0;
  policy_rig r(settings);
  r.fake.succeed("https://a.test/good");
  REQUIRE(r.finished(1));
  REQUIRE(r.report().ok);
  REQUIRE(r.service->snapshot()->headlines.size() == 1);

  r.advance(1h);
  REQUIRE(r.fake.in_flight() == 1);
  r.fake.fail(failure_kind::site_unreachable, "Splash answered 502");
  REQUIRE(r.finished(2));
  auto snap = r.service->snapshot();
  REQUIRE(snap->headlines.size() == 1);
  CHECK(snap->headlines[0].headline.title == "Headline of https://a.test/good");
  CHECK(snap->headlines[0].headline.site == "a");
  CHECK_FALSE(snap->sites[0].ok);
  CHECK(snap->sites[0].stale);
  CHECK(snap->sites[0].error == "Splash answered 502");

  // A site that never had headlines is failed, not stale.
  policy_rig cold(settings);
  cold.fake.fail(failure_kind::site_unreachable, "Splash answered 502");
  REQUIRE(cold.finished(1));
  CHECK_FALSE(cold.report().ok);
  CHECK_FALSE(cold.report().stale);
}

TEST_CASE("a site that keeps failing waits interval * 2^failures, capped, until it succeeds") {
  auto settings = policy_rig::quiet();
  settings.retries = 0;
  settings.interval = 60s;
  settings.max_backoff_factor = 4;
  policy_rig r(settings);
  // A page without headlines fails the refresh without a retry, like any lasting failure.
  const std::vector<milliseconds> expected{120s, 240s, 240s};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    r.fake.succeed("https://a.test/empty");
    REQUIRE(r.finished(i + 1));
    CHECK(r.outcome(i) == "no_headlines");
    CHECK(r.next_wait() == expected[i]);
    r.advance(expected[i]);
    REQUIRE(r.fake.in_flight() == 1);
  }
  r.fake.succeed("https://a.test/back");
  REQUIRE(r.finished(4));
  CHECK(r.outcome(3) == "");
  CHECK(r.next_wait() == 60s); // success resets the back-off
}

TEST_CASE("interval jitter keeps each wait within interval +/- jitter") {
  auto settings = policy_rig::quiet();
  settings.interval = 100s;
  settings.jitter = 0.1;
  std::set<long long> seen;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    policy_rig r(settings, seed);
    r.fake.succeed("https://a.test/1");
    REQUIRE(r.finished(1));
    auto wait = r.next_wait();
    CHECK(wait >= 90s);
    CHECK(wait <= 110s);
    seen.insert(wait.count());
  }
  CHECK(seen.size() > 1);
}

TEST_CASE("manual refreshes of a site are limited to one per manual_min_interval") {
  auto settings = policy_rig::quiet();
  settings.manual_min_interval = 10s;
  policy_rig r(settings);
  r.fake.succeed("https://a.test/1");
  REQUIRE(r.finished(1));

  CHECK(r.service->refresh_now("a").at(0).second == news_service::trigger::started);
  r.run();
  r.fake.succeed("https://a.test/2");
  REQUIRE(r.finished(2));
  CHECK(r.service->refresh_now("a").at(0).second == news_service::trigger::too_soon);
  r.advance(9'999ms);
  CHECK(r.service->refresh_now("a").at(0).second == news_service::trigger::too_soon);
  r.advance(1ms);
  CHECK(r.service->refresh_now("a").at(0).second == news_service::trigger::started);
  r.run();
  CHECK(r.fake.started() == 3);

  auto unknown = r.service->refresh_now("nosuch");
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].second == news_service::trigger::unknown_site);
}

TEST_CASE("history past the retention is pruned at start and every prune period after, while "
          "what a site shows now stays") {
  auto owned = sqlite_store::open(":memory:");
  auto& store = *owned;
  const auto day = std::chrono::duration_cast<milliseconds>(24h).count();
  const std::int64_t start_ms =
      std::chrono::duration_cast<milliseconds>(manual_clock().system_now().time_since_epoch())
          .count();
  auto seen = [&](const char* url, std::int64_t at) {
    store.record_refresh("a", {{"Story", url, "a"}}, {.now_ms = at});
  };
  seen("https://a.test/gone-at-start", start_ms - 11 * day);
  // Within the retention at start, past it half an hour later.
  seen("https://a.test/gone-within-the-hour", start_ms - 10 * day + 30 * 60 * 1000);
  seen("https://a.test/current", start_ms - 20 * day); // old, but what the site shows now

  auto urls = [&] {
    std::set<std::string> out;
    for (const auto& row : store.since(0, 100))
      out.insert(row.url);
    return out;
  };
  auto settings = policy_rig::quiet();
  settings.retention = 10 * 24h;
  policy_rig r(settings, 1, &store);
  r.drain_pool();
  CHECK(urls() ==
        std::set<std::string>{"https://a.test/gone-within-the-hour", "https://a.test/current"});

  r.advance(news_service::prune_period - 1ms);
  r.drain_pool();
  CHECK(urls().count("https://a.test/gone-within-the-hour") == 1);
  r.advance(1ms);
  r.drain_pool();
  CHECK(urls() == std::set<std::string>{"https://a.test/current"});
}

namespace {
// A store whose writes fail while `full` is set, as SQLite's do on a full disk ("database or
// disk is full"); reads and everything else go to a real in-memory SQLite store.
class filling_store final : public headline_store {
 public:
  std::atomic<bool> full{false};

  refresh_written record_refresh(std::string_view site,
                                 const std::vector<newsdesk::scrapers::headline>& found,
                                 const refresh_record& record) override {
    if (full)
      throw store_error("headline store test.db: cannot write: database or disk is full");
    return real_->record_refresh(site, found, record);
  }
  void record_failure(std::string_view site, std::string_view error,
                      const refresh_record& record) override {
    if (full)
      throw store_error("headline store test.db: cannot write: database or disk is full");
    real_->record_failure(site, error, record);
  }
  std::vector<stored_headline> current(std::string_view site) const override {
    return real_->current(site);
  }
  std::vector<site_state> sites() const override { return real_->sites(); }
  std::vector<stored_headline> since(std::int64_t after, std::size_t limit) const override {
    return real_->since(after, limit);
  }
  std::int64_t last_id() const override { return real_->last_id(); }
  std::vector<stored_headline> story_headlines(std::int64_t story,
                                               std::size_t limit) const override {
    return real_->story_headlines(story, limit);
  }
  std::vector<logged_merge> merges_after(std::int64_t after, std::size_t limit) const override {
    return real_->merges_after(after, limit);
  }
  std::int64_t last_merge_seq() const override { return real_->last_merge_seq(); }
  std::size_t prune(std::int64_t older_than_ms) override { return real_->prune(older_than_ms); }
  std::int64_t pruned_through() const override { return real_->pruned_through(); }
  const std::string& epoch() const override { return real_->epoch(); }
  const std::string& location() const override { return real_->location(); }

 private:
  std::unique_ptr<sqlite_store> real_ = sqlite_store::open(":memory:");
};
} // namespace

TEST_CASE("a store that cannot be written is reported until a write succeeds again") {
  filling_store store;
  auto settings = policy_rig::quiet();
  settings.manual_min_interval = 0ms;
  policy_rig r(settings, 1, &store);
  r.fake.succeed("https://a.test/1");
  REQUIRE(r.finished(1));
  CHECK(r.service->store_write_error().empty());

  store.full = true;
  REQUIRE(r.service->refresh_now("a").at(0).second == news_service::trigger::started);
  r.run();
  r.fake.succeed("https://a.test/2");
  REQUIRE(r.finished(2));
  CHECK(r.service->store_write_error().find("database or disk is full") != std::string::npos);
  // The page still shows what was found.
  REQUIRE(!r.service->snapshot()->headlines.empty());
  CHECK(r.service->snapshot()->headlines[0].headline.url == "https://a.test/2");

  store.full = false;
  REQUIRE(r.service->refresh_now("a").at(0).second == news_service::trigger::started);
  r.run();
  r.fake.succeed("https://a.test/3");
  REQUIRE(r.finished(3));
  CHECK(r.service->store_write_error().empty());
}

TEST_CASE("refreshes that wait for a render slot past half their interval are counted behind") {
  boost::asio::io_context ioc;
  boost::asio::thread_pool pool{1};
  manual_clock clock;
  manual_renderer fake;
  auto settings = policy_rig::quiet();
  settings.max_concurrent_renders = 1;
  site_refresh refresh(ioc, pool.get_executor(), clock, {{"manual", &fake}}, settings, 1);
  auto site = [](std::string name) {
    auto s = std::make_shared<site_config>();
    s->name = std::move(name);
    s->scraper = std::make_shared<url_scraper>();
    s->url = "https://" + s->name + ".test/";
    s->renderer = "manual";
    s->interval = 10s;
    return s;
  };
  std::atomic<int> done{0};
  for (const auto* name : {"a", "b", "c"})
    refresh.run(
        site(name), [] { return true; }, [&](refresh_result) { ++done; });
  ioc.poll();
  REQUIRE(fake.in_flight() == 1);
  CHECK(refresh.stats().waiting == 2);

  // "b" waits 4 s (under half of 10 s), "c" 4 + 3 s (over it).
  clock.advance(4s);
  CHECK(refresh.stats().oldest_wait == 4s);
  fake.succeed("https://a.test/1");
  ioc.restart();
  ioc.poll();
  REQUIRE(fake.in_flight() == 1);
  CHECK(refresh.stats().behind == 0);
  clock.advance(3s);
  fake.succeed("https://b.test/1");
  ioc.restart();
  ioc.poll();
  REQUIRE(fake.in_flight() == 1);
  auto stats = refresh.stats();
  CHECK(stats.behind == 1);
  CHECK(stats.waiting == 0);
  CHECK(stats.oldest_wait == 0ms);
  fake.succeed("https://c.test/1");
  pool.join();
  CHECK(done == 3);
}

TEST_CASE("renders wait while the pages rendered and not yet parsed fill the parse queue") {
  // Parsing is held (its executor is not run) while pages come back: renders stop once the
  // queue holds max_parse_queue_bytes, with render slots free, and go on as pages are parsed.
  boost::asio::io_context ioc;
  boost::asio::io_context parse; // the scrape executor, run only when the test says so
  manual_clock clock;
  manual_renderer fake;
  auto settings = policy_rig::quiet();
  settings.max_concurrent_renders = 4;
  const std::string page(10'000, 'x');
  settings.max_parse_queue_bytes = 25'000; // two pages fit, the third fills it
  site_refresh refresh(ioc, parse.get_executor(), clock, {{"manual", &fake}}, settings, 1);
  std::atomic<int> done{0};
  for (int i = 0; i < 12; ++i) {
    auto s = std::make_shared<site_config>();
    s->name = "s" + std::to_string(i);
    s->scraper = std::make_shared<url_scraper>();
    s->url = "https://" + s->name + ".test/";
    s->renderer = "manual";
    s->interval = 1h;
    refresh.run(
        s, [] { return true; }, [&](refresh_result) { ++done; });
  }
  ioc.poll();
  REQUIRE(fake.in_flight() == 4); // the render slots
  // Pages come back and wait for a parse: each frees a slot, and the next render starts only
  // while the queue has room.
  for (int i = 0; i < 4; ++i) {
    fake.succeed("https://s.test/" + std::to_string(i), page);
    ioc.restart();
    ioc.poll();
  }
  auto stats = refresh.stats();
  CHECK(stats.parse_pages == 4);
  CHECK(stats.parse_bytes == 40'000);
  // Two pages were under the bound when their slots freed (two more renders), the third and
  // fourth over it (none): 4 + 2 renders in all, 2 in flight, with 2 slots free.
  CHECK(fake.started() == 6);
  CHECK(fake.in_flight() == 2);
  CHECK(stats.waiting == 6);
  CHECK(stats.parse_full == 1);
  // What is in flight comes back too: the queue takes it (bounded by the slots), nothing starts.
  fake.succeed("https://s.test/4", page);
  fake.succeed("https://s.test/5", page);
  ioc.restart();
  ioc.poll();
  CHECK(fake.started() == 6);
  CHECK(fake.in_flight() == 0);
  CHECK(refresh.stats().parse_bytes == 60'000);
  // Parsing one page leaves 50,000 bytes: still full. Parsing the rest lets renders start.
  parse.run_one();
  ioc.restart();
  ioc.poll();
  CHECK(fake.started() == 6);
  CHECK(refresh.stats().parse_bytes == 50'000);
  parse.restart();
  parse.run();
  ioc.restart();
  ioc.poll();
  CHECK(refresh.stats().parse_bytes == 0);
  CHECK(fake.started() == 10);
  CHECK(fake.in_flight() == 4);
  CHECK(done == 6);
  while (fake.in_flight() > 0) {
    fake.succeed("https://s.test/more", page);
    ioc.restart();
    ioc.poll();
    parse.restart();
    parse.run();
    ioc.restart();
    ioc.poll();
  }
  CHECK(done == 12);
  CHECK(refresh.stats().parse_bytes == 0);
}
