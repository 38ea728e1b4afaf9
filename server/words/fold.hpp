// Folding, as search and stories compare words: Unicode case folding, compatibility forms
// (ligatures, full-width letters) replaced and accents removed (utf8proc), so "elysee", "ÉLYSÉE"
// and "Élysée" are one word. Pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace newsdesk::server::words {

// `text` folded: case-folded, accents stripped (kana keep their voicing marks: "が" is another
// letter than "か"), compatibility forms replaced. Each ill-formed UTF-8 sequence becomes a space,
// so it separates words and never matches.
std::string fold_text(std::string_view text);

// `text` case-folded and composed (NFC), accents kept: what a stemmer and a stop-word list read.
// Invalid bytes become spaces.
std::string lower_text(std::string_view text);

// `text` with compatibility forms replaced and composed (NFKC: full-width "Ｈ３" is "H3",
// half-width katakana full-width), case and accents kept: what the word breaker reads. Invalid
// bytes become spaces.
std::string compatible_text(std::string_view text);

// Whether code point `c` belongs inside a word: a letter, a digit, or a mark that belongs to one.
bool is_word_character(char32_t c);

} // namespace newsdesk::server::words
