// The /news outputs: the HTML page from the Mustache template templates/news.html, and the same
// data as JSON. Everything scraped is escaped by the template engine ({{...}} escapes & < > " ');
// links that are not http(s) are dropped here as a last line of defence.
#pragma once

#include "server/news_service.hpp"

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

  // Thread-safe.
  std::string render(const news_snapshot& snapshot) const;

 private:
  struct impl;
  explicit news_page(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// /news.json: {"generated_at", "elapsed_ms", "sites": [...], "headlines": [...]}.
std::string news_json(const news_snapshot& snapshot);

// "#111111" or "#ffffff", whichever reads better on the given "#rgb"/"#rrggbb" background.
std::string text_colour_for(std::string_view background);

} // namespace newsdesk::server
