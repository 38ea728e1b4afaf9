// Where a site's icon (favicon) is, read off what a refresh already fetched: a page's
// <link rel="icon" | "shortcut icon" | "apple-touch-icon" href> or a feed's <image><url>, Atom
// <icon> or <logo>, and in either case the origin's /favicon.ico after it. Pure: no network.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::scrapers {

// Only this much of a page is read for its icon links: they sit in <head>, which real front
// pages close within their first 100 KB; reading a 4 MB page twice would double a refresh's cost.
inline constexpr std::size_t max_icon_scan_bytes = 256 * 1024;

// The icon URLs to try for a page or feed fetched from `page_url`, best first, each absolute
// http(s), no duplicates: the declared icon (of several links, the first PNG or ICO whose
// `sizes` is at least 32 px, else the first), then ORIGIN/favicon.ico, where ORIGIN is
// `home_url`'s when that is http(s) (a feed's site: the feed's own host is often a feed service
// whose icon is not the site's), else `page_url`'s. Empty when `page_url` is not http(s).
std::vector<std::string> icon_urls(std::string_view body, std::string_view page_url,
                                   std::string_view home_url = {});

} // namespace newsdesk::scrapers
