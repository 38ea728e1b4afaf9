#include "broker/frame.hpp"

#include <limits>
#include <stdexcept>

namespace newsdesk::broker {

decode_result try_decode(std::string_view input, std::size_t max_payload) noexcept {
  decode_result r;
  if (input.size() < frame_header_bytes) {
    r.status = decode_status::need_more;
    r.size = frame_header_bytes;
    return r;
  }
  const std::uint32_t n = read_length(input.data());
  // The limit is checked first: nothing is reserved for a payload that will never be accepted.
  if (n > max_payload) {
    r.status = decode_status::error;
    r.size = n;
    return r;
  }
  const std::size_t total = frame_header_bytes + n;
  if (input.size() < total) {
    r.status = decode_status::need_more;
    r.size = total;
    return r;
  }
  r.status = decode_status::frame;
  r.size = total;
  r.payload = input.substr(frame_header_bytes, n);
  return r;
}

void append_frame(std::string& out, std::string_view payload) {
  if (payload.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("broker frame payload exceeds 4 GiB");
  char header[frame_header_bytes];
  write_length(header, static_cast<std::uint32_t>(payload.size()));
  out.append(header, frame_header_bytes);
  out.append(payload);
}

std::string encode_frame(std::string_view payload) {
  std::string out;
  out.reserve(frame_header_bytes + payload.size());
  append_frame(out, payload);
  return out;
}

} // namespace newsdesk::broker
