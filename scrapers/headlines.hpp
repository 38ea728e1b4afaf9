// The rules every scraper applies to the headlines it finds, in one place: built-in C++
// scrapers and declarative site files both feed their raw finds through headline_collector.
#pragma once

#include "scrapers/scraper.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace newsdesk::scrapers {

// `text` with every run of ASCII whitespace (space, tab, LF, FF, CR) replaced by one space and
// the ends trimmed. Other bytes, including non-breaking spaces and invalid UTF-8, are kept.
std::string collapse_whitespace(std::string_view text);

// The most headlines one site contributes to a page. It protects /news from a scraper that
// matches every link of a page (tens of thousands on a 4 MB page); real front pages have
// 20-150 headlines, so 500 never cuts a real one short.
inline constexpr std::size_t max_headlines_per_site = 500;

// Collects the headlines of one page, applying the shared rules:
//  - the title is collapse_whitespace(raw_title); empty titles are dropped;
//  - the href is resolved (url::resolve) against the document's <base href> if it has one
//    (itself resolved against the page URL), else against the page URL;
//  - only http and https results are kept, so javascript:, data:, mailto: never survive;
//  - a URL already collected is dropped: the first occurrence wins and order is preserved;
//  - after max_headlines_per_site headlines, everything is dropped.
// Titles are kept as literal text: "<script>" stays "<script>"; escaping is the renderer's job.
// Not thread-safe; use one collector per extraction. The document need only outlive the
// constructor.
class headline_collector {
 public:
  headline_collector(std::string site, std::string_view page_url, const dom::document& page);

  // The absolute URL `href` resolves to under this collector's base, as add() would use it
  // (before the http/https check); nullopt when it does not resolve. Lets a scraper filter
  // links by host or path before adding them.
  std::optional<std::string> resolve(std::string_view href) const;

  // Applies the rules above; returns true when the headline was kept.
  bool add(std::string_view raw_title, std::string_view href);

  const std::vector<headline>& headlines() const { return headlines_; }
  std::size_t size() const { return headlines_.size(); }
  // Hands over the collected headlines, leaving the collector empty.
  std::vector<headline> take();

 private:
  std::string site_;
  std::string base_;
  std::unordered_set<std::string> seen_urls_;
  std::vector<headline> headlines_;
};

} // namespace newsdesk::scrapers
