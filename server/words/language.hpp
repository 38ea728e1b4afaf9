// The language a headline is written in: the one its source declares (a site file's "language",
// the page's <html lang>, a feed's <language>), else the one detected from its title.
//
// Languages are named by their ISO 639 code in lower case ("de", "ja"), without region or script
// ("de-AT" and "zh-Hant" are "de" and "zh"); "" is unknown. Detection is CLD2's (Debian's
// libcld2-dev; ICU has no language identification for UTF-8 text, only a guess that comes with
// detecting a legacy charset), on the title alone with the URL's country domain as a hint,
// checked against the title's script: a title in Han, kana, Hangul, Thai and other scripts that
// one language (or two) writes is that language whatever CLD2 guesses from a few characters.
//
// Pure functions, safe from any thread. Costs: a few microseconds per title (CLD2).
#pragma once

#include <string>
#include <string_view>

namespace newsdesk::server::words {

// A declared language tag ("en-GB", "pt_BR", " DE ", "zh-Hant-TW") as the code words are read
// in ("en", "pt", "de", "zh"); "" when it is not a tag (empty, "x-klingon", "*", junk). Hebrew,
// Indonesian and Yiddish's old codes are taken as their current ones ("iw" is "he"), Norwegian
// Bokmål and Nynorsk as "no".
std::string language_tag(std::string_view declared);

// The language `title` is written in, by CLD2 and the title's script; `url`'s country domain
// (".de", ".co.jp") is a hint. "" when the title has no letters.
std::string detect_language(std::string_view title, std::string_view url = {});

// The language to read a headline in: `declared` (a tag, see language_tag) when it is one and
// the title is written in a script of that language; else the detected one. A declared
// language a title's script contradicts (a Japanese site whose template says lang="en") is
// taken as a mistake.
std::string headline_language(std::string_view declared, std::string_view title,
                              std::string_view url = {});

} // namespace newsdesk::server::words
