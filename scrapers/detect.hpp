// Headline detection without selectors: the links of a front page that look like headlines.
//
// Front pages are redesigned every year or two; a site file's selectors then match nothing and
// the site would vanish from /news. Detection scores every link by what headlines share across
// sites and years, and keeps those that pass:
//   - the text reads like a headline: several words, sentence length, not a label ("More",
//     "Sign in") nor all capitals;
//   - a heading (h1-h4) holds the link or is inside it;
//   - the URL is a story on the site's own host: a path with a slug of several words, a date or
//     a long numeric id, not a section front (/world/), a tag, author or account page;
//   - the link repeats a structure: many links share the same chain of ancestors (story lists,
//     card grids), where navigation is a handful;
//   - it is not in navigation, header, footer, sidebars, share bars or cookie banners.
// No site's class names are used: it reads structure and words only.
//
// Pure functions, safe from any thread; linear in the page (each link looks at a bounded number
// of ancestors), constant stack.
#pragma once

#include "scrapers/scraper.hpp"

#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

namespace dom {
class document;
}

// The headlines detection finds on `page`, in page order, through headline_collector (so they
// follow the same rules as any scraper's). `site` names them.
std::vector<headline> detect_headlines(const dom::document& page, std::string_view page_url,
                                       std::string_view site);

} // namespace newsdesk::scrapers
