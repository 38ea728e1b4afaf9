#include "server/news/news_page.hpp"

#include "server/http/http_message.hpp"

#include "scrapers/url.hpp"

#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>

namespace newsdesk::server {

namespace mustache = kainjow::mustache;
using json = nlohmann::json;

namespace {

std::string millis_text(std::chrono::milliseconds ms) {
  if (ms.count() < 1000)
    return std::to_string(ms.count()) + " ms";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

bool safe_link(const scrapers::headline& h) {
  return scrapers::url::is_http_url(h.url);
}

} // namespace

std::string text_colour_for(std::string_view bg) {
  auto channel = [&](int i) {
    int v = 0;
    if (bg.size() == 4) {
      v = std::stoi(std::string(2, bg[1 + i]), nullptr, 16);
    } else if (bg.size() == 7) {
      v = std::stoi(std::string(bg.substr(1 + 2 * i, 2)), nullptr, 16);
    }
    double c = v / 255.0;
    return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
  };
  if (bg.size() != 4 && bg.size() != 7)
    return "#ffffff";
  double luminance = 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
  // WCAG contrast against white (1.05 / (L + 0.05)) vs against near-black: pick the larger.
  return luminance > 0.179 ? "#111111" : "#ffffff";
}

struct news_page::impl {
  mutable std::mutex mutex; // kainjow's render() is not const
  mutable mustache::mustache tmpl;
  explicit impl(const std::string& text)
      : tmpl(text) {}
};

news_page::news_page(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
news_page::news_page(news_page&&) noexcept = default;
news_page& news_page::operator=(news_page&&) noexcept = default;
news_page::~news_page() = default;

news_page news_page::load(const std::filesystem::path& dir) {
  auto path = dir / "news.html";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(
        "cannot read template " + path.string() +
        " (set --templates or NEWSDESK_TEMPLATES_DIR to the folder holding news.html)");
  std::ostringstream text;
  text << in.rdbuf();
  auto p = std::make_unique<impl>(text.str());
  if (!p->tmpl.is_valid())
    throw std::runtime_error("template " + path.string() +
                             " is not valid Mustache: " + p->tmpl.error_message());
  return news_page(std::move(p));
}

std::string news_page::render(const news_snapshot& snapshot, const news_query& query) const {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  mustache::data sites{mustache::data::type::list};
  std::size_t failed = 0;
  for (const auto& s : snapshot.sites) {
    mustache::data site;
    site.set("name", s.name);
    site.set("display_name", s.display_name);
    site.set("colour", s.colour);
    site.set("text_colour", text_colour_for(s.colour));
    site.set("url", s.url);
    site.set("renderer", s.renderer);
    site.set("ok", s.ok);
    site.set("stale", s.stale);
    site.set("failed", !s.ok && !s.stale && s.last_attempt_ms != 0 && !s.error.empty());
    site.set("pending", !s.ok && !s.stale && s.error.empty());
    site.set("error", s.error);
    site.set("headline_count", std::to_string(s.headline_count));
    site.set("elapsed", millis_text(s.elapsed));
    site.set("updated",
             s.last_success_ms ? age_text(s.last_success_ms, now) : std::string("never"));
    site.set("updated_at", s.last_success_ms ? iso8601_ms(s.last_success_ms) : std::string());
    failed += s.ok ? 0 : 1;
    sites.push_back(site);
  }

  std::map<std::string_view, const site_report*> by_name;
  for (const auto& s : snapshot.sites)
    by_name[s.name] = &s;
  mustache::data headlines{mustache::data::type::list};
  std::size_t shown = 0;
  std::int64_t last_id = 0;
  for (const auto& item : snapshot.headlines) {
    const auto& h = item.headline;
    if (!safe_link(h))
      continue;
    mustache::data entry;
    entry.set("title", h.title);
    entry.set("url", h.url);
    entry.set("site", h.site);
    entry.set("is_new", item.is_new);
    auto it = by_name.find(h.site);
    entry.set("site_display_name", it != by_name.end() ? it->second->display_name : h.site);
    headlines.push_back(entry);
    last_id = std::max(last_id, item.id);
    ++shown;
  }

  // The same filters as a query string for the feed links: "?site=a&site=b&q=...&limit=N".
  std::string feed_query;
  auto add_parameter = [&feed_query](std::string_view name, std::string_view value) {
    feed_query += feed_query.empty() ? '?' : '&';
    feed_query.append(name).append("=").append(value);
  };
  for (const auto& site : query.sites)
    add_parameter("site", site);
  if (!query.q.empty())
    add_parameter("q", form_encode(query.q));
  if (query.limit)
    add_parameter("limit", std::to_string(query.limit));

  mustache::data page;
  page.set("sites", sites);
  page.set("headlines", headlines);
  page.set("has_headlines", shown > 0);
  page.set("headline_count", std::to_string(shown));
  page.set("site_count", std::to_string(snapshot.sites.size()));
  page.set("failed_count", std::to_string(failed));
  page.set("has_failures", failed > 0);
  page.set("generated_at", iso8601(snapshot.generated_at));
  page.set("notice", snapshot.notice);
  page.set("has_notice", !snapshot.notice.empty());
  page.set("q", query.q);
  page.set("filtered", !query.empty());
  page.set("feed_query", feed_query);
  page.set("last_id", std::to_string(last_id));

  std::lock_guard lock(impl_->mutex);
  return impl_->tmpl.render(page);
}

std::string news_json(const news_snapshot& snapshot) {
  json sites = json::array();
  for (const auto& s : snapshot.sites)
    sites.push_back({{"name", s.name},
                     {"display_name", s.display_name},
                     {"colour", s.colour},
                     {"url", s.url},
                     {"renderer", s.renderer},
                     {"ok", s.ok},
                     {"stale", s.stale},
                     {"error", s.error.empty() ? json(nullptr) : json(s.error)},
                     {"headline_count", s.headline_count},
                     {"elapsed_ms", s.elapsed.count()},
                     {"last_success",
                      s.last_success_ms ? json(iso8601_ms(s.last_success_ms)) : json(nullptr)}});
  json headlines = json::array();
  for (const auto& item : snapshot.headlines)
    if (safe_link(item.headline))
      headlines.push_back(item);
  json out = {{"generated_at", iso8601(snapshot.generated_at)},
              {"sites", std::move(sites)},
              {"headlines", std::move(headlines)}};
  if (!snapshot.notice.empty())
    out["notice"] = snapshot.notice;
  // Scraped text is usually UTF-8 but not always; replace invalid bytes rather than throw.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string age_text(std::int64_t then_ms, std::int64_t now_ms) {
  auto seconds = std::max<std::int64_t>(0, (now_ms - then_ms) / 1000);
  if (seconds < 60)
    return "just now";
  if (seconds < 3600)
    return std::to_string(seconds / 60) + " min ago";
  if (seconds < 2 * 86400)
    return std::to_string(seconds / 3600) + " h ago";
  return std::to_string(seconds / 86400) + " days ago";
}

} // namespace newsdesk::server
