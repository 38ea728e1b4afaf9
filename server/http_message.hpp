// Plain HTTP request/response values passed between the Beast session and the routes.
//
// Keeping Beast out of these types means only http_server.cpp and http_client.cpp compile
// Beast; routes, pages and tests build quickly against this header.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace newsdesk::server {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_request {
  std::string method; // upper case as received, e.g. "GET"
  std::string target; // request-target as received, e.g. "/news?site=cnn"
  header_list headers;
  std::string body;

  // The target before '?', and after it (empty when absent).
  std::string_view path() const;
  std::string_view query() const;
  // First header of that name, compared case-insensitively.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct http_response {
  unsigned status = 200;
  std::string content_type; // with charset for text, e.g. "text/html; charset=utf-8"
  header_list headers;      // extra headers (Location, ETag, Cache-Control, ...)
  std::string body;

  http_response& with_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

// A short plain-text answer: "404 Not Found\n". Users see generic text; logs get the detail.
http_response text_response(unsigned status, std::string_view text = {});

// Reason phrase for a status code ("Not Found"), or "Unknown".
std::string_view reason_phrase(unsigned status);

// Delivers the response for one request. Call exactly once, from any thread.
using responder = std::function<void(http_response)>;

// Handles one request. HEAD requests arrive with method "HEAD" and must be answered like
// GET; the session sends the headers only. May answer later, from any thread.
using request_handler = std::function<void(http_request, responder)>;

bool iequals(std::string_view a, std::string_view b);

} // namespace newsdesk::server
