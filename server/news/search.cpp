#include "server/news/search.hpp"

#include <algorithm>

namespace newsdesk::server {

namespace {

bool begins(std::string_view word, std::string_view prefix) {
  return word.substr(0, prefix.size()) == prefix;
}

} // namespace

search_query::search_query(std::string_view q) {
  for (auto& w : words::words_of(q, ""))
    folded_.push_back(std::move(w.folded));
  if (folded_.empty())
    return;
  for (auto language : words::stemming_languages()) {
    std::vector<std::string> stems;
    for (auto& w : words::words_of(q, language))
      stems.push_back(std::move(w.text));
    if (stems.size() == folded_.size()) // the same words, as they should be
      stems_.emplace_back(std::string(language), std::move(stems));
  }
}

bool search_query::matches(std::string_view title, std::string_view language) const {
  if (folded_.empty())
    return true;
  const std::vector<std::string>* stems = nullptr;
  for (const auto& [code, list] : stems_)
    if (code == language)
      stems = &list;
  const auto title_words = words::words_of(title, stems ? language : std::string_view());
  for (std::size_t i = 0; i < folded_.size(); ++i) {
    const bool found =
        std::any_of(title_words.begin(), title_words.end(), [&](const words::word& t) {
          return begins(t.folded, folded_[i]) || (stems && begins(t.text, (*stems)[i]));
        });
    if (!found)
      return false;
  }
  return true;
}

} // namespace newsdesk::server
