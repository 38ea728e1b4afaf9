#include "server/news_service.hpp"

#include "server/headline_store.hpp"
#include "server/log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace newsdesk::server {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
// The key a title sorts by: lower case, without leading quotes and punctuation, so
// "'Quoted' headline" sorts under Q, not before A.
std::string sort_key(std::string_view title) {
  std::size_t start = 0;
  while (start < title.size()) {
    auto c = static_cast<unsigned char>(title[start]);
    if (std::isalnum(c) || c >= 0x80) {
      // Typographic quotes are UTF-8 (E2 80 98/99/9C/9D): skip them too.
      if (c == 0xE2 && start + 2 < title.size() &&
          static_cast<unsigned char>(title[start + 1]) == 0x80) {
        auto third = static_cast<unsigned char>(title[start + 2]);
        if (third >= 0x98 && third <= 0x9F) {
          start += 3;
          continue;
        }
      }
      break;
    }
    ++start;
  }
  std::string out(title.substr(start));
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <class T, class TitleOf, class SiteOf>
void sort_by_title(std::vector<T>& list, TitleOf title_of, SiteOf site_of) {
  std::vector<std::pair<std::string, std::size_t>> keys;
  keys.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i)
    keys.emplace_back(sort_key(title_of(list[i])), i);
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first)
      return a.first < b.first;
    return site_of(list[a.second]) < site_of(list[b.second]);
  });
  std::vector<T> sorted;
  sorted.reserve(list.size());
  for (const auto& [key, index] : keys)
    sorted.push_back(std::move(list[index]));
  list = std::move(sorted);
}
} // namespace

void sort_items(std::vector<news_item>& items) {
  sort_by_title(
      items, [](const news_item& i) -> const std::string& { return i.headline.title; },
      [](const news_item& i) -> const std::string& { return i.headline.site; });
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
  explicit slot(boost::asio::io_context& ioc)
      : timer(ioc) {}
  boost::asio::steady_timer timer;
  bool in_flight = false;
  bool tried = false;      // at least one refresh has finished
  int attempt = 0;         // retries used by the refresh in flight
  int failures_in_row = 0; // refreshes that failed for good
  clock_type::time_point refresh_started;
  std::int64_t last_manual_ms = 0;
  site_report report;
  std::vector<news_item> items;
};

news_service::news_service(boost::asio::io_context& ioc, std::vector<site_config> sites,
                           std::map<std::string, renderer*> renderers,
                           boost::asio::thread_pool& parse_pool, headline_store* store,
                           refresh_settings settings)
    : ioc_(ioc)
    , sites_(std::move(sites))
    , renderers_(std::move(renderers))
    , parse_pool_(parse_pool)
    , store_(store)
    , settings_(settings)
    , random_(std::random_device{}()) {
  for (const auto& site : sites_) {
    auto s = std::make_unique<slot>(ioc_);
    s->report = {site.name, site.display_name, site.colour, site.url, site.renderer};
    slots_.push_back(std::move(s));
  }
  std::lock_guard lock(mutex_);
  publish_snapshot_locked();
}

news_service::~news_service() {
  stop();
}

void news_service::on_new_headlines(std::function<void(const std::vector<news_item>&)> listener) {
  listener_ = std::move(listener);
}

void news_service::on_refresh_done(
    std::function<void(const site_config&, std::chrono::milliseconds, std::string_view)> listener) {
  refresh_listener_ = std::move(listener);
}

std::int64_t news_service::now_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

milliseconds news_service::jittered(milliseconds base) {
  std::uniform_real_distribution<double> spread(1.0 - settings_.jitter, 1.0 + settings_.jitter);
  return milliseconds(static_cast<long long>(static_cast<double>(base.count()) * spread(random_)));
}

void news_service::start() {
  std::lock_guard lock(mutex_);
  if (store_) {
    // Serve what the store has at once: the last successful refresh of every site.
    std::unordered_map<std::string, site_state> states;
    for (auto& st : store_->sites())
      states[st.site] = st;
    for (std::size_t i = 0; i < sites_.size(); ++i) {
      auto& s = *slots_[i];
      for (const auto& row : store_->current(sites_[i].name))
        s.items.push_back({{row.title, row.url, row.site}, row.id, row.first_seen_ms, false});
      if (auto it = states.find(sites_[i].name); it != states.end()) {
        s.report.last_success_ms = it->second.last_success_ms;
        s.report.last_attempt_ms = it->second.last_attempt_ms;
      }
      s.report.headline_count = s.items.size();
      s.report.ok = !s.items.empty();
    }
    publish_snapshot_locked();
  }
  // Every site starts at once; the render cap queues what Splash could not take, so a cold
  // start takes about as long as the slowest site.
  for (std::size_t i = 0; i < sites_.size(); ++i)
    schedule(i, milliseconds(0));

  // A cold start with nothing stored: answer waiting views after cold_start_wait at the latest.
  auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, settings_.cold_start_wait);
  timer->async_wait([this, timer](boost::system::error_code ec) {
    if (ec)
      return;
    std::vector<std::function<void(std::shared_ptr<const news_snapshot>)>> waiters;
    std::shared_ptr<const news_snapshot> snap;
    {
      std::lock_guard guard(mutex_);
      waiters.swap(ready_waiters_);
      snap = snapshot_;
    }
    for (auto& w : waiters)
      w(snap);
  });
}

void news_service::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  for (auto& s : slots_)
    s->timer.cancel();
}

std::shared_ptr<const news_snapshot> news_service::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

void news_service::when_ready(std::function<void(std::shared_ptr<const news_snapshot>)> done) {
  std::shared_ptr<const news_snapshot> snap;
  {
    std::lock_guard lock(mutex_);
    bool ready =
        std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->tried; }) ||
        std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->items.empty(); });
    if (!ready) {
      ready_waiters_.push_back(std::move(done));
      return;
    }
    snap = snapshot_;
  }
  done(std::move(snap));
}

std::vector<std::pair<std::string, news_service::trigger>>
news_service::refresh_now(const std::optional<std::string>& site) {
  std::vector<std::pair<std::string, trigger>> results;
  for (std::size_t i = 0; i < sites_.size(); ++i)
    if (!site || sites_[i].name == *site)
      results.emplace_back(sites_[i].name, begin_refresh(i, true));
  if (site && results.empty())
    results.emplace_back(*site, trigger::unknown_site);
  return results;
}

void news_service::schedule(std::size_t index, milliseconds delay) {
  // Called with mutex_ held.
  if (stopped_)
    return;
  auto& s = *slots_[index];
  s.timer.expires_after(delay);
  s.timer.async_wait([this, index](boost::system::error_code ec) {
    if (!ec)
      begin_refresh(index, false);
  });
}

news_service::trigger news_service::begin_refresh(std::size_t index, bool manual) {
  std::lock_guard lock(mutex_);
  auto& s = *slots_[index];
  if (stopped_)
    return trigger::too_soon;
  if (s.in_flight)
    return trigger::already_running; // single flight: at most one fetch of a site at a time
  if (manual) {
    auto now = now_ms();
    if (now - s.last_manual_ms < settings_.manual_min_interval.count())
      return trigger::too_soon;
    s.last_manual_ms = now;
    s.timer.cancel(); // the scheduled refresh is replaced by this one
  }
  s.in_flight = true;
  s.attempt = 0;
  s.refresh_started = clock_type::now();
  s.report.last_attempt_ms = now_ms();
  queue_render(index);
  return trigger::started;
}

void news_service::queue_render(std::size_t index) {
  // Called with mutex_ held.
  if (active_renders_ < settings_.max_concurrent_renders) {
    ++active_renders_;
    boost::asio::post(ioc_, [this, index] { launch_render(index); });
  } else {
    waiting_.push_back(index);
  }
}

void news_service::launch_render(std::size_t index) {
  const auto& site = sites_[index];
  renderers_.at(site.renderer)
      ->render({site.url, site.wait, site.timeout}, [this, index](render_result result) {
        {
          // Free the render slot first, so the next waiting site starts while this one is parsed.
          std::lock_guard lock(mutex_);
          --active_renders_;
          if (!waiting_.empty() && !stopped_) {
            auto next = waiting_.front();
            waiting_.erase(waiting_.begin());
            ++active_renders_;
            boost::asio::post(ioc_, [this, next] { launch_render(next); });
          }
        }
        on_rendered(index, std::move(result));
      });
}

void news_service::on_rendered(std::size_t index, render_result result) {
  const auto& site = sites_[index];
  milliseconds elapsed{0};
  if (!result.ok()) {
    std::lock_guard lock(mutex_);
    auto& s = *slots_[index];
    if (is_transient(result.failure) && s.attempt < settings_.retries && !stopped_) {
      ++s.attempt;
      // Full jitter: a random wait up to the exponential bound spreads retries of many sites.
      auto bound = std::min<milliseconds>(
          settings_.retry_max, settings_.retry_base * (1LL << std::min(s.attempt - 1, 30)));
      std::uniform_int_distribution<long long> pick(0, bound.count());
      auto delay = milliseconds(pick(random_));
      log_info("msg=\"retrying site\" site=" + site.name + " attempt=" + std::to_string(s.attempt) +
               " delay_ms=" + std::to_string(delay.count()) + " error=\"" + result.message + "\"");
      s.timer.expires_after(delay);
      s.timer.async_wait([this, index](boost::system::error_code ec) {
        if (ec)
          return;
        std::lock_guard relock(mutex_);
        queue_render(index);
      });
      return;
    }
    elapsed = std::chrono::duration_cast<milliseconds>(clock_type::now() - s.refresh_started);
  }
  if (!result.ok()) {
    log_warn("msg=\"site failed\" site=" + site.name + " kind=" +
             std::string(to_string(result.failure)) + " error=\"" + result.message + "\"");
    return finish_failure(index, std::move(result.message), elapsed, to_string(result.failure));
  }
  // A 4 MB page takes tens of milliseconds to parse: keep it off the network threads.
  boost::asio::post(parse_pool_, [this, index, result = std::move(result)]() mutable {
    const auto& cfg = sites_[index];
    std::vector<scrapers::headline> found;
    std::string error;
    try {
      found = cfg.scraper->parse(result.html, result.url);
    } catch (const std::exception& e) {
      error = "the scraper failed on this page";
      log_error("msg=\"scraper threw\" site=" + cfg.name + " error=\"" + e.what() + "\"");
    }
    for (auto& h : found)
      h.site = cfg.name; // one scraper may serve several configured sites
    if (error.empty() && found.empty())
      error = "no headlines found on the page (the site's markup may have changed)";
    milliseconds took;
    {
      std::lock_guard lock(mutex_);
      took = std::chrono::duration_cast<milliseconds>(clock_type::now() -
                                                      slots_[index]->refresh_started);
    }
    on_parsed(index, std::move(found), took, std::move(error));
  });
}

void news_service::on_parsed(std::size_t index, std::vector<scrapers::headline> found,
                             milliseconds elapsed, std::string parse_error) {
  if (!parse_error.empty())
    return finish_failure(index, std::move(parse_error), elapsed,
                          found.empty() ? "no_headlines" : "scraper");

  const auto& site = sites_[index];
  const auto now = now_ms();
  // The store is written on this worker thread: SQLite work stays off the network threads.
  std::vector<news_item> items;
  std::vector<std::int64_t> new_ids;
  if (store_) {
    try {
      for (const auto& row : store_->record_refresh(site.name, found, now))
        new_ids.push_back(row.id);
      for (const auto& row : store_->current(site.name))
        items.push_back({{row.title, row.url, row.site}, row.id, row.first_seen_ms, false});
    } catch (const std::exception& e) {
      log_error("msg=\"store write failed\" site=" + site.name + " error=\"" + e.what() + "\"");
      items.clear();
    }
  }
  if (items.empty()) // no store, or it failed: show the page as found
    for (auto& h : found)
      items.push_back({std::move(h), 0, now, false});

  std::vector<news_item> fresh;
  {
    std::lock_guard lock(mutex_);
    auto& s = *slots_[index];
    const bool had_success = s.report.last_success_ms != 0;
    for (auto& item : items) {
      item.is_new =
          had_success && std::find(new_ids.begin(), new_ids.end(), item.id) != new_ids.end();
      if (item.is_new)
        fresh.push_back(item);
    }
    s.items = std::move(items);
    s.report.ok = true;
    s.report.stale = false;
    s.report.error.clear();
    s.report.headline_count = s.items.size();
    s.report.elapsed = elapsed;
    s.report.last_success_ms = now;
    s.failures_in_row = 0;
    s.in_flight = false;
    s.tried = true;
    schedule(index, jittered(site.interval));
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

void news_service::finish_failure(std::size_t index, std::string error, milliseconds elapsed,
                                  std::string_view kind) {
  const auto& site = sites_[index];
  if (refresh_listener_)
    refresh_listener_(site, elapsed, kind);
  if (store_) {
    boost::asio::post(parse_pool_, [this, name = site.name, error, now = now_ms()] {
      try {
        store_->record_failure(name, error, now);
      } catch (const std::exception& e) {
        log_error("msg=\"store write failed\" site=" + name + " error=\"" + e.what() + "\"");
      }
    });
  }
  std::lock_guard lock(mutex_);
  auto& s = *slots_[index];
  s.report.ok = false;
  s.report.stale = !s.items.empty(); // keep serving the last good headlines
  s.report.error = std::move(error);
  s.report.elapsed = elapsed;
  for (auto& item : s.items)
    item.is_new = false;
  s.in_flight = false;
  s.tried = true;
  ++s.failures_in_row;
  auto factor =
      std::min<long long>(settings_.max_backoff_factor, 1LL << std::min(s.failures_in_row, 30));
  schedule(index, jittered(site.interval * factor));
  publish_snapshot_locked();
}

void news_service::publish_snapshot_locked() {
  auto snap = std::make_shared<news_snapshot>();
  for (const auto& s : slots_) {
    snap->sites.push_back(s->report);
    snap->headlines.insert(snap->headlines.end(), s->items.begin(), s->items.end());
  }
  sort_items(snap->headlines);
  snap->generated_at = std::chrono::system_clock::now();
  snap->version = ++version_;
  snapshot_ = std::move(snap);

  bool ready = std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->tried; });
  if (ready && !ready_waiters_.empty()) {
    auto waiters = std::move(ready_waiters_);
    ready_waiters_.clear();
    for (auto& w : waiters)
      boost::asio::post(ioc_, [w = std::move(w), snap = snapshot_] { w(snap); });
  }
}

} // namespace newsdesk::server
