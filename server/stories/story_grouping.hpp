// The story assignment as the store drives it: story_assigner's operations behind an interface,
// so a test can put a grouping of its own in the assigner's place (the store's only seam for it;
// production always runs story_assigner, through make_story_grouping).
//
// The contract is story_assigner's (story_assigner.hpp): ids ascend, a story's id is the id of
// the headline that started it, assign() decides, observe() replays what was decided before.
// Not thread-safe: one writer.
#pragma once

#include "server/stories/story_assigner.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace newsdesk::server::stories {

class story_grouping {
 public:
  virtual ~story_grouping() = default;

  // As story_assigner::assign: the story of a headline seen for the first time; merges it made
  // are appended to `merges`.
  virtual std::int64_t assign(const story_headline& headline, std::vector<story_merge>& merges) = 0;
  // As story_assigner::observe: a headline, or a merge, decided before.
  virtual void observe(const story_headline& headline, std::int64_t story) = 0;
  virtual void observe(const story_merge& merge) = 0;
  // The highest headline id assigned or observed (0: none).
  virtual std::int64_t last_id() const = 0;
};

// Makes a fresh grouping, with no state (the store replays its rows into it).
using grouping_factory = std::function<std::unique_ptr<story_grouping>()>;

// story_assigner with `limits`.
std::unique_ptr<story_grouping> make_story_grouping(story_limits limits = {});

} // namespace newsdesk::server::stories
