#include "scrapers/titles.hpp"

#include "scrapers/headlines.hpp"
#include "scrapers/text.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <vector>

namespace newsdesk::scrapers {

namespace {

// Calls f(code point, byte offset, byte length) for each character of `text`; a byte that is not
// UTF-8 is passed as code point -1 with length 1, so callers can keep it as it was.
template <class F> void each_character(std::string_view text, F f) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t at = 0;
  while (at < size) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(p + at, size - at, &c);
    if (n <= 0) {
      n = 1;
      c = -1;
    }
    f(c, static_cast<std::size_t>(at), static_cast<std::size_t>(n));
    at += n;
  }
}

constexpr utf8proc_int32_t zero_width_non_joiner = 0x200C;
constexpr utf8proc_int32_t zero_width_joiner = 0x200D;

// Scripts that do not separate words with spaces (as search.cpp reads them): Thai, Lao, Khmer,
// Myanmar, CJK (Han, kana, their punctuation and compatibility blocks). Hangul uses spaces.
bool unspaced_script(utf8proc_int32_t c) {
  return (c >= 0x0E00 && c <= 0x0EFF) || (c >= 0x1000 && c <= 0x109F) ||
         (c >= 0x1780 && c <= 0x17FF) || (c >= 0x2E80 && c <= 0x31FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF);
}

struct token {
  std::string_view text;
  std::size_t at = 0; // byte offset in the title
};

std::vector<token> tokens_of(std::string_view text) {
  std::vector<token> out;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && text[at] == ' ')
      ++at;
    const auto start = at;
    while (at < text.size() && text[at] != ' ')
      ++at;
    if (at > start)
      out.push_back({text.substr(start, at - start), start});
  }
  return out;
}

utf8proc_int32_t first_character(std::string_view word) {
  utf8proc_int32_t c = -1;
  if (!word.empty())
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(word.data()),
                     static_cast<utf8proc_ssize_t>(word.size()), &c);
  return c;
}

bool capitalised(std::string_view word) {
  const auto c = first_character(word);
  return c >= 0 && utf8proc_category(c) == UTF8PROC_CATEGORY_LU;
}

bool starts_lowercase(std::string_view word) {
  const auto c = first_character(word);
  return c >= 0 && utf8proc_category(c) == UTF8PROC_CATEGORY_LL;
}

// Tokens that stand between a title and its byline: "Title | By Jane Doe", "Title - by Jane".
bool separator(std::string_view t) {
  static constexpr std::array<std::string_view, 7> marks{"|", "-", "–", "—", "·", "/", "•"};
  return std::find(marks.begin(), marks.end(), t) != marks.end();
}

// The small words Title Case leaves lowercase: seeing only these lowercase says nothing about
// whether a title is in sentence case.
bool minor_word(std::string_view w) {
  static constexpr std::array<std::string_view, 24> minor{
      "a",   "an", "the",  "and",  "or", "but", "nor", "of",  "in",  "on",   "at",   "to",
      "for", "by", "with", "from", "as", "vs",  "vs.", "per", "via", "into", "over", "up"};
  return std::find(minor.begin(), minor.end(), w) != minor.end();
}

// Lowercase parts of names: "Ursula von der Leyen", "Ahmed al Shami".
bool name_particle(std::string_view w) {
  static constexpr std::array<std::string_view, 15> particles{"de",  "da",  "van", "von", "der",
                                                              "den", "del", "la",  "le",  "al",
                                                              "bin", "el",  "du",  "di",  "dos"};
  return std::find(particles.begin(), particles.end(), w) != particles.end();
}

// Whether tokens[from, end) read as the names of a byline: capitalised words, particles, and
// "and"/"&" or a trailing comma between names; at most three names of at most four words.
bool names_only(const std::vector<token>& tokens, std::size_t from) {
  const std::size_t count = tokens.size() - from;
  if (count == 0 || count > 12 || !capitalised(tokens[from].text) ||
      !capitalised(tokens.back().text))
    return false;
  std::size_t names = 1, words_in_name = 0;
  for (std::size_t i = from; i < tokens.size(); ++i) {
    auto w = tokens[i].text;
    if (w == "and" || w == "&") {
      ++names;
      words_in_name = 0;
      continue;
    }
    const bool comma = w.ends_with(',');
    if (comma)
      w.remove_suffix(1);
    if (!(capitalised(w) || name_particle(w)))
      return false;
    // A name never ends a sentence or asks a question.
    if (w.empty() || std::string_view(".:;?!\"'").find(w.back()) != std::string_view::npos)
      if (!(w.size() == 2 && w[1] == '.')) // an initial: "Jane Q. Public"
        return false;
    if (++words_in_name > 4)
      return false;
    if (comma) {
      ++names;
      words_in_name = 0;
    }
  }
  return names <= 3;
}

} // namespace

std::string normalise_title_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  each_character(text, [&](utf8proc_int32_t c, std::size_t at, std::size_t n) {
    if (c < 0) {
      out.append(text.substr(at, n));
      return;
    }
    const auto category = utf8proc_category(c);
    if (category == UTF8PROC_CATEGORY_ZS) {
      out += ' ';
    } else if (category != UTF8PROC_CATEGORY_CF || c == zero_width_joiner ||
               c == zero_width_non_joiner) {
      // Other invisible format characters are dropped, joining the text on either side.
      out.append(text.substr(at, n));
    }
  });
  return collapse_whitespace(out);
}

std::string strip_byline(std::string_view title) {
  const auto tokens = tokens_of(title);
  // "By" at position i, the names after it, what stays before it.
  for (std::size_t i = tokens.size(); i-- > 1;) {
    const auto by = tokens[i].text;
    if (by != "By" && by != "by" && by != "BY")
      continue;
    if (!names_only(tokens, i + 1))
      continue;
    std::size_t end = i; // tokens[0, end) stay
    bool separated = false;
    while (end > 0 && separator(tokens[end - 1].text)) {
      --end;
      separated = true;
    }
    if (by == "by" && !separated)
      return std::string(title); // "killed by Police Fire": a lowercase "by" is the sentence's
    std::size_t words = 0;
    bool sentence_case = false;
    for (std::size_t k = 0; k < end; ++k) {
      ++words;
      if (k > 0 && starts_lowercase(tokens[k].text) && !minor_word(tokens[k].text))
        sentence_case = true;
    }
    if (words < min_title_words || !(sentence_case || separated))
      return std::string(title);
    const auto cut = tokens[end - 1].at + tokens[end - 1].text.size();
    return std::string(title.substr(0, cut));
  }
  return std::string(title);
}

bool is_byline(std::string_view text) {
  const auto tokens = tokens_of(text);
  return tokens.size() >= 2 &&
         (tokens[0].text == "By" || tokens[0].text == "by" || tokens[0].text == "BY") &&
         names_only(tokens, 1);
}

std::optional<leading_number> leading_number_of(std::string_view title) {
  std::size_t at = 0;
  int value = 0;
  while (at < title.size() && at < 4 && title[at] >= '0' && title[at] <= '9')
    value = value * 10 + (title[at++] - '0');
  if (at == 0 || at > 3 || at >= title.size())
    return std::nullopt;
  if (title[at] == ' ')
    return leading_number{value, at + 1, false};
  // Glued: "1Virginia", a capital that starts a word of lowercase letters (not "3D", "5G").
  if (at + 1 < title.size() && title[at] >= 'A' && title[at] <= 'Z' && title[at + 1] >= 'a' &&
      title[at + 1] <= 'z')
    return leading_number{value, at, true};
  return std::nullopt;
}

std::size_t title_words(std::string_view title) {
  std::size_t words = 0;
  bool in_word = false;
  std::size_t unspaced = 0; // characters of unspaced scripts in the current word
  auto end_word = [&] {
    if (in_word && unspaced >= 4)
      words += unspaced / 2 - 1; // the run counted one already
    unspaced = 0;
  };
  each_character(title, [&](utf8proc_int32_t c, std::size_t, std::size_t) {
    const bool space = c == ' ' || (c >= 0 && utf8proc_category(c) == UTF8PROC_CATEGORY_ZS);
    if (space) {
      end_word();
      in_word = false;
      return;
    }
    if (!in_word)
      ++words;
    in_word = true;
    if (unspaced_script(c))
      ++unspaced;
  });
  end_word();
  return words;
}

bool looks_like_summary(std::string_view text) {
  std::size_t chars = 0;
  bool sentence_break = false;
  // The last three characters seen: a lowercase letter, a full stop (or ! ?), a space; then a
  // capital starts the next sentence.
  utf8proc_int32_t before_stop = 0, stop = 0, space = 0;
  each_character(text, [&](utf8proc_int32_t c, std::size_t, std::size_t) {
    ++chars;
    if (space && stop && utf8proc_category(before_stop) == UTF8PROC_CATEGORY_LL &&
        utf8proc_category(c) == UTF8PROC_CATEGORY_LU)
      sentence_break = true;
    if (stop && c == ' ' && !space) {
      space = c;
      return;
    }
    space = 0;
    if (c == '.' || c == '!' || c == '?') {
      stop = c;
      return;
    }
    stop = 0;
    before_stop = c;
  });
  const bool ends_with_stop = !text.empty() && text.back() == '.';
  return chars > max_title_chars || (sentence_break && ends_with_stop);
}

} // namespace newsdesk::scrapers
