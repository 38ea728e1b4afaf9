// What both store backends do to a refresh's input before writing it: the limits of
// store_limits applied the same way, so the two backends keep the same rows.
#pragma once

#include "scrapers/text.hpp"
#include "server/news/headline_store.hpp"
#include "server/words/language.hpp"

#include <string_view>
#include <unordered_set>
#include <vector>

namespace newsdesk::server::store_input {

using scrapers::cut_utf8;

struct row {
  std::string_view url;
  std::string_view title; // cut to max_title_bytes
  std::optional<std::int64_t> published_ms;
  // The language it is written in: what its source declared, unless its title says otherwise
  // (words::headline_language). Decided here, once, so every backend stores the same.
  std::string language;
  std::string_view summary; // cut to max_summary_bytes
  std::string_view image;   // "" when longer than max_image_url_bytes
};

// The headlines of one refresh as they are stored, in the site's order: URLs that are empty,
// too long or listed before are skipped, titles cut, at most max_headlines_per_refresh.
// The views point into `found`.
inline std::vector<row> rows_of(const std::vector<scrapers::headline>& found) {
  std::vector<row> rows;
  std::unordered_set<std::string_view> urls;
  for (const auto& h : found) {
    if (rows.size() >= store_limits::max_headlines_per_refresh)
      break;
    if (h.url.empty() || h.url.size() > store_limits::max_url_bytes || !urls.insert(h.url).second)
      continue;
    const auto title = cut_utf8(h.title, store_limits::max_title_bytes);
    rows.push_back({h.url, title, h.published_ms,
                    words::headline_language(h.language, title, h.url),
                    cut_utf8(h.summary, store_limits::max_summary_bytes),
                    h.image.size() <= store_limits::max_image_url_bytes ? std::string_view(h.image)
                                                                        : std::string_view()});
  }
  return rows;
}

// The notice a failed refresh stores: never empty (an empty one would read as "succeeded").
inline std::string_view failure_notice(std::string_view error) {
  return error.empty() ? std::string_view("refresh failed")
                       : cut_utf8(error, store_limits::max_error_bytes);
}

} // namespace newsdesk::server::store_input
