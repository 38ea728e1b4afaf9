#include "server/stories/story_assigner.hpp"

// PLACEHOLDER while the assignment is written: every headline starts its own story.
namespace newsdesk::server::stories {

struct story_assigner::state {
  story_limits limits;
  std::int64_t last_id = 0;
};

story_assigner::story_assigner(story_limits limits) : state_(std::make_unique<state>()) {
  state_->limits = limits;
}
story_assigner::~story_assigner() = default;

std::int64_t story_assigner::assign(const story_headline& headline, std::vector<story_merge>&) {
  state_->last_id = std::max(state_->last_id, headline.id);
  return headline.id;
}
void story_assigner::observe(const story_headline& headline, std::int64_t) {
  state_->last_id = std::max(state_->last_id, headline.id);
}
void story_assigner::observe(const story_merge&) {}
std::int64_t story_assigner::current(std::int64_t story) const { return story; }
std::int64_t story_assigner::last_id() const { return state_->last_id; }
std::size_t story_assigner::live_stories() const { return 0; }
std::size_t story_assigner::counted_terms() const { return 0; }

} // namespace newsdesk::server::stories
