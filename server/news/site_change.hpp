// What one refresh changed for one site: the one value that goes from a refresh to every reader.
//
// A refresh on this instance makes it from what its store write returned (headline_store's
// refresh_written: the caller never reads back what it just wrote); in a cluster, the changes
// other instances committed are read from the store's event log into the same type. Either way
// it takes the same path (headline_state::apply), which updates the snapshot and hands the
// headlines first seen in it to live events, the broker and the representations
// (docs/architecture.md draws the whole way).
#pragma once

#include "server/news/headline.hpp"
#include "server/news/headline_store.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace newsdesk::server {

struct site_change {
  // The site's status after the refresh: its name, last attempt, last success (0: unchanged, or
  // never), error ("" when it succeeded) and how long the refresh took.
  site_state state;
  // A success: what the site lists now, in its order (ids from the store; 0 without a store).
  // None: a failure, and the site keeps showing what it had.
  std::optional<std::vector<news_item>> current;
  // Ids in `current` first seen by this refresh. They are announced as new, unless this was the
  // site's first success (a new site's whole page is not news).
  std::vector<std::int64_t> added;
  // Stories merged since the last change, in the order made: every site's headlines of story
  // `from` belong to `into` now (`current` already shows it). Applied even when the site itself
  // is not configured.
  std::vector<stories::story_merge> merges;
  // What the operator should know about a success (headlines found by detection).
  std::string note;
  // False when the change only loads what the store had at start: the site still counts as not
  // yet tried for the cold start.
  bool finishes_refresh = true;
};

// What every reader of the headlines is given after a change.
struct headline_update {
  std::shared_ptr<const news_snapshot> snapshot; // the state after it
  std::vector<news_item> added;                  // headlines to announce, ids ascending
  // For each story that a headline of `added` joined (one another headline started): how many
  // sites tell it now, among the headlines held.
  std::unordered_map<std::int64_t, std::size_t> story_sources;
  // The whole list of each site whose headlines this update changed (the first update a
  // listener gets: every site's), so a listener that keeps something per site touches only
  // those, never every headline held.
  std::vector<std::shared_ptr<const std::vector<news_item>>> changed_sites;
  // The sites whose state as a reader sees it changed (a failure, a recovery, a health verdict;
  // not the times of a refresh), as they stand now: an open page is told them live.
  std::vector<site_report> changed_status;
  // The headlines whose picture this update changed (one was made of their image, or dropped),
  // as they are now: an open page is told them live.
  std::vector<news_item> pictured;
};

// A stored row as the outputs show it.
inline news_item item_of(const stored_headline& row) {
  news_item item{{row.title, row.url, row.site, row.published_ms}, row.id, row.first_seen_ms};
  item.story = row.story;
  item.first_look = row.first_look;
  item.headline.language = row.language;
  item.headline.summary = row.summary;
  item.headline.image = row.image;
  return item;
}

} // namespace newsdesk::server
