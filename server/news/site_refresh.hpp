// One refresh of one site, from the render to the headlines read off the page: the renders sent
// out at once are capped across sites (Splash's slots), sites whose last render was slow share
// all but a reserved slot (so a few stalling sites cannot keep healthy ones waiting), transient
// failures are retried with exponential backoff and full jitter, and the page is parsed on its
// own pool within a CPU budget.
// What a site's last good page gave is kept with the page's validators: the next render asks
// the site conditionally (direct and feed renderers), and a 304 gives that result again without
// a parse. No page body is kept: a 3 MB front page costs its headlines (kilobytes) between
// refreshes.
// Rendering waits for parsing: a render starts only while the pages rendered and not yet parsed
// hold fewer than max_parse_queue_bytes, so with hundreds of heavy front pages due at once the
// pages wait as sites in the queue (a few bytes each), not as bodies in memory. What a refresh
// holds at most is then that budget plus one page per render slot.
// When and whether a site refreshes is the schedule's business (site_schedule), what the result
// does to the page the headline state's (headline_state); this type only turns a site into a
// result.
//
// Threads: every member may be called from any thread. Renders start on the io_context, pages
// are parsed on the scrape executor, and `done` runs there (a page that was read) or an
// io_context thread (a render that failed for good, or a page that had not changed).
#pragma once

#include "scrapers/scraper.hpp"
#include "server/news/news_clock.hpp"
#include "server/news/site_config.hpp"
#include "server/render/renderer.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace newsdesk::server {

// What a refresh ended with.
struct refresh_result {
  std::vector<scrapers::headline> found;  // in the site's order, capped as the store keeps them
  std::string error;                      // "" on success
  failure_kind kind = failure_kind::none; // why it failed
  std::string note;                       // what the operator should know about a success
  std::chrono::milliseconds elapsed{0};   // from the first render to the end, retries included
  // Where the site's icon may be, best first (scrapers::icon_urls); empty on failure.
  std::vector<std::string> icon_urls;

  bool ok() const { return error.empty(); }
};

// Reads a rendered page with the site's scraper within `cpu_budget`, applies the store's limits
// to what it found (titles cut, overlong URLs skipped, the list capped) and names the failure,
// if any. `elapsed` is left for the caller. Pure: no I/O, safe on any thread.
refresh_result read_page(const site_config& site, const render_result& page,
                         std::chrono::milliseconds cpu_budget);

class site_refresh {
 public:
  // `renderers` by name; each must outlive this. Jitter comes from `seed`.
  site_refresh(boost::asio::io_context& ioc, boost::asio::any_io_executor scrape, news_clock& clock,
               std::map<std::string, renderer*> renderers, const refresh_settings& settings,
               std::uint64_t seed);
  ~site_refresh();

  bool has_renderer(const std::string& name) const { return renderers_.count(name) > 0; }

  // Refreshes `site`. `wanted` is asked before each render and retry: once it says false (the
  // site was removed, or the service stopped), the refresh ends without calling `done`.
  void run(std::shared_ptr<const site_config> site, std::function<bool()> wanted,
           std::function<void(refresh_result)> done);

  // Cancels retries waiting for their time; renders in flight finish and are dropped.
  void stop();

  // How refreshes queue for a render slot, and pages for a parse. A cycle that falls behind its
  // interval shows here first: sites become due faster than the slots (or the parse threads)
  // finish them.
  struct queue_stats {
    std::size_t waiting = 0;                  // refreshes waiting to render now
    std::chrono::milliseconds oldest_wait{0}; // how long the first of them has waited
    // Refreshes that waited longer than half their site's interval: at that point a site's
    // refreshes come at less than its interval's pace.
    std::uint64_t behind = 0;
    std::size_t parse_pages = 0; // rendered pages waiting for a parse thread or being parsed
    std::size_t parse_bytes = 0; // their bytes (max_parse_queue_bytes bounds what starts)
    // Refreshes that waited to render with a render slot free, because parse_bytes was at the
    // bound (the parse threads, not the renderer, set the pace then).
    std::uint64_t parse_full = 0;
    // Refreshes whose site answered 304 Not Modified: the last read was kept, with no parse.
    std::uint64_t not_modified = 0;
  };
  queue_stats stats() const;

 private:
  struct job;
  void queue_render(std::shared_ptr<job> j);
  void launch(std::shared_ptr<job> j);
  void release_slot(const job& finished);
  void parsed(std::size_t bytes);
  bool may_start(const job& j) const; // under mutex_
  void start(std::shared_ptr<job> j); // under mutex_
  // Starts the waiting refreshes that may start now, first in line first; returns the "fall
  // behind" line to log (outside the lock), if one is due.
  std::string start_waiting_locked();
  void held_for_parse_locked(); // counts the first in line when only the parse queue holds it
  void parse(std::shared_ptr<job> j, render_result page);
  void judge_pace(const job& j, const render_result& result);
  // A render that failed: retried when transient and retries are left, else the refresh ends.
  void on_failed(const std::shared_ptr<job>& j, render_result result);
  // The site said its page has not changed: the last read again, or (if it went meanwhile) the
  // page asked for in full.
  void on_not_modified(const std::shared_ptr<job>& j);
  void remember(const job& j, const page_validators& validators, const refresh_result& read);

  // A site's last good read and the validators of the page it came from. `site` is the
  // configuration it was read with: a reloaded site (another scraper, say) is asked in full.
  struct last_read {
    std::weak_ptr<const site_config> site;
    page_validators validators;
    refresh_result read;
  };

  boost::asio::io_context& ioc_;
  boost::asio::any_io_executor scrape_;
  news_clock& clock_;
  const std::map<std::string, renderer*> renderers_;
  const refresh_settings settings_;

  mutable std::mutex mutex_;                    // guards everything below
  std::size_t active_ = 0;                      // renders in flight
  std::size_t slow_active_ = 0;                 // of which for sites whose last render was slow
  std::size_t parse_pages_ = 0;                 // rendered pages not yet parsed
  std::size_t parse_bytes_ = 0;                 // their bytes
  std::uint64_t parse_full_ = 0;                // renders held back by parse_bytes_
  std::uint64_t not_modified_ = 0;              // refreshes answered 304 (no parse)
  std::map<std::string, last_read> last_reads_; // by site name
  std::set<std::string> slow_sites_;            // sites whose last render was slow, by name
  std::deque<std::shared_ptr<job>> waiting_;    // refreshes waiting for a render slot, FIFO
  std::vector<std::shared_ptr<job>> retrying_;  // jobs waiting to be tried again
  std::mt19937_64 random_;
  std::uint64_t behind_ = 0;
  std::chrono::steady_clock::time_point behind_warned_{}; // the last "fall behind" log line
  bool stopped_ = false;
};

} // namespace newsdesk::server
