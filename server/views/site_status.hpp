// How a site stands, told to a reader: its chip's state, its notice in plain words, and the
// failures of one renderer gathered into one notice that says what to check. The page and the
// live `site` events (live_events.hpp) share these, so a failure told live reads as after a
// reload.
#pragma once

#include "server/core/failure.hpp"
#include "server/news/headline.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

// A failure in a reader's words ("the site took too long to load"), and whether it is the
// renderer's fault rather than the site's (then one notice covers every site it failed and says
// what to check, and the sites' chips and headlines are marked only quietly).
struct failure_words {
  std::string summary;
  bool renderer_problem = false;
  std::string check; // for a renderer problem: "is it running, ...?", after "Check Splash: "
};
failure_words describe_failure(failure_kind kind);

// The site's last refresh failed because of its renderer, not the site: the notice for all the
// renderer's sites tells it.
bool renderer_failed(const site_report& s);

struct site_status {
  std::string state;      // ok, stale, failed, pending, broken, renderer (the chip's class)
  std::string state_text; // what the chip says: "not updating", "failed", "loading…", ...
  bool quiet = false;     // said to screen readers only (a renderer's notice tells it)
  // The site's notice in plain words ("Couldn’t load CNN: the site took too long to load"), ""
  // when it has none. A renderer's failure names the renderer and what to check.
  std::string problem;
};
site_status status_of(const site_report& s, std::int64_t now_ms);

// A notice of the page's problems section: its summary, the names of the sites it is about
// (space-separated: the live page finds a site's notice by them) and each site's raw error as a
// detail on demand.
struct site_problem {
  std::string summary;
  std::string sites;
  std::vector<std::string> details;
};
// One notice per failed site, except that sites failed by the same renderer in the same way share
// one, listed first (it is the likelier cause to fix) and saying what to check.
std::vector<site_problem> problems_of(const std::vector<site_report>& sites, std::int64_t now_ms);

// `error` with every URL whose host is not `site_url`'s replaced: a renderer's or proxy's
// address is the operator's business, not the reader's.
std::string public_detail(std::string_view error, std::string_view site_url);

} // namespace newsdesk::server
