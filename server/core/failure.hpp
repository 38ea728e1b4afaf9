// Why a refresh failed, as a type: the renderers, the page reader, the store, the metrics and the
// page all name a failure by its kind, and one table (failure.cpp) says for each kind its metric
// label, the plain words a reader sees, whether the renderer (not the site) is at fault (and then
// what to check) and whether trying again soon is worth it. The message that comes with a failure
// is the detail on demand; nothing decides anything by reading it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace newsdesk::server {

enum class failure_kind : std::uint8_t {
  none,
  // The renderer itself: one notice for every site it failed.
  renderer_down,    // cannot reach it (or start it), or its address is not a renderer
  renderer_busy,    // overloaded or at capacity
  renderer_refused, // refused the request (bad arguments, credentials, its script failed)
  renderer_error,   // answered, but not with a page (an unexpected status, a broken answer)
  shutting_down,    // newsdesk stopped while the render waited
  // The site, through the renderer.
  timeout,          // the page did not load within the site's timeout
  site_unreachable, // no answer: DNS, refused, reset
  not_found,        // HTTP 404
  site_error,       // another HTTP error status
  redirect,         // a redirect newsdesk cannot follow (a loop, no Location, not http(s))
  bad_address,      // the site's URL cannot be fetched at all
  too_large,        // the page is over the size limit
  empty,            // the page came back with nothing in its body
  browser_crashed,  // the browser (or its tab) died during the render
  // Reading the page.
  too_costly,  // parsing took more CPU than its budget
  too_complex, // refused before parsing: too deep or too many elements
  bad_feed,    // a feed that is not RSS, Atom or JSON Feed
  scraper,     // the scraper threw
  no_headlines // nothing found on the page
};

struct failure_info {
  failure_kind kind;
  std::string_view label;   // metrics' kind= label, the log's kind=, the store's column
  std::string_view summary; // for readers: "Couldn't load CNN: <summary>"
  bool renderer_problem;    // the renderer failed, not the site: one notice for all its sites
  bool transient;           // worth retrying soon
  // A renderer problem's notice ends "Check <renderer>: <check>", so the operator knows where
  // to look; empty for the others (the site, not something newsdesk runs, is at fault).
  std::string_view check = {};
};

// The row of the table for `kind`.
const failure_info& info(failure_kind kind);

inline std::string_view to_string(failure_kind kind) {
  return info(kind).label;
}

// The kind whose label is `label`; none for an unknown one (a store written by an older
// version has no label, or one this version no longer knows).
failure_kind failure_kind_from(std::string_view label);

} // namespace newsdesk::server
