// The query parameters every news output takes: site= (one or more, repeated or
// comma-separated), q= (keyword, case-insensitive, every word must appear in the title) and
// limit= (at most this many headlines).
#pragma once

#include "server/news/news_service.hpp"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace newsdesk::server {

struct news_query {
  std::vector<std::string> sites; // empty: all
  std::vector<std::string> words; // lower-cased words of q
  std::string q;                  // as given, for echoing in forms
  std::size_t limit = 0;          // 0: no limit
  bool empty() const { return sites.empty() && words.empty() && limit == 0; }
};

// At most this many headlines per answer: far above any real page, and it bounds a hostile
// limit= value.
inline constexpr std::size_t max_limit = 10'000;
// q= longer than this is refused: no headline is that long.
inline constexpr std::size_t max_q_bytes = 200;

// Parses a query string; `site=` names must be among `sites`. Returns the query, or a message
// naming the bad parameter.
std::variant<news_query, std::string> parse_news_query(std::string_view query,
                                                       const std::vector<site_report>& sites);

// The part of `snapshot` the query asks for: the chosen sites and their matching headlines.
news_snapshot apply_query(const news_snapshot& snapshot, const news_query& query);

} // namespace newsdesk::server
