// What a headline's title may carry and what it may not: the text rules every way of finding a
// headline shares (detection, site files, built-in scrapers; feeds for the cleaning only).
//
// Pages glue things to titles that are not the title: invisible characters and odd spaces
// copied from a CMS, a rank number from a most-read list ("1 UK economy..."), a byline at the
// end ("... By Karishma Vaswani"). These functions take them off the text alone; what the markup
// says (a kicker element, a byline element) is split_title's job in headlines.hpp.
//
// Pure functions, safe from any thread, linear in the text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers {

// `text` as a title shows it: every Unicode space (U+00A0, U+2000-U+200A, U+3000...) and ASCII
// whitespace collapsed to one space, control characters and invisible format characters (soft
// hyphen, zero-width space, word joiner, bidirectional controls, byte order mark...) dropped,
// except the zero-width joiner and non-joiner that emoji and scripts such as Persian need, and
// the ends trimmed. Bytes that are not UTF-8 are kept as collapse_whitespace keeps them.
std::string normalise_title_text(std::string_view text);

// `title` without a byline at its end: "Asia's winners and losers By Karishma Vaswani" ->
// "Asia's winners and losers". A byline is "By" (or "by" after a separator such as "|" or "-")
// and one to three names of capitalised words ("By Jane Doe and John Smith"). Taken off only
// when what stays is still a title of two words or more and written in sentence case, or ends
// in a separator: in a Title Case headline "Crushed By Falling Tree" "By" is not a byline.
std::string strip_byline(std::string_view title);

// Whether `text` is a byline and nothing else: "By Jane Doe", "by Jane Doe and John Smith". For
// markup that puts the byline in an element of its own, where no sentence-case test is needed.
bool is_byline(std::string_view text);

// A rank number written into the title's own text, as a most-read list does: "1 UK economy"
// or glued "1Virginia Giuffre...". Returns the number and where the title proper starts; nullopt
// when the title does not start with 1-3 digits followed by a space (or glued to a capital
// letter that starts a word). Whether the number is a rank or part of the title ("10 things to
// know") is for the caller to judge from the titles around it.
struct leading_number {
  int value = 0;
  std::size_t title_start = 0; // byte offset of the title after the number
  bool glued = false;          // "1Virginia": no space between number and title
};
std::optional<leading_number> leading_number_of(std::string_view title);

// How many words the title has: runs between spaces, except that in scripts written without
// spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) every two characters count as a word,
// so "日本の首相が辞任" is a title while "速報" is not.
std::size_t title_words(std::string_view title);

// Whether `text` reads as a summary rather than a title: a title is a line, a summary a
// paragraph: two sentences or more, the last ending in a full stop ("Sentence one. Sentence
// two."), or longer than max_title_chars. "U.S." and "No. 1" are not sentence
// ends (the next word must start with a capital after a lowercase word's stop). CNN's lead
// package gives a summary where its cards give titles.
bool looks_like_summary(std::string_view text);
// A title longer than this many characters (code points) is a summary: the longest real
// headlines in the saved pages and the labelled sets are about 130, and a long one of 200 is
// no paragraph.
inline constexpr std::size_t max_title_chars = 300;

// The fewest words a title from a page may have. One word is a label ("Video", "LIVE",
// "Opinion") or a name (a user, a domain), never a headline a reader can act on.
inline constexpr std::size_t min_title_words = 2;

} // namespace newsdesk::scrapers
