// Headlines as feeds: /news.atom (Atom 1.0, RFC 4287) and /news.feed.json (JSON Feed 1.1).
//
// Pure functions of plain structs: no I/O, no globals, callable from any thread at once.
// Scraped text is never trusted: invalid UTF-8 becomes U+FFFD, characters XML 1.0 forbids
// (C0 controls other than tab, LF, CR; U+FFFE, U+FFFF) and the C1/DEL controls are dropped in
// both formats, XML output is escaped, JSON is built with nlohmann/json. Entries whose URL is
// not http(s) are left out, as on the page. Both run in O(total bytes of the entries).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

struct feed_entry {
  std::string id; // the entry's id; empty: stable_entry_id(site, url)
  std::string title;
  std::string url; // absolute http(s) URL of the story
  std::string site;
  std::string site_display_name;  // the entry's author in both formats; empty: `site`
  std::int64_t first_seen_ms = 0; // Unix milliseconds: published
  std::int64_t last_seen_ms = 0;  // Unix milliseconds: updated / date_modified
  // Unix milliseconds the source says it was published; when set, it is the entry's published
  // (date_published) instead of first_seen_ms.
  std::optional<std::int64_t> published_ms;
  // The line of summary its source gave (a feed item's description), as text; empty: none. Atom's
  // <summary type="text">, JSON Feed's "summary".
  std::string summary;
};

struct feed_info {
  std::string title;    // e.g. "newsdesk: CNN, BBC News"
  std::string self_url; // absolute URL of this feed INCLUDING its query: each query is a feed
  std::string page_url; // absolute URL of the matching /news page
  // Unix milliseconds of the latest change; the feed's updated is the later of this and its
  // newest entry's times.
  std::int64_t updated_ms = 0;
};

// Atom 1.0 document (UTF-8, with XML declaration). The feed's id is derived from self_url, so
// every query is its own feed with an id that survives restarts; entries carry id, title
// (type="text"), link rel="alternate", published (first seen), updated (last seen), category
// (term = site, label = display name) and author (display name). Times are RFC 3339 UTC to the
// millisecond (server/core/utc_time.hpp).
std::string atom_feed(const feed_info& info, const std::vector<feed_entry>& entries);

// JSON Feed 1.1 document: version, title, home_page_url, feed_url, authors, items with id,
// url, title, content_text (the title: JSON Feed requires content), date_published,
// date_modified, tags [site] and authors [display name].
std::string json_feed(const feed_info& info, const std::vector<feed_entry>& entries);

// The id both feeds give the headline (site, url): a name-based (SHA-1, version 5) UUID URN,
// "urn:uuid:xxxxxxxx-xxxx-5xxx-yxxx-xxxxxxxxxxxx". The same inputs give the same id in every
// run of every build; different inputs give different ids.
std::string stable_entry_id(std::string_view site, std::string_view url);

// `text` as valid UTF-8 safe for XML 1.0 and JSON: invalid sequences become U+FFFD, forbidden
// and control characters (see above) are dropped.
std::string clean_text(std::string_view text);

} // namespace newsdesk::server
