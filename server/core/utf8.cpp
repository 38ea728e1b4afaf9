#include "server/core/utf8.hpp"

#include <unicode/utf8.h>

#include <algorithm>
#include <cstdint>

namespace newsdesk::server {

utf8_step next_utf8(std::string_view text) noexcept {
  // ICU's checked decoder on at most one sequence's bytes (its lengths are 32-bit).
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  const auto length = static_cast<std::int32_t>(std::min<std::size_t>(4, text.size()));
  std::int32_t used = 0;
  UChar32 c = 0;
  U8_NEXT(bytes, used, length, c);
  utf8_step step;
  step.bytes = static_cast<std::size_t>(std::max(used, 1));
  step.valid = c >= 0;
  step.code_point = step.valid ? static_cast<char32_t>(c) : 0;
  return step;
}

bool valid_utf8(std::string_view text) noexcept {
  for (std::size_t at = 0; at < text.size();) {
    if (static_cast<unsigned char>(text[at]) < 0x80) {
      ++at;
      continue;
    }
    const auto step = next_utf8(text.substr(at));
    if (!step.valid)
      return false;
    at += step.bytes;
  }
  return true;
}

void append_utf8(std::string& out, char32_t code_point) {
  std::uint8_t buffer[U8_MAX_LENGTH];
  std::int32_t length = 0;
  U8_APPEND_UNSAFE(buffer, length, static_cast<UChar32>(code_point));
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(length));
}

std::string replace_invalid_utf8(std::string_view text, std::string_view replacement) {
  std::string out;
  out.reserve(text.size());
  decode_utf8(
      text, [&](char32_t, std::string_view bytes) { out.append(bytes); },
      [&] { out.append(replacement); });
  return out;
}

} // namespace newsdesk::server
