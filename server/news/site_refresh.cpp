#include "server/news/site_refresh.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/feed.hpp"
#include "scrapers/site_icon.hpp"
#include "scrapers/text.hpp"
#include "server/core/log.hpp"
#include "server/news/headline_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <time.h>

#include <algorithm>

namespace newsdesk::server {

using std::chrono::milliseconds;

namespace {

// CPU time this thread has used: what a parse costs, whatever else the machine is doing.
milliseconds thread_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::duration_cast<milliseconds>(std::chrono::seconds(ts.tv_sec) +
                                                  std::chrono::nanoseconds(ts.tv_nsec));
}

} // namespace

refresh_result read_page(const site_config& site, const render_result& page,
                         milliseconds cpu_budget) {
  refresh_result r;
  try {
    const auto cpu_before = thread_cpu_time();
    r.found = site.scraper->parse(page.html, page.url, &r.note, page.content_type);
    if (auto cpu = thread_cpu_time() - cpu_before; cpu > cpu_budget) {
      r.found.clear();
      r.error = "reading the page took " + format_seconds(cpu.count() / 1000.0) +
                " s of CPU, over its budget of " + format_seconds(cpu_budget.count() / 1000.0) +
                " s";
      r.kind = failure_kind::too_costly;
    }
  } catch (const scrapers::dom::too_complex& e) {
    r.error = e.what();
    r.kind = failure_kind::too_complex;
  } catch (const scrapers::feed_error& e) {
    r.error = std::string("the feed could not be read: ") + e.what();
    r.kind = failure_kind::bad_feed;
  } catch (const std::exception& e) {
    r.error = "the scraper failed on this page";
    r.kind = failure_kind::scraper;
    log_error("msg=\"scraper threw\" site=" + site.name + " error=" + logfmt_quoted(e.what()));
  }
  // What came from the page is capped before it is kept, with or without a store: a title is a
  // line (cut), a cut URL would be a broken link (skipped), and a runaway list ends.
  if (r.found.size() > store_limits::max_headlines_per_refresh)
    r.found.resize(store_limits::max_headlines_per_refresh);
  std::erase_if(r.found, [](const scrapers::headline& h) {
    return h.url.size() > store_limits::max_url_bytes;
  });
  for (auto& h : r.found) {
    h.site = site.name; // one scraper may serve several configured sites
    if (h.title.size() > store_limits::max_title_bytes)
      h.title = std::string(scrapers::cut_utf8(h.title, store_limits::max_title_bytes));
  }
  // Splash answers 200 with the site's own error page when the site answers 404 or 500, so an
  // empty result names both causes.
  if (r.error.empty() && r.found.empty()) {
    r.error = "no headlines found on the page (the site may have sent an error page, or its "
              "markup changed)";
    r.kind = failure_kind::no_headlines;
  }
  // The icon's address costs a parse of the page's head only (scrapers::max_icon_scan_bytes).
  if (r.error.empty())
    r.icon_urls = scrapers::icon_urls(page.html, page.url.empty() ? site.url : page.url,
                                      site.home != site.url ? site.home : std::string());
  return r;
}

// One refresh in progress.
struct site_refresh::job {
  std::shared_ptr<const site_config> site;
  std::function<bool()> wanted;
  std::function<void(refresh_result)> done;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point queued;   // when it last asked for a render slot
  std::chrono::steady_clock::time_point launched; // when its current render started
  bool slow = false; // its site's last render was slow: it takes a slot from the slow share
  bool held_for_parse = false; // counted in parse_full_ (a slot was free, the parse queue full)
  int attempt = 0;             // retries used
  std::unique_ptr<news_clock::timer> retry; // the next attempt, after a transient failure
};

site_refresh::site_refresh(boost::asio::io_context& ioc, boost::asio::any_io_executor scrape,
                           news_clock& clock, std::map<std::string, renderer*> renderers,
                           const refresh_settings& settings, std::uint64_t seed)
    : ioc_(ioc)
    , scrape_(std::move(scrape))
    , clock_(clock)
    , renderers_(std::move(renderers))
    , settings_(settings)
    , random_(seed) {}

site_refresh::~site_refresh() {
  stop();
}

void site_refresh::run(std::shared_ptr<const site_config> site, std::function<bool()> wanted,
                       std::function<void(refresh_result)> done) {
  auto j = std::make_shared<job>();
  j->site = std::move(site);
  j->wanted = std::move(wanted);
  j->done = std::move(done);
  j->started = clock_.steady_now();
  queue_render(std::move(j));
}

void site_refresh::stop() {
  std::vector<std::shared_ptr<job>> retrying;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    waiting_.clear();
    retrying.swap(retrying_);
  }
  for (auto& j : retrying)
    j->retry->cancel();
}

namespace {

// Slots that sites whose last render was slow may not take: with 5, one is kept for the others.
std::size_t reserved_slots(std::size_t slots) {
  return slots < 2 ? 0 : std::max<std::size_t>(1, slots / 4);
}

} // namespace

bool site_refresh::may_start(const job& j) const {
  if (active_ >= settings_.max_concurrent_renders ||
      parse_bytes_ >= settings_.max_parse_queue_bytes)
    return false;
  return !j.slow || slow_active_ < settings_.max_concurrent_renders -
                                       reserved_slots(settings_.max_concurrent_renders);
}

void site_refresh::start(std::shared_ptr<job> j) {
  ++active_;
  if (j->slow)
    ++slow_active_;
  boost::asio::post(ioc_, [this, j = std::move(j)] { launch(j); });
}

void site_refresh::queue_render(std::shared_ptr<job> j) {
  std::lock_guard lock(mutex_);
  if (stopped_)
    return;
  j->queued = clock_.steady_now();
  j->slow = slow_sites_.count(j->site->name) > 0;
  // Those already waiting may not start either (they wait for the slow share, or for room in
  // the parse queue): a refresh that may start goes now.
  if (may_start(*j))
    return start(std::move(j));
  waiting_.push_back(std::move(j));
  held_for_parse_locked();
}

void site_refresh::held_for_parse_locked() {
  // The first in line waits for the parse queue, not for a slot: counted once per refresh.
  if (!waiting_.empty() && !waiting_.front()->held_for_parse &&
      active_ < settings_.max_concurrent_renders &&
      parse_bytes_ >= settings_.max_parse_queue_bytes) {
    waiting_.front()->held_for_parse = true;
    ++parse_full_;
  }
}

std::string site_refresh::start_waiting_locked() {
  std::string warning;
  while (!stopped_) {
    // The first in line that may take a slot: a slow site waits while the slow share is full,
    // and the sites behind it go first.
    auto it = std::find_if(waiting_.begin(), waiting_.end(),
                           [this](const std::shared_ptr<job>& w) { return may_start(*w); });
    if (it == waiting_.end()) {
      held_for_parse_locked();
      break;
    }
    auto next = std::move(*it);
    waiting_.erase(it);
    const auto now = clock_.steady_now();
    const auto waited = std::chrono::duration_cast<milliseconds>(now - next->queued);
    if (next->site->interval.count() > 0 && waited > next->site->interval / 2) {
      ++behind_;
      // Once a minute at most: a machine that falls behind would otherwise say so per site.
      if (now - behind_warned_ >= std::chrono::minutes(1)) {
        behind_warned_ = now;
        warning = "msg=\"refreshes fall behind their interval\" site=" + next->site->name +
                  " waited_ms=" + std::to_string(waited.count()) +
                  " interval_ms=" + std::to_string(next->site->interval.count()) +
                  " waiting=" + std::to_string(waiting_.size()) +
                  " render_slots=" + std::to_string(settings_.max_concurrent_renders) +
                  " slow_sites=" + std::to_string(slow_sites_.size()) +
                  " parse_queue_bytes=" + std::to_string(parse_bytes_) +
                  " behind_total=" + std::to_string(behind_);
      }
    }
    start(std::move(next));
  }
  return warning;
}

void site_refresh::release_slot(const job& finished) {
  // The slot is freed first, so the next waiting site starts while this one is parsed (when the
  // pages waiting for a parse leave room for another).
  std::string warning;
  {
    std::lock_guard lock(mutex_);
    --active_;
    if (finished.slow)
      --slow_active_;
    warning = start_waiting_locked();
  }
  if (!warning.empty())
    log_warn(warning);
}

void site_refresh::parsed(std::size_t bytes) {
  std::string warning;
  {
    std::lock_guard lock(mutex_);
    --parse_pages_;
    parse_bytes_ -= bytes;
    warning = start_waiting_locked();
  }
  if (!warning.empty())
    log_warn(warning);
}

void site_refresh::judge_pace(const job& j, const render_result& result) {
  // Slow: the render ran out of time or of pace, or took over half the site's timeout. One fast
  // render gives the site its place back.
  const auto took = clock_.steady_now() - j.launched;
  const bool slow = result.failure == failure_kind::timeout || took > j.site->timeout / 2;
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    changed = slow ? slow_sites_.insert(j.site->name).second : slow_sites_.erase(j.site->name) > 0;
  }
  if (changed)
    log_info(std::string(slow ? "msg=\"site is slow; it shares"
                              : "msg=\"site is fast again; it leaves") +
             " the render slots for slow sites\" site=" + j.site->name +
             " took_ms=" + std::to_string(std::chrono::duration_cast<milliseconds>(took).count()));
}

site_refresh::queue_stats site_refresh::stats() const {
  std::lock_guard lock(mutex_);
  queue_stats out;
  out.waiting = waiting_.size();
  if (!waiting_.empty())
    out.oldest_wait =
        std::chrono::duration_cast<milliseconds>(clock_.steady_now() - waiting_.front()->queued);
  out.behind = behind_;
  out.parse_pages = parse_pages_;
  out.parse_bytes = parse_bytes_;
  out.parse_full = parse_full_;
  return out;
}

void site_refresh::launch(std::shared_ptr<job> j) {
  if (!j->wanted()) // removed while it waited for a slot
    return release_slot(*j);
  auto& site = *j->site;
  j->launched = clock_.steady_now();
  renderers_.at(site.renderer)
      ->render({site.url, site.wait, site.timeout}, [this, j](render_result result) {
        judge_pace(*j, result);
        if (!result.ok()) {
          release_slot(*j);
          return on_failed(j, std::move(result));
        }
        if (!j->wanted())
          return release_slot(*j);
        // The page counts against the parse queue before its render slot frees: the slot's next
        // render may start only when the queue has room for it.
        {
          std::lock_guard lock(mutex_);
          ++parse_pages_;
          parse_bytes_ += result.html.size();
        }
        release_slot(*j);
        parse(j, std::move(result));
      });
}

void site_refresh::on_failed(const std::shared_ptr<job>& j, render_result result) {
  if (!j->wanted())
    return;
  const auto& site = *j->site;
  std::unique_lock lock(mutex_);
  if (info(result.failure).transient && j->attempt < settings_.retries && !stopped_) {
    ++j->attempt;
    // Full jitter: a random wait up to the exponential bound spreads retries of many sites.
    auto bound = std::min<milliseconds>(
        settings_.retry_max, settings_.retry_base * (1LL << std::min(j->attempt - 1, 30)));
    std::uniform_int_distribution<long long> pick(0, bound.count());
    auto delay = milliseconds(pick(random_));
    retrying_.push_back(j);
    if (!j->retry)
      j->retry = clock_.make_timer();
    // The timer lives in the job, and retrying_ holds the job until the wait ends (or
    // stop()): the wait itself holds it only weakly, so no job owns its own timer.
    j->retry->wait(delay, [this, weak = std::weak_ptr<job>(j)] {
      auto self = weak.lock();
      if (!self)
        return;
      {
        std::lock_guard relock(mutex_);
        std::erase(retrying_, self);
      }
      if (self->wanted())
        queue_render(self);
    });
    lock.unlock();
    log_info("msg=\"retrying site\" site=" + site.name + " attempt=" + std::to_string(j->attempt) +
             " delay_ms=" + std::to_string(delay.count()) +
             " error=" + logfmt_quoted(result.message));
    return;
  }
  lock.unlock();
  refresh_result failed;
  failed.error = std::move(result.message);
  failed.kind = result.failure;
  failed.elapsed = std::chrono::duration_cast<milliseconds>(clock_.steady_now() - j->started);
  log_warn("msg=\"site failed\" site=" + site.name + " kind=" +
           std::string(to_string(failed.kind)) + " error=" + logfmt_quoted(failed.error));
  return j->done(std::move(failed));
}

void site_refresh::parse(std::shared_ptr<job> j, render_result page) {
  // A 4 MB page takes tens of milliseconds to parse: keep it off the network threads, and on
  // its own pool, so a page that is slow to parse holds up only other pages, never /events
  // set-ups, store writes or the representations the worker pool builds.
  boost::asio::post(scrape_, [this, j = std::move(j), page = std::move(page)]() mutable {
    auto r = read_page(*j->site, page, settings_.parse_cpu_budget);
    // The page's bytes leave the queue (and memory) before the next render is let in.
    const auto bytes = page.html.size();
    page = {};
    parsed(bytes);
    r.elapsed = std::chrono::duration_cast<milliseconds>(clock_.steady_now() - j->started);
    const auto& read = *j->site;
    if (!r.ok())
      log_warn("msg=\"site failed\" site=" + read.name + " kind=" + std::string(to_string(r.kind)) +
               " error=" + logfmt_quoted(r.error));
    else if (!r.note.empty())
      log_warn("msg=\"site file needs updating\" site=" + read.name +
               " file=" + logfmt_quoted(scrapers::origin_of(read.scraper->site())) +
               " note=" + logfmt_quoted(r.note));
    if (j->wanted())
      j->done(std::move(r));
  });
}

} // namespace newsdesk::server
