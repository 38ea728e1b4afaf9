// The words of a text in a language, as stories compare headlines and search matches them: the
// same words for both, so a query finds what stories group.
//
// - Words: runs of letters and digits, split at spaces, punctuation and apostrophes ("l'OL" is
//   "l" and "OL"). Runs in scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer,
//   Myanmar) are cut into words by ICU's dictionary word breaker (BreakIterator); Korean's
//   space-separated eojeol lose the particle they end with ("지진이", "지진으로": "지진").
// - Numbers: one word with their separators, normalised, so "7,1" and "7.1" are one word, as are
//   "1,000", "1.000" and "1000" (a separator followed by three digits groups thousands; another
//   is a decimal point). Digits of other scripts ("٧") are read as their values.
// - Folding as search always folded (utf8proc): compatibility forms (full-width letters,
//   ligatures), case, and accents, after stemming.
// - Stemming by the language's Snowball stemmer (libstemmer) where Snowball has one:
//   "Erdbebens" and "Erdbeben" are one word in German, "séisme" and "séismes" in French.
// - Stop words: the language's list (server/words/stop_words/, each file names its source);
//   flagged, not removed, so a caller can tell sentence case from title case.
//
// A language without rules of its own ("", or one with no stemmer or list) gets the rest: words,
// numbers and folding. Thread-safe: the stemmers and the word breaker are kept per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server::words {

struct word {
  std::string text;          // folded and stemmed: what two words are compared on
  std::string folded;        // folded, not stemmed: what was written, for search's prefixes
  bool capitalised = false;  // begins with an upper-case or title-case letter
  bool all_capitals = false; // no lower-case letter
  bool stop = false;         // one of the language's stop words
  bool number = false;       // digits (with their separators)
};

// Words longer than this (after folding) are left out: no word is, and it bounds a hostile
// title's cost.
inline constexpr std::size_t max_word_bytes = 40;

// The words of valid-or-not UTF-8 `text` written in `language` (a code, as language_tag gives),
// in order. Invalid bytes separate words.
std::vector<word> words_of(std::string_view text, std::string_view language);

// The languages Snowball stems (their codes): the only ones whose words differ from another
// language's beyond stop words.
std::vector<std::string_view> stemming_languages();

// Whether `language` has a stop-word list.
bool has_stop_words(std::string_view language);

} // namespace newsdesk::server::words
