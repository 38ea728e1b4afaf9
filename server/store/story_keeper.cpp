#include "server/store/story_keeper.hpp"

#include "server/words/language.hpp"

#include <algorithm>

namespace newsdesk::server {

namespace {

// A row stored before languages were has none: its language is read from its title, as it
// would be now. Its time is when it was published, when the site says so and that is earlier
// than when it was first seen (a feed's months-old item is no part of today's story; a time in
// the future is a site's clock or time zone, not news).
stories::story_headline headline_of(const stored_headline& row, std::string& language) {
  language = row.language.empty() ? words::headline_language("", row.title, row.url) : row.language;
  const auto time_ms = std::min(row.published_ms.value_or(row.first_seen_ms), row.first_seen_ms);
  return {row.id, row.title, row.url, row.site, time_ms, language};
}

} // namespace

story_keeper::story_keeper(stories::grouping_factory make)
    : make_(make ? std::move(make) : [] { return stories::make_story_grouping(); }) {
  start_over();
}

void story_keeper::start_over() {
  grouping_ = make_();
  seen_merge_ = 0;
  assigned_ = false;
}

void story_keeper::observe(const std::vector<stored_headline>& rows,
                           const std::vector<logged_merge>& merges) {
  // Rows first: their stored stories are already those after every merge, so the merges only
  // tell the grouping which stories became which.
  std::string language;
  for (const auto& row : rows)
    grouping_->observe(headline_of(row, language), row.story);
  for (const auto& entry : merges) {
    grouping_->observe(entry.merge);
    seen_merge_ = std::max(seen_merge_, entry.seq);
  }
}

void story_keeper::assign(stored_headline& row, std::vector<stories::story_merge>& merges) {
  assigned_ = true;
  std::string language;
  row.story = grouping_->assign(headline_of(row, language), merges);
}

void apply_merges(std::vector<stored_headline>& rows,
                  const std::vector<stories::story_merge>& merges) {
  for (const auto& m : merges)
    for (auto& row : rows)
      if (row.story == m.from)
        row.story = m.into;
}

} // namespace newsdesk::server
