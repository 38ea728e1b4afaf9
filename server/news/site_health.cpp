#include "server/news/site_health.hpp"

#include <algorithm>
#include <cmath>

namespace newsdesk::server {

namespace {

// Moving averages: a new observation weighs this much.
constexpr double weight = 0.2;

double moved(double average, double value, double w) {
  return average + w * (value - average);
}

std::string whole(double v) {
  return std::to_string(static_cast<long long>(std::llround(v)));
}

} // namespace

bool site_health::record(const refresh& r) {
  const bool found_nothing = r.failure == failure_kind::no_headlines ||
                             (r.failure == failure_kind::none && r.headlines == 0);
  empty_streak_ =
      found_nothing ? empty_streak_ + 1 : (r.failure == failure_kind::none ? 0 : empty_streak_);
  if (r.failure == failure_kind::none && r.headlines > 0) {
    selector_streak_ = r.selectors_missed ? selector_streak_ + 1 : 0;
    const bool low =
        successes_ >= learn && static_cast<double>(r.headlines) < low_share * usual_headlines_;
    low_streak_ = low ? low_streak_ + 1 : 0;
    // A count far under the usual is not learned from: a site that broke must not teach itself
    // that breaking is usual. Only a long run of them makes the smaller page the new usual.
    if (successes_ == 0 || low_streak_ >= accept_after)
      usual_headlines_ = static_cast<double>(r.headlines);
    else if (!low)
      usual_headlines_ = moved(usual_headlines_, static_cast<double>(r.headlines), weight);
    if (low_streak_ >= accept_after)
      low_streak_ = 0;
    ++successes_;
    last_headlines_ = r.headlines;
    if (r.fresh > 0) {
      if (last_fresh_ms_ > 0 && r.at_ms > last_fresh_ms_) {
        const auto gap = static_cast<double>(r.at_ms - last_fresh_ms_);
        usual_gap_ms_ = gaps_ == 0 ? gap : moved(usual_gap_ms_, gap, weight);
        ++gaps_;
      }
      last_fresh_ms_ = r.at_ms;
    }
  }
  auto next = judge(r.at_ms);
  if (next == verdict_)
    return false;
  verdict_ = std::move(next);
  return true;
}

bool site_health::recheck(std::int64_t now_ms) {
  auto next = judge(now_ms);
  if (next == verdict_)
    return false;
  verdict_ = std::move(next);
  return true;
}

std::string site_health::judge(std::int64_t now_ms) const {
  if (empty_streak_ >= streak)
    return "found no headlines in its last " + std::to_string(empty_streak_) + " refreshes";
  if (selector_streak_ >= streak)
    return "its selectors matched nothing in its last " + std::to_string(selector_streak_) +
           " refreshes (detection stood in)";
  if (low_streak_ >= streak)
    return "found " + std::to_string(last_headlines_) + " headlines in its last " +
           std::to_string(low_streak_) + " refreshes, where it usually finds about " +
           whole(usual_headlines_);
  if (gaps_ >= learn && last_fresh_ms_ > 0) {
    const double quiet_ms = std::max(
        {quiet_gaps * usual_gap_ms_, quiet_intervals * static_cast<double>(interval_.count()),
         static_cast<double>(std::chrono::milliseconds(quiet_floor).count())});
    const auto since = static_cast<double>(now_ms - last_fresh_ms_);
    if (since > quiet_ms)
      return "nothing new for " + whole(since / 3'600'000) +
             " hours, where it usually finds something new every " + whole(usual_gap_ms_ / 60'000) +
             " minutes";
  }
  return {};
}

} // namespace newsdesk::server
