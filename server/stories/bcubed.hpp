// Scoring a grouping against labels with B-cubed precision and recall (Bagga and Baldwin): for
// each labelled item, the share of its predicted group that shares its label, and the share of
// its label's items found in its predicted group, averaged over the labelled items. Used by
// bench/stories and by the test that keeps a floor under the score.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace newsdesk::server::stories {

struct bcubed_scores {
  double precision = 0;
  double recall = 0;
  double f1() const {
    return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
  }
};

// `labels[i]` is item i's true group ("" for an item without a label: it counts in nobody's
// score, but still sits in its predicted group), `groups[i]` its predicted one.
inline bcubed_scores bcubed(const std::vector<std::string>& labels,
                            const std::vector<std::int64_t>& groups) {
  std::map<std::pair<std::int64_t, std::string>, double> both;
  std::map<std::int64_t, double> group_size;
  std::map<std::string, double> label_size;
  double n = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty())
      continue;
    both[{groups[i], labels[i]}] += 1;
    group_size[groups[i]] += 1;
    label_size[labels[i]] += 1;
    n += 1;
  }
  bcubed_scores s;
  if (n == 0)
    return s;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty())
      continue;
    const double shared = both[{groups[i], labels[i]}];
    s.precision += shared / group_size[groups[i]] / n;
    s.recall += shared / label_size[labels[i]] / n;
  }
  return s;
}

} // namespace newsdesk::server::stories
