#include "server/news/news_service.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/feed.hpp"
#include "scrapers/text.hpp"

#include "server/core/log.hpp"
#include "server/news/headline_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

namespace newsdesk::server {

using std::chrono::milliseconds;

namespace {

// CPU time this thread has used: what a parse costs, whatever else the machine is doing.
std::chrono::milliseconds thread_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

// This process's name in the schedule's leases: readable in the database (host and pid), and
// unique even when a restarted process gets the same pid.
std::string make_instance_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0)
    std::snprintf(host, sizeof host, "unknown");
  std::random_device random;
  char tail[16];
  std::snprintf(tail, sizeof tail, "%08x", random());
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + tail;
}

news_item item_of(const stored_headline& row) {
  return {{row.title, row.url, row.site}, row.id, row.first_seen_ms, false};
}

} // namespace

void sort_items(std::vector<news_item>& items) {
  // Stable: headlines without a store id (no store) keep their site's order as well.
  std::stable_sort(items.begin(), items.end(), [](const news_item& a, const news_item& b) {
    if (a.first_seen_ms != b.first_seen_ms)
      return a.first_seen_ms > b.first_seen_ms;
    return a.id < b.id;
  });
}

bool is_transient(render_failure failure) {
  switch (failure) {
  case render_failure::unreachable:
  case render_failure::timeout:
  case render_failure::upstream:
    return true;
  default:
    return false;
  }
}

// One site's state. Guarded by news_service::mutex_.
struct news_service::slot {
  slot(news_clock& clock, site_config s)
      : site(std::make_shared<const site_config>(std::move(s)))
      , timer(clock.make_timer())
      , lease_timer(clock.make_timer()) {}
  // Replaced whole by reconfigure(); a refresh in flight keeps the one it started with.
  std::shared_ptr<const site_config> site;
  std::unique_ptr<news_clock::timer> timer; // the next refresh, or the next retry
  bool in_flight = false;
  bool removed = false;      // reconfigure() dropped the site: results in flight are ignored
  bool refresh_next = false; // the settings changed during a refresh: refresh again at once
  bool tried = false;        // at least one refresh has finished
  int attempt = 0;           // retries used by the refresh in flight
  int failures_in_row = 0;   // refreshes that failed for good
  // Shared stores: this instance holds the site's lease (a render runs under it); lease_lost:
  // a renewal found another owner, so the result will be dropped.
  bool leased = false;
  bool lease_lost = false;
  std::unique_ptr<news_clock::timer> lease_timer;
  std::chrono::steady_clock::time_point refresh_started;
  std::int64_t last_manual_ms = 0;
  site_report report;
  std::vector<news_item> items;
};

news_service::news_service(boost::asio::io_context& ioc, std::vector<site_config> sites,
                           std::map<std::string, renderer*> renderers,
                           boost::asio::thread_pool& parse_pool,
                           boost::asio::thread_pool& scrape_pool, headline_store* store,
                           refresh_settings settings, news_service_seams seams)
    : ioc_(ioc)
    , own_clock_(seams.clock ? nullptr : std::make_unique<asio_clock>(ioc))
    , clock_(seams.clock ? seams.clock : own_clock_.get())
    , renderers_(std::move(renderers))
    , parse_pool_(parse_pool)
    , scrape_pool_(scrape_pool)
    , store_(store)
    , cluster_(store ? store->cluster() : nullptr)
    , settings_(settings)
    , owner_(make_instance_name())
    , cold_start_timer_(clock_->make_timer())
    , random_(seams.seed ? *seams.seed : std::random_device{}()) {
  std::lock_guard lock(mutex_);
  for (auto& site : sites) {
    if (!renderers_.count(site.renderer))
      throw std::invalid_argument("site '" + site.name + "' uses the " + site.renderer +
                                  " renderer, which is not running");
    slots_.push_back(make_slot_locked(std::move(site)));
  }
  publish_snapshot_locked();
}

news_service::~news_service() {
  // Not stop(): the views still waiting belong to routes that may be gone by now; their
  // responders are dropped (application stops the service, answering them, before this).
  std::lock_guard lock(mutex_);
  stop_locked();
  ready_waiters_.clear();
}

void news_service::on_new_headlines(std::function<void(const std::vector<news_item>&)> listener) {
  listener_ = std::move(listener);
}

void news_service::on_snapshot(std::function<void(std::shared_ptr<const news_snapshot>)> listener) {
  snapshot_listener_ = std::move(listener);
}

void news_service::on_refresh_done(
    std::function<void(const site_config&, std::chrono::milliseconds, std::string_view)> listener) {
  refresh_listener_ = std::move(listener);
}

std::int64_t news_service::now_ms() const {
  return std::chrono::duration_cast<milliseconds>(clock_->system_now().time_since_epoch()).count();
}

milliseconds news_service::jittered(milliseconds base) {
  std::uniform_real_distribution<double> spread(1.0 - settings_.jitter, 1.0 + settings_.jitter);
  return milliseconds(static_cast<long long>(static_cast<double>(base.count()) * spread(random_)));
}

news_service::slot_ptr news_service::make_slot_locked(site_config site) {
  auto s = std::make_shared<slot>(*clock_, std::move(site));
  const auto& c = *s->site;
  s->report = {c.name, c.display_name, c.colour, c.url, c.renderer};
  return s;
}

void news_service::load_stored_locked(slot& s) {
  // Serve what the store has at once: the last successful refresh of the site.
  if (!store_)
    return;
  for (const auto& row : store_->current(s.site->name)) {
    s.items.push_back(item_of(row));
    s.items.back().rank = s.items.size() - 1;
  }
  for (const auto& st : store_->sites())
    if (st.site == s.site->name) {
      s.report.last_success_ms = st.last_success_ms;
      s.report.last_attempt_ms = st.last_attempt_ms;
      s.report.elapsed = milliseconds(st.last_elapsed_ms);
    }
  s.report.headline_count = s.items.size();
  s.report.ok = !s.items.empty();
}

void news_service::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  for (auto& s : slots_)
    load_stored_locked(*s);
  // What is stored now is shown as it is; only headlines committed from here on are new.
  if (cluster_)
    published_through_ = store_->last_id();
  publish_snapshot_locked();
  // Every site starts at once; the render cap queues what Splash could not take, so a cold
  // start takes about as long as the slowest site.
  for (auto& s : slots_)
    schedule(s, milliseconds(0));

  prune_timer_ = clock_->make_timer();
  prune_history_locked();
}

// A cold start with nothing stored: each waiting view is answered cold_start_wait after it
// arrived at the latest, with what there is by then. Waiters are in arrival order, so their
// deadlines are too: one timer waits for the first.
void news_service::arm_cold_start_locked() {
  if (ready_waiters_.empty() || stopped_)
    return;
  const auto left = std::chrono::duration_cast<milliseconds>(ready_waiters_.front().deadline -
                                                             clock_->steady_now());
  cold_start_timer_->wait(std::max(left, milliseconds(0)), [this] {
    std::vector<ready_waiter> due;
    std::shared_ptr<const news_snapshot> snap;
    {
      std::lock_guard guard(mutex_);
      const auto now = clock_->steady_now();
      while (!ready_waiters_.empty() && ready_waiters_.front().deadline <= now) {
        due.push_back(std::move(ready_waiters_.front()));
        ready_waiters_.pop_front();
      }
      snap = snapshot_;
      arm_cold_start_locked();
    }
    for (auto& w : due)
      w.done(snap);
  });
}

void news_service::stop() {
  // Views still waiting for a cold start are answered with what there is: a shutdown leaves no
  // request without a response.
  std::deque<ready_waiter> waiting;
  std::shared_ptr<const news_snapshot> snap;
  {
    std::lock_guard lock(mutex_);
    stop_locked();
    waiting.swap(ready_waiters_);
    snap = snapshot_;
  }
  for (auto& w : waiting)
    w.done(snap);
}

void news_service::stop_locked() {
  stopped_ = true;
  for (auto& s : slots_) {
    s->timer->cancel();
    s->lease_timer->cancel();
    // Hand leases back, so another instance takes the site over now rather than when the lease
    // runs out. On the pool: stop() may run on a network thread.
    if (s->leased)
      hand_back_lease(s->site->name);
  }
  if (prune_timer_)
    prune_timer_->cancel();
  cold_start_timer_->cancel();
}

// The DELETE runs on the worker pool: over a large history it must not hold a network thread.
void news_service::prune_history_locked() {
  if (!store_ || stopped_)
    return;
  boost::asio::post(parse_pool_, [this, cutoff = now_ms() - settings_.retention.count()] {
    try {
      // In a cluster one instance prunes per period, whichever claims it.
      if (cluster_ && !cluster_->claim_prune(owner_, prune_period))
        return;
      if (auto removed = store_->prune(cutoff))
        log_info("msg=\"pruned history\" rows=" + std::to_string(removed));
    } catch (const std::exception& e) {
      log_warn("msg=\"prune failed\" error=" + logfmt_quoted(e.what()));
    }
  });
  prune_timer_->wait(prune_period, [this] {
    std::lock_guard guard(mutex_);
    prune_history_locked();
  });
}

std::shared_ptr<const news_snapshot> news_service::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

std::vector<site_config> news_service::sites() const {
  std::lock_guard lock(mutex_);
  std::vector<site_config> out;
  for (const auto& s : slots_)
    out.push_back(*s->site);
  return out;
}

namespace {
// A reload builds every scraper anew: the same one is the same kind (type), for the same site
// and file, with the same rules.
bool same_scraper(const scrapers::scraper* a, const scrapers::scraper* b) {
  if (a == b)
    return true;
  if (!a || !b || typeid(*a) != typeid(*b))
    return false;
  return a->site().name == b->site().name && a->site().origin == b->site().origin &&
         a->definition() == b->definition();
}

bool same_settings(const site_config& a, const site_config& b) {
  return same_scraper(a.scraper.get(), b.scraper.get()) && a.url == b.url &&
         a.renderer == b.renderer && a.wait == b.wait && a.timeout == b.timeout &&
         a.interval == b.interval;
}
} // namespace

news_service::changes news_service::reconfigure(std::vector<site_config> sites) {
  for (const auto& site : sites)
    if (!renderers_.count(site.renderer))
      throw std::invalid_argument("site '" + site.name + "' uses the " + site.renderer +
                                  " renderer, which is not running (restart newsdesk to start it)");
  changes result;
  std::lock_guard lock(mutex_);
  std::vector<slot_ptr> next;
  for (auto& site : sites) {
    auto old = std::find_if(slots_.begin(), slots_.end(),
                            [&](const slot_ptr& s) { return s && s->site->name == site.name; });
    if (old == slots_.end()) {
      result.added.push_back(site.name);
      auto s = make_slot_locked(std::move(site));
      if (started_) {
        load_stored_locked(*s);
        schedule(s, milliseconds(0));
      }
      next.push_back(std::move(s));
      continue;
    }
    auto s = std::move(*old); // leaves a null in slots_: what remains there was removed
    const bool refresh = !same_settings(*s->site, site);
    s->report.display_name = site.display_name;
    s->report.colour = site.colour;
    s->report.url = site.url;
    s->report.renderer = site.renderer;
    s->site = std::make_shared<const site_config>(std::move(site));
    if (refresh) {
      result.changed.push_back(s->site->name);
      if (s->in_flight)
        s->refresh_next = true;
      else if (started_)
        schedule(s, milliseconds(0));
    }
    next.push_back(std::move(s));
  }
  for (auto& s : slots_)
    if (s) {
      result.removed.push_back(s->site->name);
      s->removed = true;
      s->timer->cancel();
    }
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [](const slot_ptr& s) { return s->removed; }),
                 waiting_.end());
  slots_ = std::move(next);
  publish_snapshot_locked();
  return result;
}

void news_service::when_ready(std::function<void(std::shared_ptr<const news_snapshot>)> done) {
  std::shared_ptr<const news_snapshot> snap;
  {
    std::lock_guard lock(mutex_);
    if (!ready_locked() && !stopped_) {
      ready_waiters_.push_back({clock_->steady_now() + settings_.cold_start_wait, std::move(done)});
      if (ready_waiters_.size() == 1)
        arm_cold_start_locked();
      return;
    }
    snap = snapshot_;
  }
  done(std::move(snap));
}

std::vector<std::pair<std::string, news_service::trigger>>
news_service::refresh_now(const std::optional<std::string>& site) {
  std::vector<slot_ptr> chosen;
  {
    std::lock_guard lock(mutex_);
    for (const auto& s : slots_)
      if (!site || s->site->name == *site)
        chosen.push_back(s);
  }
  std::vector<std::pair<std::string, trigger>> results;
  for (const auto& s : chosen)
    results.emplace_back(s->report.name, begin_refresh(s, true));
  if (site && results.empty())
    results.emplace_back(*site, trigger::unknown_site);
  return results;
}

void news_service::schedule(const slot_ptr& s, milliseconds delay) {
  // Called with mutex_ held.
  if (stopped_ || s->removed)
    return;
  // The timer lives in the slot: a weak pointer keeps the wait from owning its own slot.
  s->timer->wait(delay, [this, weak = std::weak_ptr<slot>(s)] {
    if (auto self = weak.lock())
      begin_refresh(self, false);
  });
}

news_service::trigger news_service::begin_refresh(const slot_ptr& s, bool manual) {
  std::lock_guard lock(mutex_);
  if (stopped_ || s->removed)
    return trigger::too_soon;
  if (s->in_flight)
    return trigger::already_running; // single flight: at most one fetch of a site at a time
  if (manual) {
    auto now = now_ms();
    if (now - s->last_manual_ms < settings_.manual_min_interval.count())
      return trigger::too_soon;
    s->last_manual_ms = now;
    s->timer->cancel(); // the scheduled refresh is replaced by this one
  }
  s->in_flight = true;
  s->refresh_next = false;
  s->attempt = 0;
  s->refresh_started = clock_->steady_now();
  s->report.last_attempt_ms = now_ms();
  if (cluster_)
    boost::asio::post(parse_pool_, [this, s, manual] { claim(s, manual); });
  else
    queue_render(s);
  return trigger::started;
}

// On the worker pool: the claim is a database round trip.
void news_service::claim(const slot_ptr& s, bool manual) {
  std::string name;
  {
    std::lock_guard lock(mutex_);
    name = s->site->name;
  }
  claim_result result;
  std::string error;
  try {
    result = cluster_->claim(name, owner_, settings_.lease, manual, settings_.manual_min_interval);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard lock(mutex_);
  if (!error.empty()) {
    s->in_flight = false;
    store_unreachable_locked(error);
    schedule(s, jittered(store_retry));
    return;
  }
  if (!store_notice_.empty()) {
    log_info("msg=\"store reachable again\"");
    store_notice_.clear();
    publish_snapshot_locked();
  }
  const bool claimed = result.status == claim_status::claimed;
  if (!claimed || s->removed || stopped_) {
    if (claimed)
      hand_back_lease(name);
    s->in_flight = false;
    // Look again when the site is due or its lease runs out, spread a little so instances that
    // woke together do not all claim in the same millisecond.
    std::uniform_int_distribution<long long> spread(0, 250);
    schedule(s, result.retry_in + milliseconds(spread(random_)));
    return;
  }
  s->leased = true;
  s->lease_lost = false;
  arm_renewal_locked(s);
  queue_render(s);
}

void news_service::arm_renewal_locked(const slot_ptr& s) {
  s->lease_timer->wait(settings_.lease / 3, [this, weak = std::weak_ptr<slot>(s)] {
    if (auto self = weak.lock())
      boost::asio::post(parse_pool_, [this, self] { renew_lease(self); });
  });
}

// Ends a lease without a write, on the pool (the caller may be a network thread). Should the
// database not answer, the lease runs out by itself.
void news_service::hand_back_lease(std::string site) {
  boost::asio::post(parse_pool_, [this, site = std::move(site)] {
    try {
      cluster_->release(site, owner_);
    } catch (const std::exception&) {
    }
  });
}

// On the worker pool, every third of the lease while a render runs under it.
void news_service::renew_lease(const slot_ptr& s) {
  std::string name;
  {
    std::lock_guard lock(mutex_);
    if (!s->leased || s->removed || stopped_)
      return;
    name = s->site->name;
  }
  bool held = true;
  try {
    held = cluster_->renew(name, owner_, settings_.lease);
  } catch (const std::exception& e) {
    // Try again at the next renewal; the lease may still run out meanwhile.
    log_warn("msg=\"lease renewal failed\" site=" + name + " error=" + logfmt_quoted(e.what()));
  }
  std::lock_guard lock(mutex_);
  if (!held) {
    log_warn("msg=\"lease lost\" site=" + name +
             " detail=\"another instance took the site over; this render's result will be "
             "dropped\"");
    s->lease_lost = true;
    return;
  }
  if (s->leased && !s->removed && !stopped_)
    arm_renewal_locked(s);
}

void news_service::store_unreachable_locked(const std::string& what) {
  if (store_notice_.empty()) {
    log_warn("msg=\"store unreachable\" error=" + logfmt_quoted(what));
    store_notice_ = "The database cannot be reached: the headlines shown may be out of date.";
    publish_snapshot_locked();
  }
}

// On the worker pool: writes the result under the lease, then reschedules the next claim. The
// page changes when the write's event comes back (apply_events), as on every other instance.
void news_service::finish_shared(const slot_ptr& s, const site_config& site,
                                 std::vector<scrapers::headline> found, std::string error,
                                 milliseconds elapsed, std::string_view kind) {
  milliseconds due;
  bool lost;
  {
    std::lock_guard lock(mutex_);
    s->lease_timer->cancel();
    lost = s->lease_lost;
    auto factor = error.empty() ? 1LL
                                : std::min<long long>(settings_.max_backoff_factor,
                                                      1LL << std::min(s->failures_in_row + 1, 30));
    due = jittered(s->site->interval * factor);
  }
  refresh_record record{now_ms(), elapsed.count(), owner_, due};
  std::string store_failure;
  bool dropped = lost;
  std::size_t fresh = 0;
  if (!lost) {
    try {
      if (error.empty())
        fresh = store_->record_refresh(site.name, found, record).size();
      else
        store_->record_failure(site.name, error, record);
    } catch (const lease_lost&) {
      dropped = true;
    } catch (const std::exception& e) {
      store_failure = e.what();
    }
  }
  {
    std::lock_guard lock(mutex_);
    s->in_flight = false;
    s->leased = false;
    s->tried = true;
    if (!store_failure.empty()) {
      store_unreachable_locked(store_failure);
      schedule(s, jittered(store_retry));
    } else if (dropped) {
      schedule(s, settings_.lease); // whoever holds the site now has finished by then
    } else {
      s->failures_in_row = error.empty() ? 0 : s->failures_in_row + 1;
      schedule(s, s->refresh_next ? milliseconds(0) : due);
    }
    s->refresh_next = false;
  }
  if (dropped)
    log_warn("msg=\"refresh dropped\" site=" + site.name +
             " detail=\"the lease ran out during the render and another instance took the site "
             "over\"");
  else if (store_failure.empty() && error.empty())
    log_info("msg=\"site refreshed\" site=" + site.name +
             " headlines=" + std::to_string(found.size()) + " new=" + std::to_string(fresh) +
             " ms=" + std::to_string(elapsed.count()));
  if (refresh_listener_)
    refresh_listener_(site, elapsed, kind);
}

void news_service::apply_events(const std::vector<store_event>& events) {
  if (!store_)
    return;
  std::set<std::string> touched;
  for (const auto& e : events)
    touched.insert(e.site);
  std::map<std::string, std::vector<stored_headline>> current;
  std::map<std::string, site_state> states;
  std::vector<stored_headline> fresh_rows;
  std::int64_t through;
  {
    std::lock_guard lock(mutex_);
    through = published_through_;
  }
  try {
    for (const auto& site : touched)
      current[site] = store_->current(site);
    for (auto& st : store_->sites())
      if (touched.count(st.site))
        states[st.site] = std::move(st);
    fresh_rows = store_->since(through, store_limits::max_since_rows);
    // After a long outage more may have come than one read returns: those are in the pages
    // already, and are not announced one by one.
    through = fresh_rows.size() == store_limits::max_since_rows
                  ? store_->last_id()
                  : (fresh_rows.empty() ? through : fresh_rows.back().id);
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    store_unreachable_locked(e.what());
    throw;
  }
  log(log_level::debug, "msg=\"applying events\" first=" + std::to_string(events.front().seq) +
                            " last=" + std::to_string(events.back().seq) +
                            " new_headlines=" + std::to_string(fresh_rows.size()));
  std::vector<news_item> fresh;
  {
    std::lock_guard lock(mutex_);
    if (!store_notice_.empty()) {
      log_info("msg=\"store reachable again\"");
      store_notice_.clear();
    }
    published_through_ = std::max(published_through_, through);
    std::unordered_set<std::int64_t> fresh_ids;
    for (const auto& row : fresh_rows)
      fresh_ids.insert(row.id);
    for (auto& s : slots_) {
      auto rows = current.find(s->site->name);
      if (rows == current.end())
        continue;
      // As on one instance: a site's first refresh shows its headlines, it announces none.
      const bool had_success = s->report.last_success_ms != 0;
      s->items.clear();
      for (const auto& row : rows->second) {
        auto item = item_of(row);
        item.rank = s->items.size();
        item.is_new = had_success && fresh_ids.count(row.id);
        if (item.is_new)
          fresh.push_back(item);
        s->items.push_back(std::move(item));
      }
      if (auto st = states.find(s->site->name); st != states.end()) {
        const auto& state = st->second;
        s->report.ok = state.last_error.empty() && state.last_success_ms != 0;
        s->report.error = state.last_error;
        s->report.last_success_ms = state.last_success_ms;
        s->report.last_attempt_ms = state.last_attempt_ms;
        s->report.elapsed = milliseconds(state.last_elapsed_ms);
      }
      s->report.stale = !s->report.ok && !s->items.empty();
      s->report.headline_count = s->items.size();
      s->tried = true;
    }
    publish_snapshot_locked();
  }
  if (!fresh.empty() && listener_)
    listener_(fresh);
}

void news_service::queue_render(const slot_ptr& s) {
  // Called with mutex_ held.
  if (active_renders_ < settings_.max_concurrent_renders) {
    ++active_renders_;
    boost::asio::post(ioc_, [this, s] { launch_render(s); });
  } else {
    waiting_.push_back(s);
  }
}

void news_service::release_render_slot() {
  // Free the render slot first, so the next waiting site starts while this one is parsed.
  std::lock_guard lock(mutex_);
  --active_renders_;
  if (!waiting_.empty() && !stopped_) {
    auto next = std::move(waiting_.front());
    waiting_.pop_front();
    ++active_renders_;
    boost::asio::post(ioc_, [this, next = std::move(next)] { launch_render(next); });
  }
}

void news_service::launch_render(const slot_ptr& s) {
  std::shared_ptr<const site_config> site;
  {
    std::lock_guard lock(mutex_);
    site = s->site;
  }
  renderers_.at(site->renderer)
      ->render({site->url, site->wait, site->timeout}, [this, s, site](render_result result) {
        release_render_slot();
        on_rendered(s, site, std::move(result));
      });
}

void news_service::on_rendered(const slot_ptr& s, std::shared_ptr<const site_config> site,
                               render_result result) {
  milliseconds elapsed{0};
  {
    std::lock_guard lock(mutex_);
    if (s->removed)
      return;
    if (!result.ok()) {
      if (is_transient(result.failure) && s->attempt < settings_.retries && !stopped_) {
        ++s->attempt;
        // Full jitter: a random wait up to the exponential bound spreads retries of many sites.
        auto bound = std::min<milliseconds>(
            settings_.retry_max, settings_.retry_base * (1LL << std::min(s->attempt - 1, 30)));
        std::uniform_int_distribution<long long> pick(0, bound.count());
        auto delay = milliseconds(pick(random_));
        log_info("msg=\"retrying site\" site=" + site->name + " attempt=" +
                 std::to_string(s->attempt) + " delay_ms=" + std::to_string(delay.count()) +
                 " error=" + logfmt_quoted(result.message));
        s->timer->wait(delay, [this, weak = std::weak_ptr<slot>(s)] {
          auto self = weak.lock();
          if (!self)
            return;
          std::lock_guard relock(mutex_);
          if (!self->removed)
            queue_render(self);
        });
        return;
      }
      elapsed = std::chrono::duration_cast<milliseconds>(clock_->steady_now() - s->refresh_started);
    }
  }
  if (!result.ok()) {
    log_warn("msg=\"site failed\" site=" + site->name + " kind=" +
             std::string(to_string(result.failure)) + " error=" + logfmt_quoted(result.message));
    return finish_failure(s, *site, std::move(result.message), elapsed, to_string(result.failure));
  }
  // A 4 MB page takes tens of milliseconds to parse: keep it off the network threads, and on
  // its own pool, so a page that is slow to parse holds up only other pages, never /events
  // set-ups, store writes or the representations the worker pool builds.
  boost::asio::post(scrape_pool_, [this, s, site, result = std::move(result)]() mutable {
    std::vector<scrapers::headline> found;
    std::string error, kind, note;
    try {
      const auto cpu_before = thread_cpu_time();
      found = site->scraper->parse(result.html, result.url, &note);
      if (auto cpu = thread_cpu_time() - cpu_before; cpu > settings_.parse_cpu_budget) {
        found.clear();
        error = "reading the page took " + format_seconds(cpu.count() / 1000.0) +
                " s of CPU, over its budget of " +
                format_seconds(settings_.parse_cpu_budget.count() / 1000.0) + " s";
        kind = "too_costly";
      }
    } catch (const scrapers::dom::too_complex& e) {
      error = e.what();
      kind = "too_complex";
    } catch (const scrapers::feed_error& e) {
      error = std::string("the feed could not be read: ") + e.what();
      kind = "bad_feed";
    } catch (const std::exception& e) {
      error = "the scraper failed on this page";
      kind = "scraper";
      log_error("msg=\"scraper threw\" site=" + site->name + " error=" + logfmt_quoted(e.what()));
    }
    // What came from the page is capped before it is kept, with or without a store: a title is
    // a line (cut), a cut URL would be a broken link (skipped), and a runaway list ends.
    if (found.size() > store_limits::max_headlines_per_refresh)
      found.resize(store_limits::max_headlines_per_refresh);
    std::erase_if(found, [](const scrapers::headline& h) {
      return h.url.size() > store_limits::max_url_bytes;
    });
    for (auto& h : found) {
      h.site = site->name; // one scraper may serve several configured sites
      if (h.title.size() > store_limits::max_title_bytes)
        h.title = std::string(scrapers::cut_utf8(h.title, store_limits::max_title_bytes));
    }
    // Splash answers 200 with the site's own error page when the site answers 404 or 500, so
    // an empty result names both causes.
    if (error.empty() && found.empty()) {
      error = "no headlines found on the page (the site may have sent an error page, or its "
              "markup changed)";
      kind = "no_headlines";
    }
    if (!error.empty())
      log_warn("msg=\"site failed\" site=" + site->name + " kind=" + kind +
               " error=" + logfmt_quoted(error));
    else if (!note.empty())
      log_warn("msg=\"site file needs updating\" site=" + site->name +
               " file=" + logfmt_quoted(scrapers::origin_of(site->scraper->site())) +
               " note=" + logfmt_quoted(note));
    milliseconds took;
    {
      std::lock_guard lock(mutex_);
      took = std::chrono::duration_cast<milliseconds>(clock_->steady_now() - s->refresh_started);
    }
    // The store is written on the worker pool.
    boost::asio::post(parse_pool_, [this, s, site, found = std::move(found), took,
                                    error = std::move(error), kind = std::move(kind),
                                    note = std::move(note)]() mutable {
      on_parsed(s, *site, std::move(found), took, std::move(error), kind, std::move(note));
    });
  });
}

void news_service::on_parsed(const slot_ptr& s, const site_config& site,
                             std::vector<scrapers::headline> found, milliseconds elapsed,
                             std::string parse_error, std::string_view kind, std::string note) {
  if (cluster_)
    return finish_shared(s, site, std::move(found), std::move(parse_error), elapsed, kind);
  if (!parse_error.empty())
    return finish_failure(s, site, std::move(parse_error), elapsed, kind);

  const auto now = now_ms();
  // The store is written on this worker thread: SQLite work stays off the network threads.
  std::vector<news_item> items;
  std::vector<std::int64_t> new_ids;
  if (store_) {
    try {
      for (const auto& row : store_->record_refresh(site.name, found, {now, elapsed.count()}))
        new_ids.push_back(row.id);
      for (const auto& row : store_->current(site.name))
        items.push_back(item_of(row));
      note_store_write({});
    } catch (const std::exception& e) {
      log_error("msg=\"store write failed\" site=" + site.name +
                " error=" + logfmt_quoted(e.what()));
      note_store_write(e.what());
      items.clear();
    }
  }
  if (items.empty()) // no store, or it failed: show the page as found
    for (auto& h : found)
      items.push_back({std::move(h), 0, now, false});

  std::vector<news_item> fresh;
  {
    std::lock_guard lock(mutex_);
    if (s->removed)
      return;
    const bool had_success = s->report.last_success_ms != 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto& item = items[i];
      item.rank = i;
      item.is_new =
          had_success && std::find(new_ids.begin(), new_ids.end(), item.id) != new_ids.end();
      if (item.is_new)
        fresh.push_back(item);
    }
    s->items = std::move(items);
    s->report.ok = true;
    s->report.stale = false;
    s->report.error.clear();
    s->report.note = std::move(note);
    s->report.headline_count = s->items.size();
    s->report.elapsed = elapsed;
    s->report.last_success_ms = now;
    s->failures_in_row = 0;
    finish_refresh_locked(s, jittered(s->site->interval));
    publish_snapshot_locked();
  }
  log_info("msg=\"site refreshed\" site=" + site.name +
           " headlines=" + std::to_string(found.size()) + " new=" + std::to_string(fresh.size()) +
           " ms=" + std::to_string(elapsed.count()));
  if (refresh_listener_)
    refresh_listener_(site, elapsed, "");
  if (!fresh.empty() && listener_)
    listener_(fresh);
}

void news_service::finish_failure(const slot_ptr& s, const site_config& site, std::string error,
                                  milliseconds elapsed, std::string_view kind) {
  if (error.size() > store_limits::max_error_bytes)
    error = std::string(scrapers::cut_utf8(error, store_limits::max_error_bytes));
  if (cluster_) {
    // Called on a network thread (a render's callback): the write goes to the pool.
    boost::asio::post(parse_pool_, [this, s, site, error = std::move(error), elapsed,
                                    kind = std::string(kind)]() mutable {
      finish_shared(s, site, {}, std::move(error), elapsed, kind);
    });
    return;
  }
  if (store_) {
    boost::asio::post(parse_pool_, [this, name = site.name, error, elapsed, now = now_ms()] {
      try {
        store_->record_failure(name, error, {now, elapsed.count()});
        note_store_write({});
      } catch (const std::exception& e) {
        log_error("msg=\"store write failed\" site=" + name + " error=" + logfmt_quoted(e.what()));
        note_store_write(e.what());
      }
    });
  }
  {
    std::lock_guard lock(mutex_);
    if (!s->removed) {
      s->report.ok = false;
      s->report.stale = !s->items.empty(); // keep serving the last good headlines
      s->report.error = std::move(error);
      s->report.elapsed = elapsed;
      for (auto& item : s->items)
        item.is_new = false;
      ++s->failures_in_row;
      auto factor = std::min<long long>(settings_.max_backoff_factor,
                                        1LL << std::min(s->failures_in_row, 30));
      finish_refresh_locked(s, jittered(s->site->interval * factor));
      publish_snapshot_locked();
    }
  }
  // After the state changed, as on success: a listener sees the snapshot and schedule it reports.
  if (refresh_listener_)
    refresh_listener_(site, elapsed, kind);
}

void news_service::note_store_write(std::string error) {
  std::lock_guard lock(mutex_);
  store_write_error_ = std::move(error);
}

std::string news_service::store_write_error() const {
  std::lock_guard lock(mutex_);
  return store_write_error_;
}

void news_service::finish_refresh_locked(const slot_ptr& s, milliseconds next) {
  s->in_flight = false;
  s->tried = true;
  // Settings that changed while this refresh ran (a reload) are tried at once.
  schedule(s, s->refresh_next ? milliseconds(0) : next);
  s->refresh_next = false;
}

bool news_service::ready_locked() const {
  return std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->tried; }) ||
         std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->items.empty(); });
}

void news_service::publish_snapshot_locked() {
  auto snap = std::make_shared<news_snapshot>();
  for (const auto& s : slots_) {
    snap->sites.push_back(s->report);
    snap->headlines.insert(snap->headlines.end(), s->items.begin(), s->items.end());
  }
  sort_items(snap->headlines);
  snap->generated_at = clock_->system_now();
  snap->notice = store_notice_;
  snap->version = ++version_;
  snap->ready = ready_locked();
  snapshot_ = std::move(snap);
  if (snapshot_listener_ && started_ && !stopped_)
    boost::asio::post(parse_pool_, [this, snap = snapshot_] { snapshot_listener_(snap); });

  bool ready = std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->tried; });
  if (ready && !ready_waiters_.empty()) {
    auto waiters = std::move(ready_waiters_);
    ready_waiters_.clear();
    cold_start_timer_->cancel();
    for (auto& w : waiters)
      boost::asio::post(ioc_, [done = std::move(w.done), snap = snapshot_] { done(snap); });
  }
}

} // namespace newsdesk::server
