#include "server/news_service.hpp"

#include "server/log.hpp"
#include "server/renderer.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <cctype>

namespace newsdesk::server {

using clock_type = std::chrono::steady_clock;

struct news_service::collection {
  std::mutex mutex;
  std::vector<site_report> reports;
  std::vector<std::vector<scrapers::headline>> headlines;
  std::size_t remaining = 0;
  std::vector<std::function<void(std::shared_ptr<const news_snapshot>)>>
      waiters; // guarded by service mutex_
  clock_type::time_point started = clock_type::now();
};

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
} // namespace

void sort_headlines(std::vector<scrapers::headline>& headlines) {
  std::vector<std::pair<std::string, std::size_t>> keys;
  keys.reserve(headlines.size());
  for (std::size_t i = 0; i < headlines.size(); ++i)
    keys.emplace_back(sort_key(headlines[i].title), i);
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first)
      return a.first < b.first;
    return headlines[a.second].site < headlines[b.second].site;
  });
  std::vector<scrapers::headline> sorted;
  sorted.reserve(headlines.size());
  for (const auto& [key, index] : keys)
    sorted.push_back(std::move(headlines[index]));
  headlines = std::move(sorted);
}

news_service::news_service(std::vector<site_config> sites,
                           std::map<std::string, renderer*> renderers,
                           boost::asio::thread_pool& parse_pool)
    : sites_(std::move(sites))
    , renderers_(std::move(renderers))
    , parse_pool_(parse_pool) {}

void news_service::collect(std::function<void(std::shared_ptr<const news_snapshot>)> done) {
  std::shared_ptr<collection> c;
  {
    std::lock_guard lock(mutex_);
    if (running_) {
      running_->waiters.push_back(std::move(done));
      return;
    }
    c = std::make_shared<collection>();
    c->waiters.push_back(std::move(done));
    c->reports.resize(sites_.size());
    c->headlines.resize(sites_.size());
    c->remaining = sites_.size();
    running_ = c;
  }
  if (sites_.empty()) {
    on_site_done(c, 0, {}, {});
    return;
  }

  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const auto& site = sites_[i];
    render_request request{site.url, site.wait, site.timeout};
    auto* r = renderers_.at(site.renderer);
    r->render(std::move(request), [this, c, i](render_result result) {
      const auto& s = sites_[i];
      site_report report{s.name, s.display_name, s.colour, s.url, s.renderer, false, {},
                         0,      result.elapsed};
      if (!result.ok()) {
        report.error = std::move(result.message);
        log_warn("msg=\"site failed\" site=" + s.name + " kind=" +
                 std::string(to_string(result.failure)) + " error=\"" + report.error + "\"");
        on_site_done(c, i, std::move(report), {});
        return;
      }
      // A 4 MB page takes tens of milliseconds to parse: keep it off the network threads.
      boost::asio::post(parse_pool_, [this, c, i, report = std::move(report),
                                      result = std::move(result)]() mutable {
        const auto& site_cfg = sites_[i];
        auto started = clock_type::now();
        std::vector<scrapers::headline> found;
        try {
          found = site_cfg.scraper->parse(result.html, result.url);
        } catch (const std::exception& e) {
          report.error = "the scraper failed on this page";
          log_error("msg=\"scraper threw\" site=" + site_cfg.name + " error=\"" + e.what() + "\"");
        }
        for (auto& h : found)
          h.site = site_cfg.name; // one scraper may serve several configured sites
        report.elapsed +=
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);
        report.headline_count = found.size();
        if (report.error.empty() && found.empty())
          report.error = "no headlines found on the page (the site's markup may have changed)";
        report.ok = report.error.empty();
        on_site_done(c, i, std::move(report), std::move(found));
      });
    });
  }
}

void news_service::on_site_done(const std::shared_ptr<collection>& c, std::size_t index,
                                site_report report, std::vector<scrapers::headline> headlines) {
  {
    std::lock_guard lock(c->mutex);
    if (!sites_.empty()) {
      c->reports[index] = std::move(report);
      c->headlines[index] = std::move(headlines);
      if (--c->remaining > 0)
        return;
    }
  }
  auto snapshot = std::make_shared<news_snapshot>();
  snapshot->sites = std::move(c->reports);
  for (auto& list : c->headlines)
    for (auto& h : list)
      snapshot->headlines.push_back(std::move(h));
  sort_headlines(snapshot->headlines);
  snapshot->generated_at = std::chrono::system_clock::now();
  snapshot->elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - c->started);

  std::vector<std::function<void(std::shared_ptr<const news_snapshot>)>> waiters;
  {
    std::lock_guard lock(mutex_);
    waiters = std::move(c->waiters);
    running_.reset();
  }
  for (auto& w : waiters)
    w(snapshot);
}

} // namespace newsdesk::server
