// Feeds as sources: RSS 0.9x/2.0, RSS 1.0 (RDF) and Atom 1.0 read with libxml2, and OPML lists
// of feeds read and written.
//
// A feed is hostile input like a page: libxml2 reads it without network access, without loading
// DTDs or external entities (no XXE), with its own bounds on entity expansion, and a feed past
// max_feed_bytes is refused before parsing. Headlines go through headline_collector, so titles
// and links follow the same rules as every scraper's.
//
// Pure functions, safe from any thread.
#pragma once

#include "scrapers/scraper.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

// Large news feeds are 100 KB to 2 MB; 16 MiB matches the page limit.
inline constexpr std::size_t max_feed_bytes = 16 * 1024 * 1024;

// Thrown for bytes that are not a readable feed (or OPML list); the message says what was wrong
// and where: "line 12: Opening and ending tag mismatch: item and channel", "not a feed: the
// root element is <html>".
class feed_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct feed {
  std::string title;               // the channel's or feed's own title; may be empty
  std::string home;                // its link to the site, resolved; may be empty
  std::string language;            // RSS's <language> (<dc:language>), as given; may be empty
  std::vector<headline> headlines; // in the feed's order
};

// Reads a feed fetched from `feed_url` (the base for relative links, with xml:base on top).
// The encoding is the declared one; bytes without a declaration that are not UTF-8 are read
// as Latin-1. `site` becomes each headline's site. Throws feed_error.
feed parse_feed(std::string_view bytes, std::string_view feed_url, std::string_view site = {});

// One feed of an OPML list.
struct opml_outline {
  std::string title;    // the outline's title, else its text; may be empty
  std::string feed_url; // xmlUrl: always set
  std::string home_url; // htmlUrl; may be empty

  friend bool operator==(const opml_outline&, const opml_outline&) = default;
};

// The feeds of an OPML document, nested outlines flattened in document order; outlines without
// an xmlUrl (folders) are skipped. Throws feed_error.
std::vector<opml_outline> parse_opml(std::string_view bytes);

// An OPML 2.0 document listing `outlines` as RSS subscriptions.
std::string write_opml(std::string_view title, const std::vector<opml_outline>& outlines);

} // namespace newsdesk::scrapers
