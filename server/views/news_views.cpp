#include "server/views/news_views.hpp"

#include "scrapers/feed.hpp"
#include "server/core/yield_point.hpp"
#include "server/http/http_message.hpp"
#include "server/views/feeds.hpp"
#include "server/views/news_page.hpp"

#include <algorithm>
#include <map>

namespace newsdesk::server {

namespace {

// Scraped markup never reaches the page, but if a template edit ever let it, the browser would
// still refuse inline scripts and foreign resources.
constexpr const char* content_security_policy =
    "default-src 'none'; style-src 'self' 'unsafe-inline'; script-src 'self'; img-src 'self' "
    "data:; "
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

// A feed's title: the sites it is made of.
std::string sites_title(const news_snapshot& s) {
  std::string names;
  for (const auto& site : s.sites)
    names += (names.empty() ? "" : ", ") + site.display_name;
  return "newsdesk: " + (names.empty() ? std::string("no sites") : names);
}

// Headers a view's 200 carries besides the representation's own.
const header_list& view_headers(const std::string& path) {
  static const header_list page_headers{{"X-Content-Type-Options", "nosniff"},
                                        {"Content-Security-Policy", content_security_policy},
                                        {"Referrer-Policy", "no-referrer"}};
  static const header_list data_headers{{"X-Content-Type-Options", "nosniff"}};
  return path == "/news" ? page_headers : data_headers;
}

// Clients may keep a copy but must ask (If-None-Match) before using it: a 304 costs a few
// hundred bytes, and headlines change without notice.
constexpr std::string_view view_cache_control = "no-cache";

// The bytes of a view, without its headers.
representation_cache::content view_content(const news_page& page, const news_snapshot& snapshot,
                                           const std::string& path, const news_query& query,
                                           const std::string& base, const std::string& target) {
  auto view = apply_query(snapshot, query);
  yield_point();
  if (path == "/news")
    return {"text/html; charset=utf-8", page.render(view, query)};
  if (path == "/news.json")
    return {json_content_type, news_json(view)};
  if (path == "/opml") {
    // Each site's own feed, for a reader to subscribe to them one by one.
    std::vector<scrapers::opml_outline> outlines;
    for (const auto& s : view.sites)
      outlines.push_back(
          {s.display_name, base + "/news.atom?site=" + s.name, base + "/news?site=" + s.name});
    return {"text/x-opml; charset=utf-8",
            scrapers::write_opml("newsdesk: " + sites_title(view), outlines)};
  }

  std::map<std::string, const site_report*> sites;
  for (const auto& s : view.sites)
    sites[s.name] = &s;
  std::vector<feed_entry> entries;
  std::int64_t updated = 0;
  for (const auto& item : view.headlines) {
    // A reload that removes a site can meet a view still holding its headlines: they are left
    // out, never thrown over (this runs on the worker pool, where a throw ends the process).
    const auto found = sites.find(item.headline.site);
    if (found == sites.end())
      continue;
    const auto* site = found->second;
    // An entry is updated when it first appears, not on every refresh that sees it again: feed
    // readers re-flag entries whose <updated> moves, and the feed's bytes (and ETag) then stay
    // the same until a headline is added or gone.
    entries.push_back({"", item.headline.title, item.headline.url, item.headline.site,
                       site->display_name, item.first_seen_ms, item.first_seen_ms,
                       item.headline.published_ms, item.headline.summary});
    updated = std::max(updated, item.first_seen_ms);
  }
  // Newest first, as feed readers expect.
  std::stable_sort(entries.begin(), entries.end(), [](const feed_entry& a, const feed_entry& b) {
    return a.first_seen_ms > b.first_seen_ms;
  });
  const auto query_part =
      target.find('?') == std::string::npos ? std::string() : target.substr(target.find('?'));
  feed_info info{sites_title(view), base + target, base + "/news" + query_part, updated};
  if (path == "/news.atom")
    return {"application/atom+xml; charset=utf-8", atom_feed(info, entries)};
  return {"application/feed+json; charset=utf-8", json_feed(info, entries)};
}

} // namespace

representation_cache::content build_view(const news_page& page, const news_snapshot& snapshot,
                                         const std::string& path, const news_query& query,
                                         const std::string& base, const std::string& target) {
  auto content = view_content(page, snapshot, path, query, base, target);
  content.cache_control = view_cache_control;
  content.headers = view_headers(path);
  return content;
}

std::string view_key(const std::string& path, const news_query& query, const std::string& base) {
  auto sites = query.sites;
  std::sort(sites.begin(), sites.end());
  std::string key = path + "?site=";
  for (const auto& s : sites)
    key += s + ",";
  key += "&q=" + query.q + "&limit=" + std::to_string(query.limit);
  if (query.paged())
    key += "&before=" + std::to_string(query.before_ms) + "." + std::to_string(query.before_id);
  if (query.story)
    key += "&story=" + std::to_string(query.story);
  if (!query.section.empty())
    key += "&section=" + form_encode(query.section);
  if (query.all_chips)
    key += "&chips=all";
  if (path == "/news.atom" || path == "/news.feed.json" || path == "/opml")
    key += "@" + base;
  return key;
}

std::uint64_t view_version(const news_snapshot& snapshot, const news_query& query) {
  if (query.sites.empty())
    return snapshot.version;
  std::uint64_t version = 0;
  for (const auto& s : snapshot.sites)
    if (std::find(query.sites.begin(), query.sites.end(), s.name) != query.sites.end())
      version = std::max(version, s.version);
  return version;
}

std::string view_target(const std::string& path, const news_query& query) {
  std::string target = path;
  auto add = [&target, first = true](std::string_view name, std::string_view value) mutable {
    target += first ? '?' : '&';
    first = false;
    target.append(name).append("=").append(value);
  };
  if (!query.section.empty())
    add("section", form_encode(query.section));
  else
    for (const auto& site : query.sites)
      add("site", site);
  if (!query.q.empty())
    add("q", form_encode(query.q));
  if (query.limit)
    add("limit", std::to_string(query.limit));
  if (query.paged())
    add("before", std::to_string(query.before_ms) + "." + std::to_string(query.before_id));
  if (query.story)
    add("story", std::to_string(query.story));
  if (query.all_chips)
    add("chips", "all");
  return target;
}

} // namespace newsdesk::server
