// Small helpers every renderer uses to build its results and read JSON answers (Splash's,
// DevTools'), kept in one place so each renderer's file holds only its own protocol.
#pragma once

#include "scrapers/text.hpp"
#include "server/render/renderer.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

namespace newsdesk::server {

// A failed render with the notice people read.
// Failure messages quote what Splash, a browser or a site said, which may be megabytes (a
// Splash error carries the page's text): the notice keeps at most this much of it.
inline constexpr std::size_t max_message_bytes = 500;

inline render_result render_failed(failure_kind kind, std::string message) {
  render_result r;
  r.failure = kind;
  if (message.size() > max_message_bytes)
    message = std::string(scrapers::cut_utf8(message, max_message_bytes)) + "…";
  r.message = std::move(message);
  return r;
}

// A duration as the seconds renderers' APIs and notices take.
inline double seconds_of(std::chrono::milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

// j[key] when j is an object holding a string there, else "" (answers are untrusted).
inline std::string string_field(const nlohmann::json& j, const char* key) {
  if (j.is_object())
    if (auto it = j.find(key); it != j.end() && it->is_string())
      return it->get<std::string>();
  return {};
}

} // namespace newsdesk::server
