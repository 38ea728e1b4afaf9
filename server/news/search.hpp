// Search by words: a query matches a title when every query word is the beginning of some word of
// the title ("war" finds "War" and "warships", not "towards"). The words are those stories
// compare (server/words/words.hpp), read in the title's language: folded (Unicode case folding,
// compatibility forms and accents removed, so "elysee", "ÉLYSÉE" and "Élysée" are one word),
// stemmed where Snowball stems the language (so "erdbeben" finds "Erdbebens" and "Erdbebens"
// finds "Erdbeben"), and cut by ICU's word breaker in scripts written without spaces (so "地震"
// finds "東京で震度5強の地震" by its word, and "京都" does not find "東京都"). A query word
// matches when its stem begins the stem of a title word, or as typed begins the word as written.
#pragma once

#include "server/words/words.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace newsdesk::server {

// A query's words, read once in every language that stems differently: immutable once made, so
// one query (an alert's) may be matched from any number of threads at once.
class search_query {
 public:
  search_query() = default;
  explicit search_query(std::string_view q);

  bool empty() const { return folded_.empty(); }
  // The query's words folded, as typed.
  const std::vector<std::string>& words() const { return folded_; }

  // Whether every word of the query begins a word of `title` read in `language` (a code, as the
  // headline's language; "" reads it without stemming). No words: true.
  bool matches(std::string_view title, std::string_view language) const;

 private:
  std::vector<std::string> folded_;
  // Per stemming language: the query's words stemmed in it, in the order of folded_.
  std::vector<std::pair<std::string, std::vector<std::string>>> stems_;
};

} // namespace newsdesk::server
