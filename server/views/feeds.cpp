#include "server/views/feeds.hpp"

#include "server/core/utc_time.hpp"
#include "server/core/utf8.hpp"

#include "scrapers/url.hpp"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <array>

namespace newsdesk::server {

using json = nlohmann::json;

namespace {

// The namespace of newsdesk's version-5 UUIDs (RFC 9562 section 5.5). Chosen once at random;
// changing it would change every entry id and make readers show every headline again.
constexpr std::array<unsigned char, 16> uuid_namespace = {
    0x5d, 0x0e, 0x8b, 0x4a, 0x3f, 0x7c, 0x4c, 0x1e, 0x9a, 0x62, 0x0b, 0x7e, 0x2f, 0x4d, 0x8c, 0x31};

std::string uuid_v5_urn(std::string_view name) {
  std::string input(uuid_namespace.begin(), uuid_namespace.end());
  input.append(name);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digest_len, EVP_sha1(), nullptr) != 1 ||
      digest_len < 16)
    throw std::runtime_error("SHA-1 is not available");
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0F) | 0x50); // version 5
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3F) | 0x80); // RFC variant
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "urn:uuid:";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out += '-';
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0x0F];
  }
  return out;
}

bool keep(char32_t cp) {
  if (cp < 0x20)
    return cp == 0x09 || cp == 0x0A || cp == 0x0D;
  if (cp >= 0x7F && cp <= 0x9F) // DEL and C1: legal in XML 1.0 but never meant in a headline
    return false;
  return cp != 0xFFFE && cp != 0xFFFF;
}

void append_xml(std::string& out, std::string_view raw) {
  for (char c : clean_text(raw)) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
    }
  }
}

// <name attributes>text</name> on its own line.
void element(std::string& out, std::string_view indent, std::string_view name,
             std::string_view text, std::string_view attributes = {}) {
  out.append(indent).append("<").append(name).append(attributes).append(">");
  append_xml(out, text);
  out.append("</").append(name).append(">\n");
}

bool usable(const feed_entry& e) {
  return scrapers::url::is_http_url(e.url);
}

std::string entry_id(const feed_entry& e) {
  return e.id.empty() ? stable_entry_id(e.site, e.url) : e.id;
}

const std::string& display_name(const feed_entry& e) {
  return e.site_display_name.empty() ? e.site : e.site_display_name;
}

std::int64_t feed_updated(const feed_info& info, const std::vector<feed_entry>& entries) {
  auto t = info.updated_ms;
  for (const auto& e : entries)
    if (usable(e))
      t = std::max({t, e.first_seen_ms, e.last_seen_ms});
  return t;
}

} // namespace

std::string clean_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  decode_utf8(
      text,
      [&](char32_t cp, std::string_view bytes) {
        if (keep(cp))
          out.append(bytes);
      },
      [&] { out.append(replacement_character); });
  return out;
}

std::string stable_entry_id(std::string_view site, std::string_view url) {
  std::string name = "entry\n";
  name.append(site).append("\n").append(url);
  return uuid_v5_urn(name);
}

std::string atom_feed(const feed_info& info, const std::vector<feed_entry>& entries) {
  std::string out;
  out.reserve(1024 + entries.size() * 600);
  out += "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";
  out += "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n";
  element(out, "  ", "id", uuid_v5_urn("feed\n" + info.self_url));
  element(out, "  ", "title", info.title, " type=\"text\"");
  element(out, "  ", "updated", format_utc(feed_updated(info, entries), rfc3339_millis));
  out += "  <link rel=\"self\" type=\"application/atom+xml\" href=\"";
  append_xml(out, info.self_url);
  out += "\"/>\n  <link rel=\"alternate\" type=\"text/html\" href=\"";
  append_xml(out, info.page_url);
  out += "\"/>\n  <author><name>newsdesk</name></author>\n";
  out += "  <generator>newsdesk</generator>\n";
  for (const auto& e : entries) {
    if (!usable(e))
      continue;
    out += "  <entry>\n";
    element(out, "    ", "id", entry_id(e));
    element(out, "    ", "title", e.title, " type=\"text\"");
    if (!e.summary.empty())
      element(out, "    ", "summary", e.summary, " type=\"text\"");
    out += "    <link rel=\"alternate\" href=\"";
    append_xml(out, e.url);
    out += "\"/>\n";
    element(out, "    ", "published",
            format_utc(e.published_ms.value_or(e.first_seen_ms), rfc3339_millis));
    element(out, "    ", "updated",
            format_utc(std::max(e.first_seen_ms, e.last_seen_ms), rfc3339_millis));
    out += "    <author>";
    element(out, "", "name", display_name(e));
    out.pop_back(); // keep </author> on the same line
    out += "</author>\n    <category term=\"";
    append_xml(out, e.site);
    out += "\" label=\"";
    append_xml(out, display_name(e));
    out += "\"/>\n  </entry>\n";
  }
  out += "</feed>\n";
  return out;
}

std::string json_feed(const feed_info& info, const std::vector<feed_entry>& entries) {
  json items = json::array();
  for (const auto& e : entries) {
    if (!usable(e))
      continue;
    auto title = clean_text(e.title);
    auto& item = items.emplace_back(json(
        {{"id", clean_text(entry_id(e))},
         {"url", clean_text(e.url)},
         {"title", title},
         {"content_text", title},
         {"date_published", format_utc(e.published_ms.value_or(e.first_seen_ms), rfc3339_millis)},
         {"date_modified", format_utc(std::max(e.first_seen_ms, e.last_seen_ms), rfc3339_millis)},
         {"authors", json::array({{{"name", clean_text(display_name(e))}}})},
         {"tags", json::array({clean_text(e.site)})}}));
    if (!e.summary.empty())
      item["summary"] = clean_text(e.summary);
  }
  json out = {{"version", "https://jsonfeed.org/version/1.1"},
              {"title", clean_text(info.title)},
              {"authors", json::array({{{"name", "newsdesk"}}})}};
  if (!info.page_url.empty())
    out["home_page_url"] = clean_text(info.page_url);
  if (!info.self_url.empty())
    out["feed_url"] = clean_text(info.self_url);
  out["items"] = std::move(items);
  return out.dump(2, ' ', false, json::error_handler_t::replace);
}

} // namespace newsdesk::server
