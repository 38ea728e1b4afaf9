// Stories: headlines about one event, from any number of sites, grouped as they arrive.
//
// A headline first seen joins the live story it is most similar to, or starts a new story, at
// once and for good: no batch job, no re-clustering of the past, and the same arrival order
// always gives the same stories. What it is compared on is what a headline has: the words of its
// title and of its URL's slug, folded (utf8proc, as search folds), stop words left out, lightly
// stemmed, in the headline's language (headline_terms.hpp), names and other capitalised words
// weighted up, each weighted by how rare it is among the stream's headlines in that language so
// far (document frequencies learned online). Headlines of different languages never share a
// story: a word is a word of one language (no translation), and the thresholds are the same
// in every language. A story is the sum of its
// headlines' weighted words (a centroid: a headline joins by resemblance to the whole story,
// never by one shared word with one member, which would chain unrelated headlines together).
// Candidates are found through an inverted index from words to live stories, never a scan.
// Evidence is asked for: two shared words (the words of one name, "White House", count once),
// or one that names the story (in most of its headlines, and most headlines with it are in the
// story: "Titanfall", not a head of state). A headline joining a story that already has one of
// its own site's headlines must resemble it more closely: one site's several headlines on one
// subject (a front page's coverage of a war) are more often a topic than one event, while an
// event is told by many sites. Where a language's stream is thin (few of its headlines within
// hours of a headline: a few sites of one language, not a wire feed) the stories that could
// resemble a headline by chance are few, so a headline and a story within hours of each other
// need less resemblance and one shared word is evidence enough (story_assigner.cpp says how few
// and how close); in a dense stream of any language the rules are as above.
// A story accepts no headline seen more than a quiet period after its last one (or before its
// first), nor one that would make it span longer than an event is told (max_span: past it, an
// ongoing subject such as a war starts a new story each time, rather than one story gathering
// every headline on its topic for weeks): times are the headlines' own, so a stream whose times
// jump about (a file of several years in a random order) still keeps each year's stories apart. Two
// live stories that come to resemble each other are merged into the older one; a small story
// meeting a large one is judged as its headlines would be if they joined it now (a headline that
// came before its story grew could not have joined it then). No one site steers the others' stories
// (a hostile feed joining their titles in pairs): a headline resembling two stories that have
// almost nothing in common joins neither, a story resembling two such merges with neither, and a
// merge needs headlines of two sites bridging the two stories (the first bridge is remembered, a
// bounded number of them, and not replayed by observe(): after a restart a merge needs two new
// sites).
//
// A story's id is the id of the headline that started it, so ids need no sequence of their own
// and a story outlives none of its headlines' ids.
//
// Memory is bounded whatever the stream's length (story_limits): live stories, the words kept
// per story, the words whose frequencies are counted, and the candidates scored per headline.
//
// Not thread-safe: one writer assigns (the store, inside the write that stores the headline).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace newsdesk::server::stories {

struct story_limits {
  // A story accepts no headline seen this long after its latest (or before its earliest).
  std::chrono::milliseconds quiet_period = std::chrono::hours(36);
  // A story spans at most this long, first headline to last (merges too). Google News's stories
  // in ../shared/stories span under 36 hours; two days leaves a story its second day of
  // follow-ups, and a front page's ongoing subject starts a new story after it.
  std::chrono::milliseconds max_span = std::chrono::hours(48);
  // Live stories kept at most; past it the ones that gained a headline longest ago close.
  std::size_t max_live_stories = 10000;
  // Distinct words whose document frequencies are counted; past it the counts are halved and
  // the rarest forgotten (a stream's vocabulary never stops growing).
  std::size_t max_terms = 100000;
};

// One headline as assignment sees it. `id` is the headline's id (> 0, ascending in arrival
// order); `time_ms` when it happened as far as is known (the item's published time when it is
// earlier than when it was first seen: a months-old item first seen today is no part of today's
// events); `language` the one it is written in (a code, as
// words::headline_language gives; "" unknown, which is a language of its own here).
struct story_headline {
  std::int64_t id = 0;
  std::string_view title;
  std::string_view url;
  std::string_view site;
  std::int64_t time_ms = 0;
  std::string_view language;
};

// Story `from` turned out to be story `into`: every headline of `from` now belongs to `into`.
struct story_merge {
  std::int64_t from = 0;
  std::int64_t into = 0;

  friend bool operator==(const story_merge&, const story_merge&) = default;
};

class story_assigner {
 public:
  explicit story_assigner(story_limits limits = {});
  ~story_assigner();
  story_assigner(const story_assigner&) = delete;
  story_assigner& operator=(const story_assigner&) = delete;

  // A headline seen for the first time: returns the story it belongs to (an existing story's
  // id, or its own id when it starts one). Stories this made into one are appended to
  // `merges` (the returned id is already the surviving story's).
  std::int64_t assign(const story_headline& headline, std::vector<story_merge>& merges);

  // A headline assigned before (replayed after a restart, or written by another instance):
  // taken into the state as belonging to `story`, without deciding anything.
  void observe(const story_headline& headline, std::int64_t story);

  // A merge made before (replayed, or made by another instance).
  void observe(const story_merge& merge);

  // The story `story` now is, after the merges seen so far (itself when never merged, or when
  // the merge was so long ago that it is forgotten).
  std::int64_t current(std::int64_t story) const;

  // The highest headline id assigned or observed (0: none).
  std::int64_t last_id() const;

  // Live stories and counted words now (for metrics and the benchmark).
  std::size_t live_stories() const;
  std::size_t counted_terms() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace newsdesk::server::stories
