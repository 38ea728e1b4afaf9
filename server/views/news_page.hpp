// The /news outputs: the HTML page from the Mustache template templates/news.html, and the same
// data as JSON. The page lists headlines newest first (one site's view: in the site's order),
// each with its age (and, when other sites in the view tell its story, a link to the story's whole
// coverage), under one line of site chips; failures are told in plain words. Everything
// scraped is escaped by the template engine ({{...}} escapes & < > " '); links that are not http(s)
// are dropped here as a last line of defence.
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
  // links); `snapshot` is already filtered by it. Every site in the snapshot gets a chip when
  // there are at most max_site_chips or the query says chips=all; else the max_site_chips most
  // active (the sites the query names always among them), most active first, and a last link to
  // the same view with chips=all. Sites that a renderer problem failed share one notice, listed
  // first, that names the renderer to check; their chips say so only quietly and their headlines
  // are not marked stale (the notice has told it). A search of one site links to the same search
  // of every site. The unfiltered first page (no site=, q=, story=, limit= or before=) opens with
  // "Top stories": a card per story that at least two sites in it tell (at most max_top_stories,
  // most sources first), its lead the story's first headline in the page's order, beneath it the
  // first of each other site (at most max_card_tellings); the list after the cards leaves the
  // cards' headlines out, so none shows twice. O(sites log sites +
  // headlines log headlines).
  std::string render(const news_snapshot& snapshot, const news_query& query = {}) const;

 private:
  struct impl;
  explicit news_page(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// At most this many site chips on a page unless it asks for all (chips=all). A chip is some 370
// bytes of markup: 30 are about 11 KB, a few percent of a full page (page_size headlines, about
// 300 KB), where 3,000 sites would make 1.1 MB of chips. Fewer than ten fit across a desktop
// screen, so 30 are already three screens of sideways scrolling, more than a reader scans; and up
// to 30 sites (the shipped handful, a personal list) the line is every site, as before.
inline constexpr std::size_t max_site_chips = 30;

// At most this many story cards open the unfiltered page. A card is a lead and a few sites'
// headlines, a third of a desktop screen's width: 8 are two or three rows at 1280x800, enough for
// the day's main stories told by several sites while the latest headlines still start within a
// screen or two; more would push the flat list, where arrivals go, out of reach.
inline constexpr std::size_t max_top_stories = 8;

// The first this many cards' pictures load with the page (loading="eager"); the others when
// scrolled near (lazy). Three cards make the first row at 1280 px; a phone shows one.
inline constexpr std::size_t eager_pictures = 3;

// Beneath a card's lead, at most this many other sites' headlines, one each (the first in the
// page's order). A story told by a dozen sites, or one site's series that the stories group,
// would otherwise make a card screens long; four keep it to the lead and a few lines, and the
// whole coverage is one click away ("N sources").
inline constexpr std::size_t max_card_tellings = 4;

// /news.json: {"generated_at", "sites": [...], "headlines": [...], "stories": [...]}, the stories
// being those at least two of the headlines tell (story_view.hpp), most sources first.
std::string news_json(const news_snapshot& snapshot);

} // namespace newsdesk::server
