// UTF-8, one way for the whole program: the broker's topics, pages and feeds read, the feeds and
// JSON written, words and story files. Well-formed means ICU's rules (no overlong forms,
// surrogates or code points past U+10FFFF); what is ill-formed is replaced one maximal
// ill-formed subsequence at a time, as the Unicode Standard (3.9, "substitution of maximal
// subparts") and the WHATWG decoder do, so "\xE2\x82" before "A" is one replacement, not two.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace newsdesk::server {

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD"; // U+FFFD

// One step of a decoder over non-empty `text`: how many bytes its first code point takes and
// the code point, or, when `text` starts ill-formed, the length of that maximal ill-formed
// subsequence (at least 1) and valid == false.
struct utf8_step {
  std::size_t bytes = 1;
  char32_t code_point = 0;
  bool valid = false;
};
[[nodiscard]] utf8_step next_utf8(std::string_view text) noexcept;

// Whether all of `text` is well-formed UTF-8 (ASCII included; NUL is a character here).
[[nodiscard]] bool valid_utf8(std::string_view text) noexcept;

// Appends `code_point` (a Unicode scalar value: not a surrogate, at most U+10FFFF) as UTF-8.
void append_utf8(std::string& out, char32_t code_point);

// Reads `text` a code point at a time: on_code_point(cp, bytes) for each well-formed one (its
// bytes in `text`), on_invalid() once for each maximal ill-formed subsequence.
template <class OnCodePoint, class OnInvalid>
void decode_utf8(std::string_view text, OnCodePoint&& on_code_point, OnInvalid&& on_invalid) {
  for (std::size_t at = 0; at < text.size();) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte < 0x80) { // most text is ASCII: no call for it
      on_code_point(static_cast<char32_t>(byte), text.substr(at, 1));
      ++at;
      continue;
    }
    const auto step = next_utf8(text.substr(at));
    if (step.valid)
      on_code_point(step.code_point, text.substr(at, step.bytes));
    else
      on_invalid();
    at += step.bytes;
  }
}

// `text` with each maximal ill-formed subsequence replaced by `replacement`.
[[nodiscard]] std::string
replace_invalid_utf8(std::string_view text, std::string_view replacement = replacement_character);

} // namespace newsdesk::server
