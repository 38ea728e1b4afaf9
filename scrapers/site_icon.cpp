#include "scrapers/site_icon.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/text.hpp"
#include "scrapers/url.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace newsdesk::scrapers {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// A feed starts (after a BOM, whitespace and an XML declaration or comments) with <rss, <feed or
// <rdf:RDF; an HTML page with <!doctype html or <html.
bool looks_like_feed(std::string_view head) {
  const auto l = lower(head.substr(0, 2048));
  const auto html = l.find("<html");
  for (const char* root : {"<rss", "<feed", "<rdf:rdf"})
    if (auto at = l.find(root); at != std::string::npos && (html == std::string::npos || at < html))
      return true;
  return false;
}

// The text of the first <tag>...</tag> within `xml` (entities &amp; only: URLs carry no others),
// searched case-insensitively in `lowered`.
std::optional<std::string> element_text(std::string_view xml, std::string_view lowered,
                                        std::string_view tag) {
  const auto open = "<" + std::string(tag) + ">";
  const auto close = "</" + std::string(tag) + ">";
  auto start = lowered.find(open);
  if (start == std::string_view::npos)
    return std::nullopt;
  start += open.size();
  auto end = lowered.find(close, start);
  if (end == std::string_view::npos)
    return std::nullopt;
  auto text = trim(xml.substr(start, end - start));
  if (text.starts_with("<![CDATA[") && text.ends_with("]]>"))
    text = trim(text.substr(9, text.size() - 12));
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i).starts_with("&amp;")) {
      out += '&';
      i += 4;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::string> feed_icon(std::string_view feed) {
  const auto lowered = lower(feed);
  // RSS: <channel><image><url>; the <image> element of items is not a thing in RSS 2.0.
  if (auto image = lowered.find("<image>"); image != std::string::npos) {
    auto end = lowered.find("</image>", image);
    if (end != std::string::npos) {
      auto inner = feed.substr(image, end - image);
      if (auto link =
              element_text(inner, std::string_view(lowered).substr(image, end - image), "url"))
        return link;
    }
  }
  for (const char* tag : {"icon", "logo"})
    if (auto link = element_text(feed, lowered, tag))
      return link;
  return std::nullopt;
}

// The pixel size `sizes` gives ("32x32", "16x16 32x32", "any"): the largest; 0 when none.
int largest_size(std::string_view sizes) {
  int best = 0;
  const auto l = lower(sizes);
  if (l.find("any") != std::string::npos)
    return 1 << 16;
  std::size_t i = 0;
  while (i < l.size()) {
    int n = 0;
    bool digits = false;
    while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) {
      n = std::min(n * 10 + (l[i] - '0'), 1 << 16);
      digits = true;
      ++i;
    }
    if (digits)
      best = std::max(best, n);
    if (!digits)
      ++i;
  }
  return best;
}

bool png_or_ico(std::string_view type, std::string_view href) {
  const auto t = lower(type);
  if (t == "image/png" || t == "image/x-icon" || t == "image/vnd.microsoft.icon")
    return true;
  auto path = lower(href.substr(0, href.find_first_of("?#")));
  return path.ends_with(".png") || path.ends_with(".ico");
}

std::optional<std::string> page_icon(std::string_view page, std::string_view page_url) {
  auto head = page.substr(0, max_icon_scan_bytes);
  // Only the head: the parser closes what the cut leaves open.
  const auto lowered = lower(head);
  if (auto end = lowered.find("</head>"); end != std::string::npos)
    head = head.substr(0, end);
  auto doc = dom::document::parse(head);
  std::string base(page_url);
  if (auto b = doc.base_href())
    if (auto resolved = url::resolve(page_url, trim(*b)))
      base = *resolved;
  std::optional<std::string> first, sized;
  for (auto el : doc.root().descendant_elements()) {
    if (!el.has_tag("link"))
      continue;
    auto rel = el.attr("rel");
    auto href = el.attr("href");
    if (!rel || !href || trim(*href).empty())
      continue;
    const auto r = " " + lower(*rel) + " ";
    if (r.find(" icon ") == std::string::npos && r.find(" apple-touch-icon ") == std::string::npos)
      continue;
    auto link = url::resolve(base, trim(*href));
    if (!link || !url::is_http_url(*link))
      continue;
    if (!first)
      first = *link;
    if (!sized && largest_size(el.attr("sizes").value_or("")) >= 32 &&
        png_or_ico(el.attr("type").value_or(""), *href))
      sized = *link;
  }
  return sized ? sized : first;
}

} // namespace

std::vector<std::string> icon_urls(std::string_view body, std::string_view page_url,
                                   std::string_view home_url) {
  std::vector<std::string> out;
  if (!url::is_http_url(page_url))
    return out;
  auto declared = looks_like_feed(body) ? feed_icon(body.substr(0, max_icon_scan_bytes))
                                        : page_icon(body, page_url);
  if (declared)
    if (auto link = url::resolve(page_url, *declared); link && url::is_http_url(*link))
      out.push_back(*link);
  const auto origin_of = url::is_http_url(home_url) ? home_url : page_url;
  if (auto origin = url::resolve(origin_of, "/favicon.ico"); origin && url::is_http_url(*origin))
    if (std::find(out.begin(), out.end(), *origin) == out.end())
      out.push_back(*origin);
  return out;
}

} // namespace newsdesk::scrapers
