#include "server/stories/story_grouping.hpp"

namespace newsdesk::server::stories {

namespace {

class assigner_grouping final : public story_grouping {
 public:
  explicit assigner_grouping(story_limits limits)
      : assigner_(limits) {}

  std::int64_t assign(const story_headline& headline, std::vector<story_merge>& merges) override {
    return assigner_.assign(headline, merges);
  }
  void observe(const story_headline& headline, std::int64_t story) override {
    assigner_.observe(headline, story);
  }
  void observe(const story_merge& merge) override { assigner_.observe(merge); }
  std::int64_t last_id() const override { return assigner_.last_id(); }

 private:
  story_assigner assigner_;
};

} // namespace

std::unique_ptr<story_grouping> make_story_grouping(story_limits limits) {
  return std::make_unique<assigner_grouping>(limits);
}

} // namespace newsdesk::server::stories
