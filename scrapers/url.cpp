#include "scrapers/url.hpp"

#include "scrapers/text.hpp"

#include <cctype>

#include <uriparser/Uri.h>

#include <array>

namespace newsdesk::scrapers::url {
namespace {

// Browsers accept hrefs that RFC 3986 does not (spaces, raw UTF-8, stray newlines from
// wrapped markup); without this, real headlines would be dropped as invalid URIs.
std::string clean(std::string_view text) {
  text = trim_ascii_whitespace(text);
  static constexpr std::array<char, 16> hex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                               '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\t' || c == '\n' || c == '\r') {
      continue;
    }
    bool disallowed = byte <= 0x20 || byte >= 0x7f || c == '"' || c == '<' || c == '>' ||
                      c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}';
    if (disallowed) {
      out.push_back('%');
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0x0f]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Owns a parsed UriUriA; uriparser's structures point into the parsed string, so the text
// lives here too.
class parsed_uri {
 public:
  explicit parsed_uri(std::string text)
      : text_(std::move(text)) {
    const char* error_pos = nullptr;
    ok_ = uriParseSingleUriExA(&uri_, text_.data(), text_.data() + text_.size(), &error_pos) ==
          URI_SUCCESS;
  }
  parsed_uri(const parsed_uri&) = delete;
  parsed_uri& operator=(const parsed_uri&) = delete;
  ~parsed_uri() {
    if (ok_) {
      uriFreeUriMembersA(&uri_);
    }
  }

  bool ok() const { return ok_; }
  bool has_scheme() const { return ok_ && uri_.scheme.first != nullptr; }
  const UriUriA* get() const { return &uri_; }
  std::string_view scheme() const { return range(uri_.scheme); }
  std::string_view host() const { return range(uri_.hostText); }

 private:
  static std::string_view range(const UriTextRangeA& r) {
    if (r.first == nullptr || r.afterLast == nullptr) {
      return {};
    }
    return {r.first, static_cast<std::size_t>(r.afterLast - r.first)};
  }

  std::string text_;
  UriUriA uri_{};
  bool ok_ = false;
};

std::optional<std::string> to_string(const UriUriA* uri) {
  int chars = 0;
  if (uriToStringCharsRequiredA(uri, &chars) != URI_SUCCESS) {
    return std::nullopt;
  }
  std::string out(static_cast<std::size_t>(chars) + 1, '\0');
  int written = 0;
  if (uriToStringA(out.data(), uri, chars + 1, &written) != URI_SUCCESS) {
    return std::nullopt;
  }
  out.resize(static_cast<std::size_t>(chars));
  return out;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// `b` must be lowercase.
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (x != b[i]) {
      return false;
    }
  }
  return true;
}

} // namespace

std::optional<std::string> resolve(std::string_view base, std::string_view reference) {
  parsed_uri ref(clean(reference));
  if (!ref.ok()) {
    return std::nullopt;
  }
  parsed_uri base_uri(clean(base));
  // RFC 3986 5.2.2: a reference with a scheme ignores the base, so it resolves even when the
  // base is unusable; resolving it against itself yields exactly that case of the algorithm.
  const UriUriA* against = nullptr;
  if (base_uri.has_scheme()) {
    against = base_uri.get();
  } else if (ref.has_scheme()) {
    against = ref.get();
  } else {
    return std::nullopt;
  }
  UriUriA resolved{};
  if (uriAddBaseUriExA(&resolved, ref.get(), against, URI_RESOLVE_STRICTLY) != URI_SUCCESS) {
    // uriparser frees `resolved` itself when resolution fails.
    return std::nullopt;
  }
  std::optional<std::string> out = to_string(&resolved);
  uriFreeUriMembersA(&resolved);
  // Schemes are case-insensitive and lower case is canonical (RFC 3986 3.1): "HTTPS://x" and
  // "https://x" are one link, for de-duplication and for every later check.
  if (out)
    for (char& c : *out) {
      if (c == ':')
        break;
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  return out;
}

bool is_http_url(std::string_view text) {
  parsed_uri uri{std::string(text)};
  if (!uri.has_scheme() || uri.host().empty()) {
    return false;
  }
  return iequals(uri.scheme(), "http") || iequals(uri.scheme(), "https");
}

std::optional<http_parts> split_http_url(std::string_view text) {
  parsed_uri uri{std::string(text)};
  if (!uri.has_scheme() || uri.host().empty() ||
      !(iequals(uri.scheme(), "http") || iequals(uri.scheme(), "https"))) {
    return std::nullopt;
  }
  http_parts parts;
  parts.host = lowercase(uri.host());
  // The URI is valid and has an authority, so "//" follows the scheme and the path is what
  // lies between the end of the authority and the query or fragment.
  std::size_t authority = text.find("//");
  std::size_t path_start = text.find_first_of("/?#", authority + 2);
  if (path_start != std::string_view::npos && text[path_start] == '/') {
    std::size_t path_end = text.find_first_of("?#", path_start);
    parts.path = std::string(text.substr(path_start, path_end == std::string_view::npos
                                                         ? std::string_view::npos
                                                         : path_end - path_start));
  }
  return parts;
}

bool host_within(std::string_view host, std::string_view domain) {
  if (domain.empty() || host.size() < domain.size()) {
    return false;
  }
  std::string_view tail = host.substr(host.size() - domain.size());
  if (lowercase(tail) != lowercase(domain)) {
    return false;
  }
  return host.size() == domain.size() || host[host.size() - domain.size() - 1] == '.';
}

} // namespace newsdesk::scrapers::url
