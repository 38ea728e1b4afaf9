// Feeds as sources: RSS 0.9x/2.0, RSS 1.0 and 0.90 (RDF), Atom 1.0 and 0.3 (and CDF's
// <CHANNEL>) read with libxml2, and OPML lists of feeds read and written.
//
// Feeds as the web writes them are read as feed readers read them (Python's feedparser is the
// reference they are measured against; tests/feeds/corpus/README.md says how closely):
//  - the encoding as RFC 7303 says: BOM, then the HTTP charset, then the declaration; UTF-16
//    and UTF-32 included; bytes that are not what they claim read as windows-1252
//    (feed_encoding.hpp);
//  - HTML's named references (&eacute;, &rsquo;, &nbsp;) resolved, unknown ones kept as text, a
//    bare '&' taken as text, and what is still not well-formed read as far as libxml2's
//    recovery goes (feed_xml.hpp);
//  - element names compared without regard to case (<RSS>, <CHANNEL>, <Title>);
//  - an entry's link: its alternate page link (never an enclosure), else a permalink <guid>, else
//    an id that is an http(s) URL;
//  - a title that is HTML (Atom's type="html", RSS text with markup or references, CDATA with
//    tags) reduced to its text, as a page's titles are; Atom 0.3's mode="base64" decoded.
//
// A feed is hostile input like a page: libxml2 reads it without network access, without loading
// DTDs or external entities (no XXE), a feed declaring entities of its own is refused, and a
// feed past max_feed_bytes is refused before parsing. Headlines go through headline_collector,
// so titles and links follow the same rules as every scraper's.
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
  std::string encoding;            // what the bytes were read as: "UTF-8", "UTF-16LE"...
  // What the operator should know although the feed was read: "not well-formed XML (line 3:
  // ...); read what it could", "declared UTF-8, which does not read it; read as windows-1252".
  std::string warning;
};

// Reads a feed fetched from `feed_url` (the base for relative links, with xml:base on top)
// whose HTTP Content-Type was `content_type` (empty when unknown: a saved file). `site` becomes
// each headline's site. A feed that is not well-formed XML is read as far as it can be; when
// that finds no headline, its first error is thrown. Throws feed_error.
feed parse_feed(std::string_view bytes, std::string_view feed_url, std::string_view site = {},
                std::string_view content_type = {});

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
