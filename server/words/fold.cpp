#include "server/words/fold.hpp"

#include "server/core/utf8.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace newsdesk::server::words {

namespace {

bool ascii(std::string_view text) {
  for (char c : text)
    if ((c & 0x80) != 0)
      return false;
  return true;
}

std::string mapped(std::string_view text, int options) {
  const auto clean = replace_invalid_utf8(text, " ");
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(clean.data()),
                        static_cast<utf8proc_ssize_t>(clean.size()), &out,
                        static_cast<utf8proc_option_t>(options));
  if (n < 0) // only out of memory, as the input is valid UTF-8
    return clean;
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

// Whether `text` has hiragana or katakana (U+3040-U+30FF: E3 81 80 to E3 83 BF in UTF-8), or
// half-width katakana (U+FF66-U+FF9F: EF BD A6 to EF BE 9F).
bool has_kana(std::string_view text) {
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    const auto a = static_cast<unsigned char>(text[i]);
    const auto b = static_cast<unsigned char>(text[i + 1]);
    if ((a == 0xE3 && b >= 0x81 && b <= 0x83) || (a == 0xEF && (b == 0xBD || b == 0xBE)))
      return true;
  }
  return false;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

} // namespace

// Letters, digits and the marks that belong to them (a mark that survives folding, as in
// Devanagari, stays inside its word).
bool is_word_character(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_MN:
  case UTF8PROC_CATEGORY_MC:
  case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_NL:
  case UTF8PROC_CATEGORY_NO:
    return true;
  default:
    return false;
  }
}

// Decompose (compatibility), fold case, drop the marks the decomposition split off (accents) and
// ignorable characters (soft hyphens, zero-width joiners), then compose what is left. ASCII (most
// words of most headlines) skips the round trip through utf8proc.
// Kana keep their voicing marks: "が" is another letter than "か", not "か" with an accent.
std::string fold_text(std::string_view text) {
  if (ascii(text))
    return ascii_lower(text);
  const int options =
      UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD | UTF8PROC_IGNORE;
  return mapped(text, has_kana(text) ? options : options | UTF8PROC_STRIPMARK);
}

std::string lower_text(std::string_view text) {
  if (ascii(text))
    return ascii_lower(text);
  return mapped(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD | UTF8PROC_IGNORE);
}

std::string compatible_text(std::string_view text) {
  if (ascii(text))
    return std::string(text);
  return mapped(text, UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE);
}

} // namespace newsdesk::server::words
