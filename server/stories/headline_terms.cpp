#include "server/stories/headline_terms.hpp"

#include <algorithm>

namespace newsdesk::server::stories {

namespace {

// Weights of the boosts (tuned on ../shared/stories, see bench/stories).
constexpr float name_boost = 1.5F; // a capitalised word inside a sentence-case title
constexpr float slug_boost = 0.5F; // a word found in the URL's slug but not in the title

bool has_digit(std::string_view word) {
  return std::any_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The URL path's most word-like segment (a slug: "gm-recall-probe-widens") as text, when it has
// at least three words. Words with digits are ids, not words, and are left out; so are parts
// that are not letters (percent-escapes: a slug in another script is read from the title).
std::string slug_text(std::string_view url) {
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
  std::string text;
  for (auto part : best) {
    if (has_digit(part) || part.size() > words::max_word_bytes ||
        !std::all_of(part.begin(), part.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c & 0x80) != 0;
        }))
      continue;
    text.append(part).push_back(' ');
  }
  return text;
}

} // namespace

std::vector<headline_term> headline_terms(std::string_view title, std::string_view url,
                                          std::string_view language) {
  const auto words = words::words_of(title, language);
  // In a title written in title case ("Fed Official Says Weak Data...") capitals mark nothing;
  // in sentence case they mark names ("Fed official says Plosser..."). A script without case
  // (Chinese, Arabic) has no capitals, so no names.
  std::size_t content = 0;
  std::size_t capitalised = 0;
  bool shouting = true;
  for (const auto& w : words) {
    if (w.stop || w.number)
      continue;
    ++content;
    capitalised += w.capitalised ? 1 : 0;
    shouting = shouting && w.all_capitals;
  }
  const bool title_case = content == 0 || shouting || capitalised * 4 >= content * 3;

  std::vector<headline_term> terms;
  terms.reserve(std::min(words.size() + 8, max_terms_per_headline)); // room for a few slug words
  auto add = [&](const words::word& w, float boost, std::uint8_t name) {
    if (terms.size() >= max_terms_per_headline || w.stop || (w.folded.size() < 2 && !w.number))
      return;
    auto it = std::find_if(terms.begin(), terms.end(),
                           [&](const headline_term& t) { return t.text == w.text; });
    if (it == terms.end())
      terms.push_back({w.text, boost, name});
    else
      it->boost = std::max(it->boost, boost);
  };
  // Names of several words: runs of capitalised words that are not stop words.
  auto in_name = [&](std::size_t i) {
    return !title_case && i < words.size() && words[i].capitalised && !words[i].stop;
  };
  std::uint8_t names = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool starts_name =
        in_name(i) && in_name(i + 1) && (i == 0 || !in_name(i - 1)) && names < 31;
    if (starts_name)
      ++names;
    const bool inside_name = in_name(i) && (in_name(i + 1) || (i > 0 && in_name(i - 1)));
    const bool weighted_up = !title_case && i > 0 && words[i].capitalised;
    add(words[i], weighted_up ? name_boost : 1.0F, inside_name ? names : 0);
  }
  const auto from_title = terms.size();
  for (const auto& w : words::words_of(slug_text(url), language)) {
    if (w.folded.size() < 3)
      continue;
    if (std::none_of(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(from_title),
                     [&](const headline_term& t) { return t.text == w.text; }))
      add(w, slug_boost, 0);
  }
  return terms;
}

} // namespace newsdesk::server::stories
