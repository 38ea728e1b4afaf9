#include "server/core/failure.hpp"

#include <array>

namespace newsdesk::server {

namespace {

using k = failure_kind;

// Transient: what may well work a few seconds later (a busy or unreachable renderer or site, a
// slow load, a crashed browser). A refusal, a 404, a bad address or a page that was read and
// found wanting comes out the same next time.
constexpr std::array<failure_info, 20> table{{
    {k::none, "none", "", false, false},
    {k::renderer_down, "renderer_down", "the page renderer isn’t answering", true, true,
     "is it running, and is newsdesk’s address for it right?"},
    {k::renderer_busy, "renderer_busy", "the page renderer is overloaded", true, true,
     "does it have as many slots as newsdesk’s max_concurrent_renders?"},
    {k::renderer_refused, "renderer_refused", "the page renderer refused the request", true, false,
     "the details say what it refused."},
    {k::renderer_error, "renderer_error", "the page renderer failed while loading it", false, true},
    {k::shutting_down, "shutting_down", "newsdesk was shutting down", false, false},
    {k::timeout, "timeout", "the site took too long to load", false, true},
    {k::site_unreachable, "site_unreachable", "the site didn’t answer", false, true},
    {k::not_found, "not_found", "the site answered 404 (page not found)", false, false},
    {k::site_error, "site_error", "the site answered with an error", false, true},
    {k::redirect, "redirect", "the site redirected somewhere newsdesk can’t follow", false, false},
    {k::bad_address, "bad_address", "its address can’t be fetched", false, false},
    {k::too_large, "too_large", "the page is too large to read", false, false},
    {k::empty, "empty", "the page came back empty", false, false},
    {k::browser_crashed, "browser_crashed", "the browser failed while loading the page", false,
     true},
    {k::too_costly, "too_costly", "the page took too long to read", false, false},
    {k::too_complex, "too_complex", "the page is too complex to read", false, false},
    {k::bad_feed, "bad_feed", "its feed couldn’t be read", false, false},
    {k::scraper, "scraper", "its headlines couldn’t be read", false, false},
    {k::no_headlines, "no_headlines", "no headlines were found on the page", false, false},
}};

// The table is indexed by the enum: each row must sit at its kind's place.
constexpr bool in_order() {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (static_cast<std::size_t>(table[i].kind) != i)
      return false;
  return true;
}
static_assert(in_order(), "failure table rows must follow the enum's order");
static_assert(static_cast<std::size_t>(k::no_headlines) + 1 == table.size(),
              "every failure kind needs its row");

} // namespace

const failure_info& info(failure_kind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < table.size() ? table[i] : table[0];
}

failure_kind failure_kind_from(std::string_view label) {
  for (const auto& row : table)
    if (row.label == label)
      return row.kind;
  return failure_kind::none;
}

} // namespace newsdesk::server
