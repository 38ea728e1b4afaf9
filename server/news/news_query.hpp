// The query parameters every news output and /events take: site= (one or more, repeated or
// comma-separated), q= (words; each must begin a word of the title, compared without case or
// accents: search.hpp), limit= (at most this many headlines; ignored by /events), before= (the
// page after a cursor, as the previous page's `next` gives it) and story= (one story's headlines:
// its whole coverage, read from the store by the routes; on /events, the headlines that join it),
// section= (the sites a section lists, as site= would name them: only with the sites' reports,
// parse_news_query's second form), and chips=all, which only the page reads (a chip for every site
// in the view rather than the most active: news_page.hpp); the other outputs take it and ignore it.
//
// A page is bounded: without limit=, a view of several sites shows the newest page_size
// headlines and says where the next page starts, and at most max_site_chips site chips, so /news
// stays a page however many sites there are. A site's own view lists what the site lists
// (bounded by the store's limits).
#pragma once

#include "server/news/news_service.hpp"
#include "server/news/search.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace newsdesk::server {

struct news_query {
  std::vector<std::string> sites; // empty: all
  search_query words;             // q's words (search.hpp)
  std::string q;                  // as given, for echoing in forms
  std::size_t limit = 0;          // 0: no limit
  // before=TIME_MS.ID: only headlines after that one (page_time, id) in the page's order.
  std::int64_t before_ms = 0;
  std::int64_t before_id = 0;
  std::int64_t story = 0; // story=ID; 0: any
  std::string section;    // section=NAME: `sites` are its sites
  bool all_chips = false; // chips=all
  bool paged() const { return before_ms != 0 || before_id != 0; }
  // Whether the headlines are a part of the whole: some sites, a search, a limit, a later page
  // or a story.
  bool filters_headlines() const {
    return !sites.empty() || !words.empty() || limit != 0 || paged() || story != 0;
  }
  // No parameter at all: the view everybody asks for, built ahead of time.
  bool empty() const { return !filters_headlines() && !all_chips; }
  // One site named: the page shows that site's headlines in the site's own order.
  bool one_site() const { return sites.size() == 1 && section.empty(); }
  // Whether `item` passes the site=, q= and story= filters (limit= is not about one headline).
  bool matches(const news_item& item) const;
};

// At most this many headlines per answer: far above any real page, and it bounds a hostile
// limit= value.
inline constexpr std::size_t max_limit = 10'000;
// A view of several sites without limit= shows this many headlines, then links to the next
// page: a few screens of reading, and about 300 KB of page, whether there are 6 sites or 3,000.
inline constexpr std::size_t page_size = 500;
// q= longer than this is refused: no headline is that long.
inline constexpr std::size_t max_q_bytes = 200;

// Parses a query string; `site=` names must be ones `is_site` accepts. Returns the query, or a
// message naming the bad parameter.
std::variant<news_query, std::string>
parse_news_query(std::string_view query, const std::function<bool(std::string_view)>& is_site);
// The same, with the sites a snapshot reports; section= is read too (a section no site is in, or
// one given with site=, is refused).
std::variant<news_query, std::string> parse_news_query(std::string_view query,
                                                       const std::vector<site_report>& sites);

// The part of `snapshot` the query asks for: the chosen sites and their matching headlines,
// newest first as in the snapshot, or in the site's own order when one site is named; a view of
// several sites is cut to one page (`next` then names the cursor of the page after it).
news_snapshot apply_query(const news_snapshot& snapshot, const news_query& query);

// `snapshot` with `coverage` (a story's headlines, newest first, as the store keeps them) in
// place of its own headlines, those of sites no longer configured left out: what a story= view
// is cut from.
news_snapshot with_coverage(const news_snapshot& snapshot, std::vector<news_item> coverage);

// The before= value that continues after `item`.
std::string cursor_after(const news_item& item);

} // namespace newsdesk::server
