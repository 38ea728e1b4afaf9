// Search by words: a query matches a title when every query word is the beginning of some word of
// the title ("war" finds "War" and "warships", not "towards"). Both sides are compared folded:
// Unicode case folding, compatibility forms and accents removed (utf8proc), so "elysee",
// "ÉLYSÉE" and "Élysée" are the same word. Scripts written without spaces between words (Chinese,
// Japanese, Thai) have no word starts to find, so a query word in them matches anywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

// `text` folded: case-folded, accents stripped, compatibility forms (ligatures, full-width
// letters) replaced. Invalid UTF-8 bytes become spaces, so they separate words and never match.
std::string fold_text(std::string_view text);

// Whether code point `c` belongs inside a word: a letter, a digit, or a mark that belongs to one.
bool is_word_character(char32_t c);

// The folded words of `text`: runs of letters and digits, everything else separates them.
std::vector<std::string> search_words(std::string_view text);

// Whether every one of `words` (from search_words) begins a word of `title`. No words: true.
bool title_matches(const std::vector<std::string>& words, std::string_view title);

} // namespace newsdesk::server
