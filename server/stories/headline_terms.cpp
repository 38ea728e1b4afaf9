#include "server/stories/headline_terms.hpp"

#include "server/news/search.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <unordered_set>

namespace newsdesk::server::stories {

namespace {

// Weights of the boosts (tuned on ../shared/stories, see bench/stories).
constexpr float name_boost = 1.5F; // a capitalised word inside a sentence-case title
constexpr float slug_boost = 0.5F; // a word found in the URL's slug but not in the title

// Words that say nothing about which event a headline is about: English function words and
// the verbs and fillers headlines are made of. Folded, unstemmed.
const std::unordered_set<std::string_view>& stop_words() {
  static const std::unordered_set<std::string_view> words = {
      "a",      "about",  "above",   "after",   "again", "against", "all",    "also",  "am",
      "amid",   "an",     "and",     "any",     "are",   "as",      "at",     "be",    "been",
      "before", "being",  "below",   "between", "both",  "but",     "by",     "can",   "could",
      "did",    "do",     "does",    "doing",   "don",   "down",    "during", "each",  "few",
      "for",    "from",   "further", "get",     "gets",  "got",     "had",    "has",   "have",
      "having", "he",     "her",     "here",    "him",   "his",     "how",    "i",     "if",
      "in",     "into",   "is",      "it",      "its",   "just",    "make",   "makes", "may",
      "me",     "might",  "more",    "most",    "my",    "new",     "no",     "nor",   "not",
      "now",    "of",     "off",     "on",      "once",  "one",     "only",   "or",    "other",
      "our",    "out",    "over",    "own",     "s",     "said",    "same",   "say",   "says",
      "she",    "should", "so",      "some",    "such",  "t",       "than",   "that",  "the",
      "their",  "them",   "then",    "there",   "these", "they",    "this",   "those", "through",
      "to",     "too",    "under",   "until",   "up",    "very",    "via",    "vs",    "was",
      "we",     "were",   "what",    "when",    "where", "which",   "while",  "who",   "whom",
      "why",    "will",   "with",    "would",   "you",   "your",    "two",    "three", "first",
      "last",   "week",   "day",     "today",   "year",  "years",   "time",   "ll",    "ve",
      "re",     "d",      "m",       "de",      "la",    "le",      "el",     "et"};
  return words;
}

// A word folded as fold_text folds it; ASCII (most words of most headlines) without the
// round trip through utf8proc.
std::string fold_word(std::string_view word) {
  if (std::any_of(word.begin(), word.end(), [](char c) { return (c & 0x80) != 0; }))
    return fold_text(word);
  std::string folded(word);
  for (auto& c : folded)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return folded;
}

struct raw_word {
  std::string folded;
  bool capitalised = false; // begins with an upper-case or title-case letter
  bool all_capitals = false;
};

// The words of valid-or-not UTF-8 `text`: runs of word characters; apostrophes split words
// ("Fed's" -> "Fed", "s"), invalid bytes separate them.
std::vector<raw_word> split_words(std::string_view text) {
  std::vector<raw_word> words;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t at = 0;
  std::size_t start = 0;
  bool in_word = false;
  bool capitalised = false;
  bool all_capitals = true;
  auto finish = [&](std::size_t end) {
    if (in_word && end - start <= max_word_bytes * 2) {
      auto folded = fold_word(text.substr(start, end - start));
      if (!folded.empty() && folded.size() <= max_word_bytes)
        words.push_back({std::move(folded), capitalised, all_capitals});
    }
    in_word = false;
  };
  while (at < size) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(p + at, size - at, &c);
    const bool valid = n > 0;
    if (!valid)
      n = 1;
    if (valid && is_word_character(static_cast<char32_t>(c))) {
      const auto category = utf8proc_category(c);
      const bool upper = category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LT;
      if (!in_word) {
        in_word = true;
        start = static_cast<std::size_t>(at);
        capitalised = upper;
        all_capitals = true;
      }
      if (category == UTF8PROC_CATEGORY_LL)
        all_capitals = false;
    } else {
      finish(static_cast<std::size_t>(at));
    }
    at += n;
  }
  finish(text.size());
  return words;
}

bool has_digit(std::string_view word) {
  return std::any_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ends_with(std::string_view word, std::string_view end) {
  return word.size() >= end.size() && word.substr(word.size() - end.size()) == end;
}

// The words of the URL path's most word-like segment (a slug: "gm-recall-probe-widens"), when
// it has at least three. Words with digits are ids, not words, and are left out.
std::vector<std::string> slug_words(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    auto path = url.find('/', scheme + 3);
    url = path == std::string_view::npos ? std::string_view() : url.substr(path);
  }
  url = url.substr(0, std::min(url.find('?'), url.find('#')));
  std::vector<std::string_view> best;
  while (!url.empty()) {
    auto slash = url.find('/');
    auto segment = url.substr(0, slash);
    url = slash == std::string_view::npos ? std::string_view() : url.substr(slash + 1);
    if (auto dot = segment.rfind('.'); dot != std::string_view::npos && segment.size() - dot <= 6)
      segment = segment.substr(0, dot); // .html, .story, .cms
    std::vector<std::string_view> parts;
    while (!segment.empty()) {
      auto cut = segment.find_first_of("-_+");
      auto part = segment.substr(0, cut);
      segment = cut == std::string_view::npos ? std::string_view() : segment.substr(cut + 1);
      if (!part.empty())
        parts.push_back(part);
    }
    if (parts.size() >= 3 && parts.size() > best.size())
      best = std::move(parts);
  }
  std::vector<std::string> words;
  for (auto part : best) {
    if (has_digit(part) || part.size() > max_word_bytes)
      continue;
    auto folded = fold_word(part);
    if (std::all_of(folded.begin(), folded.end(),
                    [](char c) { return (c >= 'a' && c <= 'z') || (c & 0x80) != 0; }))
      words.push_back(std::move(folded));
  }
  return words;
}

} // namespace

std::string stem(std::string word) {
  if (word.size() > 4 && ends_with(word, "ies")) {
    word.resize(word.size() - 3);
    word += 'y';
  } else if (word.size() > 3 && ends_with(word, "es") && !ends_with(word, "aes") &&
             !ends_with(word, "ees") && !ends_with(word, "oes") && !ends_with(word, "ses") &&
             !ends_with(word, "xes")) {
    word.pop_back();
  } else if (word.size() > 3 && ends_with(word, "s") && !ends_with(word, "us") &&
             !ends_with(word, "ss") && !ends_with(word, "is")) {
    word.pop_back();
  }
  return word;
}

std::vector<headline_term> headline_terms(std::string_view title, std::string_view url) {
  const auto words = split_words(title);
  const auto& stops = stop_words();
  // In a title written in title case ("Fed Official Says Weak Data...") capitals mark nothing;
  // in sentence case they mark names ("Fed official says Plosser...").
  std::size_t content = 0;
  std::size_t capitalised = 0;
  bool shouting = true;
  for (const auto& w : words) {
    if (stops.count(w.folded) != 0)
      continue;
    ++content;
    capitalised += w.capitalised ? 1 : 0;
    shouting = shouting && w.all_capitals;
  }
  const bool title_case = content == 0 || shouting || capitalised * 4 >= content * 3;

  std::vector<headline_term> terms;
  auto add = [&](std::string word, float boost, std::uint8_t name) {
    if (terms.size() >= max_terms_per_headline || word.size() < 2 || stops.count(word) != 0)
      return;
    word = stem(std::move(word));
    auto it = std::find_if(terms.begin(), terms.end(),
                           [&](const headline_term& t) { return t.text == word; });
    if (it == terms.end())
      terms.push_back({std::move(word), boost, name});
    else
      it->boost = std::max(it->boost, boost);
  };
  // Names of several words: runs of capitalised words that are not stop words.
  auto in_name = [&](std::size_t i) {
    return !title_case && i < words.size() && words[i].capitalised &&
           stops.count(words[i].folded) == 0;
  };
  std::uint8_t names = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool starts_name =
        in_name(i) && in_name(i + 1) && (i == 0 || !in_name(i - 1)) && names < 31;
    if (starts_name)
      ++names;
    const bool inside_name = in_name(i) && (in_name(i + 1) || (i > 0 && in_name(i - 1)));
    const bool weighted_up = !title_case && i > 0 && words[i].capitalised;
    add(words[i].folded, weighted_up ? name_boost : 1.0F, inside_name ? names : 0);
  }
  const auto from_title = terms.size();
  for (auto& w : slug_words(url)) {
    if (w.size() < 3 || stops.count(w) != 0)
      continue;
    auto stemmed = stem(w);
    if (std::none_of(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(from_title),
                     [&](const headline_term& t) { return t.text == stemmed; }))
      add(std::move(w), slug_boost, 0);
  }
  return terms;
}

} // namespace newsdesk::server::stories
