// The /news outputs: the HTML page from the Mustache template templates/news.html, and the same
// data as JSON. Everything scraped is escaped by the template engine ({{...}} escapes & < > " ');
// links that are not http(s) are dropped here as a last line of defence.
#pragma once

#include "server/news/news_query.hpp"
#include "server/news/news_service.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace newsdesk::server {

class news_page {
 public:
  // Loads `dir`/news.html. Throws std::runtime_error naming the file when it is missing,
  // unreadable or not a valid Mustache template.
  static news_page load(const std::filesystem::path& dir);

  news_page(news_page&&) noexcept;
  news_page& operator=(news_page&&) noexcept;
  ~news_page();

  // Thread-safe. `query` is what the page was asked for (echoed in its search form and feed
  // links); `snapshot` is already filtered by it.
  std::string render(const news_snapshot& snapshot, const news_query& query = {}) const;

 private:
  struct impl;
  explicit news_page(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// /news.json: {"generated_at", "sites": [...], "headlines": [...]}.
std::string news_json(const news_snapshot& snapshot);

// "#111111" or "#ffffff", whichever reads better on the given "#rgb"/"#rrggbb" background.
std::string text_colour_for(std::string_view background);

// "just now", "5 min ago", "3 h ago", "2 days ago".
std::string age_text(std::int64_t then_ms, std::int64_t now_ms);

} // namespace newsdesk::server
