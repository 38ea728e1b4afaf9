// The words a headline is compared on, before they are weighted by how rare they are: the
// title's words and its URL slug's, read in the headline's language (server/words/words.hpp:
// folded as search folds them, stemmed by the language's Snowball stemmer, cut by ICU's word
// breaker in scripts without spaces, numbers normalised), the language's stop words left out,
// each with a boost: a name or other capitalised word in a sentence-case title counts more, a
// word found only in the slug less.
#pragma once

#include "server/words/words.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server::stories {

struct headline_term {
  std::string text; // folded and stemmed
  float boost = 1;  // before the word's rarity: > 1 for names, < 1 for slug-only words
  // 0: the word stands on its own. 1-31: it is one of the words of a name of several words in
  // a sentence-case title ("White House", "Champions League"), which share the number: they are
  // one piece of evidence, not several.
  std::uint8_t name = 0;
};

// Each distinct term of a headline once (the larger boost when it occurs twice), in the order
// first met. Bounded: at most max_terms_per_headline terms, words of at most
// words::max_word_bytes. `language` as words::words_of takes it ("" for none known).
std::vector<headline_term> headline_terms(std::string_view title, std::string_view url,
                                          std::string_view language);

inline constexpr std::size_t max_terms_per_headline = 32;

} // namespace newsdesk::server::stories
