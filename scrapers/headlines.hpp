// The rules every scraper applies to the headlines it finds, in one place: built-in C++
// scrapers and declarative site files both feed their raw finds through headline_collector.
#pragma once

#include "scrapers/dom.hpp"
#include "scrapers/scraper.hpp"

#include <cstddef>
#include <cstdint>
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
//  - the title is normalise_title_text(raw_title) (Unicode spaces collapsed, invisible characters
//    dropped) without a trailing byline (strip_byline); empty titles and titles of one word
//    (title_words) are dropped;
//  - rank numbers written into titles are taken off when three or more headlines in a row
//    start with consecutive numbers (a most-read list: "1 UK economy...", "2 ..."), so a lone
//    "10 things to know" keeps its number;
//  - the href is resolved (url::resolve) against the document's <base href> if it has one
//    (itself resolved against the page URL), else against the page URL;
//  - only http and https results are kept, so javascript:, data:, mailto: never survive;
//  - a URL already collected is dropped: the first occurrence wins and order is preserved;
//  - after max_headlines_per_site headlines, everything is dropped.
// Titles are kept as literal text: "<script>" stays "<script>"; escaping is the renderer's job.
// Not thread-safe; use one collector per extraction. The document need only outlive the
// constructor.
// A date as feeds and pages write it, as Unix milliseconds: RFC 822/1123 ("Tue, 17 Nov 2015
// 09:12:00 GMT", RSS pubDate) or RFC 3339/ISO 8601 ("2015-11-17T09:12:00Z", "2015-11-17T09:12
// +01:00", a bare "2015-11-17"); a time without a zone is taken as UTC. nullopt for anything
// else, including impossible fields (month 13, hour 25).
std::optional<std::int64_t> parse_date(std::string_view text);
// parse_date, kept only when plausible as a headline's publication: from 1990 on and no more
// than a day after `now_ms` (a clock a little ahead is allowed; "2099" is not).
std::optional<std::int64_t> plausible_date(std::string_view text, std::int64_t now_ms);

// A link's title text apart from what is glued to it. Descendants whose class or data-*
// attributes say kicker, eyebrow, label or flag become the kicker; those that say byline,
// author, rank, timestamp or date, and <time> elements, are left out; a leading rank number
// ("1.", a lone "3" in its own element) is dropped; a leading all-capitals run in its own
// element followed by ordinary text ("<strong>PLANE CRASH</strong> Bomb destroyed...") becomes
// the kicker. When leaving things out would empty the title, the whole text is the title.
struct title_parts {
  std::string title;  // whitespace-collapsed
  std::string kicker; // whitespace-collapsed; may be empty
};
title_parts split_title(dom::node element);

// The publication time of the headline whose link is `link`: the first <time datetime> among
// the link's ancestors up to the one that holds this headline alone (it stops below an
// ancestor holding another link of three or more words, and after an article or list item),
// kept when plausible_date accepts it.
std::optional<std::int64_t> time_near(dom::node link, std::int64_t now_ms);

// The picture shown with the headline whose link is `link`: the first <img> inside the link, else
// inside the nearest ancestor (up to six levels, stopping after an <article> or <li>) that holds
// no other headline's link, the same card time_near reads. Of an <img>, the lazy loaders'
// data-src (data-lazy-src, data-original) before src, and from a srcset (or data-srcset) the
// smallest candidate at least picture_source_width wide, else its widest. Images declared
// smaller than 100 px on a side (icons, avatars, tracking pixels), data: URLs and SVG are not
// pictures. Empty when there is none; the URL is as written (add's base resolves it).
std::string_view image_near(dom::node link);
// The width a picture is shown at (server/pictures/ makes it this wide): the candidate wanted.
inline constexpr int picture_source_width = 480;
// A picture's URL longer than this is not kept (a real one is under 500 bytes; data is not a URL).
inline constexpr std::size_t max_image_url_bytes = 2048;

// The most of a left-out link's text kept: enough to recognise it; a matched box can hold a page.
inline constexpr std::size_t max_left_out_title = 200;

// The most of a summary kept (headline::summary): a line or two under a story's lead, not the
// article. Cut at a word's end, with an ellipsis.
inline constexpr std::size_t max_summary_bytes = 280;

// A link a scraper saw but did not keep, and why: what `--try-site` lists so that the effect of a
// rule can be seen ("duplicate", "bad title: one word", "furniture: media file"...).
struct left_out_link {
  std::string
      title;       // as the page wrote it, cleaned, at most max_left_out_title bytes; may be empty
  std::string url; // resolved when it resolves, else as written
  std::string reason;
};

class headline_collector {
 public:
  headline_collector(std::string site, std::string_view page_url, const dom::document& page);

  // Every link add() refuses is appended to `sink` (until the collector is destroyed or this is
  // called again with null), with its reason. `sink` must outlive the collector's use of it.
  void report_left_out(std::vector<left_out_link>* sink) { left_out_ = sink; }
  // A feed's item titles are its authors' titles, not text read off a page: a one-word title
  // there is the title ("Obituary" in a blog's feed is what the author called the post), and
  // numbered items ("1 Introduction", "2 Setup") are numbered by their author, not ranked by a
  // list around them. Both rules are off; the text is still normalised and bylines taken off.
  void authored_titles() { authored_titles_ = true; }

  // The absolute URL `href` resolves to under this collector's base, as add() would use it
  // (before the http/https check); nullopt when it does not resolve. Lets a scraper filter
  // links by host or path before adding them.
  std::optional<std::string> resolve(std::string_view href) const;

  // Applies the rules above; returns true when the headline was kept.
  bool add(std::string_view raw_title, std::string_view href,
           std::optional<std::int64_t> published_ms = std::nullopt, std::string_view kicker = {});
  // Gives the headline add() kept last a summary (a feed item's description, already text):
  // whitespace collapsed, the title taken off its start when it repeats it, cut at
  // max_summary_bytes at a word's end; nothing when what is left is empty.
  void summarise_last(std::string_view text);
  // Gives the headline add() kept last a picture: `src` resolved under the page's base, when it
  // is an http(s) URL of at most max_image_url_bytes; nothing otherwise.
  void illustrate_last(std::string_view src);
  // The headline of a link element on the page: its title and kicker from split_title(title)
  // (`title` defaults to the link), its published time from time_near(link).
  // Its picture is image_near(link)'s.
  bool add_link(dom::node link, std::string_view href, dom::node title = {});

  // Why the last add() that returned false refused its link.
  enum class refusal { none, over_limit, bad_title, not_http, duplicate };
  refusal last_refusal() const { return last_refusal_; }

  // The time this collector was made (Unix ms): what "plausible" dates are judged against.
  std::int64_t now_ms() const { return now_ms_; }

  const std::vector<headline>& headlines() const { return headlines_; }
  std::size_t size() const { return headlines_.size(); }
  // Hands over the collected headlines, leaving the collector empty.
  std::vector<headline> take();

 private:
  void leave_out(std::string_view title, std::string_view url, refusal why, std::string reason);
  // Follows the run of titles starting with consecutive numbers; see the rules above.
  void follow_numbering(const std::string& title, std::size_t kept_at);

  std::string site_;
  std::string base_;
  std::int64_t now_ms_ = 0;
  std::unordered_set<std::string> seen_urls_;
  std::vector<headline> headlines_;
  std::vector<left_out_link>* left_out_ = nullptr;
  bool authored_titles_ = false;
  refusal last_refusal_ = refusal::none;
  // The current run of added titles numbered n, n+1, n+2...: each number and the index of its
  // headline in headlines_ (npos for a duplicate, which still continues the run).
  std::vector<std::pair<int, std::size_t>> numbered_run_;
};

} // namespace newsdesk::scrapers
