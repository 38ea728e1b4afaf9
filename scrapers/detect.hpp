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
// And it is not furniture, whatever its score (each rule has a name that --try-site shows):
//   - an action or label ("Comments", "Download", "Listen", "More", "Sign in", "World »");
//   - a link to a media file (mp3, mp4, pdf...);
//   - a section or index page: on a page whose headline-like links have story-shaped addresses
//     (a slug, an id, a date), a same-host address without any;
//   - a widget row: numbers with at most one word ("Thu 30°C 25°C", tickers, dates);
//   - a navigation list: most links of its list are furniture;
//   - the same title on three or more targets ("Download" x8, "8 comments").
// No site's class names are used: it reads structure and words only.
//
// Pure functions, safe from any thread; linear in the page (each link looks at a bounded number
// of ancestors), constant stack.
#pragma once

#include "scrapers/headlines.hpp"
#include "scrapers/scraper.hpp"

#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

namespace dom {
class document;
}

// The headlines detection finds on `page`, in page order, through headline_collector (so they
// follow the same rules as any scraper's). `site` names them. When `left_out` is given, every
// link of the page that was not kept is appended to it with the reason: the furniture rule
// that refused it ("furniture: a media file"), a bad title, a duplicate, or its score.
std::vector<headline> detect_headlines(const dom::document& page, std::string_view page_url,
                                       std::string_view site,
                                       std::vector<left_out_link>* left_out = nullptr);

} // namespace newsdesk::scrapers
