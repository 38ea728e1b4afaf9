// Collects the headlines of every configured site: all sites render at the same time, each
// page is parsed on the worker pool (never on a network thread), and a site that fails gets a
// notice instead of headlines. Requests that arrive while a collection is running share it,
// so a burst of /news views costs one render per site, not one per view.
#pragma once

#include "scrapers/scraper.hpp"
#include "server/config.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace boost::asio {
class thread_pool;
}

namespace newsdesk::server {

class renderer;

// How one site fared in a collection.
struct site_report {
  std::string name;
  std::string display_name;
  std::string colour;
  std::string url;
  std::string renderer;
  bool ok = false;
  std::string error; // short human-readable notice when !ok, e.g. "Splash timed out after 30 s"
  std::size_t headline_count = 0;
  std::chrono::milliseconds elapsed{0}; // render + parse
};

struct news_snapshot {
  std::vector<site_report> sites;            // in config order
  std::vector<scrapers::headline> headlines; // sorted by title, then site
  std::chrono::system_clock::time_point generated_at;
  std::chrono::milliseconds elapsed{0}; // the whole collection
};

class news_service {
 public:
  // `renderers` maps renderer names used by `sites` to renderers; both must outlive this.
  news_service(std::vector<site_config> sites, std::map<std::string, renderer*> renderers,
               boost::asio::thread_pool& parse_pool);

  // Starts a collection (or joins the one running) and calls `done` with its snapshot on some
  // worker or network thread.
  void collect(std::function<void(std::shared_ptr<const news_snapshot>)> done);

  const std::vector<site_config>& sites() const { return sites_; }

 private:
  struct collection;
  void on_site_done(const std::shared_ptr<collection>& c, std::size_t index, site_report report,
                    std::vector<scrapers::headline> headlines);

  std::vector<site_config> sites_;
  std::map<std::string, renderer*> renderers_;
  boost::asio::thread_pool& parse_pool_;

  std::mutex mutex_;
  std::shared_ptr<collection> running_; // guarded by mutex_
};

// Sorts headlines by title (case-insensitively, ignoring leading quotes and punctuation), then
// site, as the page shows them.
void sort_headlines(std::vector<scrapers::headline>& headlines);

} // namespace newsdesk::server
