#include "server/news/search.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace newsdesk::server {

namespace {

bool word_character(utf8proc_int32_t c) {
  return is_word_character(static_cast<char32_t>(c));
}

// Scripts that do not separate words with spaces: Thai, Lao, Khmer, Myanmar, CJK (Han, kana,
// their punctuation and compatibility blocks). Hangul separates words, so it is not here.
bool unspaced_script(utf8proc_int32_t c) {
  return (c >= 0x0E00 && c <= 0x0EFF) || (c >= 0x1000 && c <= 0x109F) ||
         (c >= 0x1780 && c <= 0x17FF) || (c >= 0x2E80 && c <= 0x31FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF);
}

// Calls f(codepoint, byte offset, byte length) for each character of valid UTF-8 `text`.
template <class F> void each_character(std::string_view text, F f) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t at = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (at < size) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(p + at, size - at, &c);
    if (n <= 0) { // not reached for fold_text's output; skip a byte rather than loop forever
      n = 1;
      c = ' ';
    }
    f(c, static_cast<std::size_t>(at), static_cast<std::size_t>(n));
    at += n;
  }
}

// `text` with every byte that is not part of valid UTF-8 replaced by a space.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t at = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (at < size) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(p + at, size - at, &c);
    if (n <= 0) {
      out += ' ';
      ++at;
    } else {
      out.append(text.data() + at, static_cast<std::size_t>(n));
      at += n;
    }
  }
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

std::string fold_text(std::string_view text) {
  const auto clean = valid_utf8(text);
  utf8proc_uint8_t* folded = nullptr;
  // Decompose (compatibility), fold case, drop the marks the decomposition split off (accents)
  // and ignorable characters (soft hyphens, zero-width joiners), then compose what is left.
  const auto options =
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_COMPOSE |
                                     UTF8PROC_CASEFOLD | UTF8PROC_STRIPMARK | UTF8PROC_IGNORE);
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(clean.data()),
                        static_cast<utf8proc_ssize_t>(clean.size()), &folded, options);
  if (n < 0) // only out of memory, as the input is valid UTF-8
    return clean;
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(folded, &std::free);
  return std::string(reinterpret_cast<const char*>(folded), static_cast<std::size_t>(n));
}

std::vector<std::string> search_words(std::string_view text) {
  const auto folded = fold_text(text);
  std::vector<std::string> words;
  std::string word;
  each_character(folded, [&](utf8proc_int32_t c, std::size_t at, std::size_t n) {
    if (word_character(c)) {
      word.append(folded, at, n);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  });
  if (!word.empty())
    words.push_back(std::move(word));
  return words;
}

bool title_matches(const std::vector<std::string>& words, std::string_view title) {
  if (words.empty())
    return true;
  const auto title_words = search_words(title);
  std::string joined; // for words in scripts without spaces: matched anywhere
  return std::all_of(words.begin(), words.end(), [&](const std::string& w) {
    bool unspaced = false;
    each_character(w, [&](utf8proc_int32_t c, std::size_t, std::size_t) {
      unspaced = unspaced || unspaced_script(c);
    });
    if (unspaced) {
      if (joined.empty())
        for (const auto& t : title_words)
          joined += t + ' ';
      return joined.find(w) != std::string::npos;
    }
    return std::any_of(title_words.begin(), title_words.end(),
                       [&](const std::string& t) { return t.rfind(w, 0) == 0; });
  });
}

} // namespace newsdesk::server
