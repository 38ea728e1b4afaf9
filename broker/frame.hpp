#pragma once
// The broker's wire format: a 4-byte big-endian unsigned length N, then N payload bytes.
//
// Pure functions: no I/O, no allocation in try_decode. try_decode checks the length prefix
// against the caller's limit before anything could be allocated for the payload, so a hostile
// prefix costs nothing. Safe to call from any thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace newsdesk::broker {

inline constexpr std::size_t frame_header_bytes = 4;

enum class decode_status {
  need_more, ///< the input holds a prefix of a frame; `needed` says how many bytes in all
  frame,     ///< a whole frame is at the start of the input
  error,     ///< the length prefix exceeds the limit: close the connection
};

struct decode_result {
  decode_status status = decode_status::need_more;
  /// need_more: total bytes the frame needs (header only while the header is incomplete).
  /// frame: header + payload bytes consumed. error: the announced payload length.
  std::size_t size = 0;
  /// frame: the payload, pointing into the input (valid as long as the input is).
  std::string_view payload;
};

/// Reads the big-endian length at p (4 readable bytes).
[[nodiscard]] inline std::uint32_t read_length(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         std::uint32_t{u[3]};
}

/// Writes n as a big-endian length into out[0..3].
inline void write_length(char* out, std::uint32_t n) noexcept {
  out[0] = static_cast<char>((n >> 24) & 0xff);
  out[1] = static_cast<char>((n >> 16) & 0xff);
  out[2] = static_cast<char>((n >> 8) & 0xff);
  out[3] = static_cast<char>(n & 0xff);
}

/// Tries to decode one frame at the start of `input` whose payload may be at most
/// `max_payload` bytes. O(1); never allocates.
[[nodiscard]] decode_result try_decode(std::string_view input, std::size_t max_payload) noexcept;

/// Appends one frame holding `payload` to `out`. Throws std::length_error if the payload does
/// not fit a 32-bit length.
void append_frame(std::string& out, std::string_view payload);

/// One frame holding `payload`.
[[nodiscard]] std::string encode_frame(std::string_view payload);

} // namespace newsdesk::broker
