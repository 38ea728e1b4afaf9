// URL resolution for links found in pages.
//
// Pure functions, safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::scrapers::url {

// Resolves `reference` (an href as written in a page) against `base` (an absolute URI) with
// the strict algorithm of RFC 3986 section 5.2, including dot-segment removal: resolve
// ("http://a/b/c/d;p?q", "../g") == "http://a/b/g", and resolve(base, "http:g") == "http:g".
//
// Before parsing, both strings are cleaned as browsers clean an href: leading and trailing
// ASCII whitespace is trimmed, tabs and newlines inside are removed, and bytes a URI may not
// contain (space, non-ASCII, "<>\^`{|}) are percent-encoded. Fragments are kept unchanged.
//
// Returns nullopt when either string is not a valid URI after cleaning, or when the reference
// is relative and `base` is not absolute. No other normalisation (case, percent-encoding,
// default ports) is done.
std::optional<std::string> resolve(std::string_view base, std::string_view reference);

// True when `text` is an absolute URI whose scheme is http or https (any case) and which has
// a non-empty host. "javascript:...", "mailto:...", "http:g" and "http:///x" are not.
bool is_http_url(std::string_view text);

// The parts of an http(s) URL that scrapers filter links on.
struct http_parts {
  std::string host; // ASCII-lowercased; no port, no IPv6 brackets
  std::string path; // from the first "/" after the authority up to "?" or "#"; may be empty
};

// Splits `text` when is_http_url(text); nullopt otherwise. Does not decode percent-escapes.
std::optional<http_parts> split_http_url(std::string_view text);

// True when `host` is `domain` or a subdomain of it, ASCII case-insensitively:
// host_within("edition.cnn.com", "cnn.com") and host_within("cnn.com", "cnn.com") are true,
// host_within("notcnn.com", "cnn.com") is false.
bool host_within(std::string_view host, std::string_view domain);

} // namespace newsdesk::scrapers::url
