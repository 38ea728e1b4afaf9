// HTML's named character references (&eacute;, &rsquo;, &nbsp;...), which XML does not know but
// RSS written by hand and by HTML-minded tools uses everywhere. The list is the WHATWG HTML
// standard's 2,125 names (scrapers/data/html5_entities.txt, written from it by
// scripts/make-html5-entities and compiled into a table at build time): HTML 4's 252 and those
// HTML5 added. libxml2 knows HTML 4's list only for its HTML parser; the feed reader hands these
// to libxml2's XML parser as it meets them (feed.cpp).
//
// Pure functions over a constant table, safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers {

// The text `&name;` stands for, as UTF-8 ("eacute" -> "é"; "NotEqualTilde" -> U+2242 U+0338);
// nullopt for a name the standard does not list. Names are case-sensitive ("Eacute" is "É"), and
// given without '&' and ';'. O(log n).
std::optional<std::string> html_named_reference(std::string_view name);

// Whether `name` is one of the 106 references HTML also resolves without their ';' ("&eacute",
// "&amp", "&copy": HTML 4's Latin-1 set and a few more), as old pages and feeds write them.
bool is_legacy_html_reference(std::string_view name);

// The longest name in the list ("CounterClockwiseContourIntegral"): a longer one is not a
// reference, whatever it is.
inline constexpr std::size_t max_html_reference_name = 31;

} // namespace newsdesk::scrapers
