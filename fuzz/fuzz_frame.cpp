// libFuzzer target: the broker's frame codec (broker/frame.hpp) on arbitrary bytes arriving in
// arbitrary chunks, decoded the way a broker connection does (keep the incomplete tail, append
// the next read, decode again).
//
// Input: byte 0 picks the payload limit, byte 1 seeds the chunk sizes, the rest is the stream.
// Checked for every input:
//  - each decoded frame re-encodes (encode_frame) to exactly the bytes it was decoded from;
//  - an oversized length prefix is an error as soon as its 4 header bytes are in, so a decoder
//    never holds more than header + limit bytes of one frame (nothing is reserved for it);
//  - need_more always asks for more than it has, and never for more than header + limit;
//  - chunking changes nothing: the frames and the verdict equal a one-shot decode.
#include "broker/frame.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace newsdesk::broker;

void require(bool ok) {
  if (!ok)
    std::abort();
}

struct outcome {
  std::vector<std::string> payloads;
  bool error = false;
  std::size_t consumed = 0; // bytes of the stream turned into frames
};

// Decodes `buffer` from `pos` on; returns true when the stream must be closed (error).
bool decode_available(const std::string& buffer, std::size_t& pos, std::size_t max_payload,
                      outcome& out) {
  for (;;) {
    const std::string_view rest(buffer.data() + pos, buffer.size() - pos);
    const auto r = try_decode(rest, max_payload);
    switch (r.status) {
    case decode_status::frame:
      require(r.size == frame_header_bytes + r.payload.size() && r.size <= rest.size());
      require(r.payload.size() <= max_payload);
      require(r.payload.data() == rest.data() + frame_header_bytes);
      require(encode_frame(r.payload) == rest.substr(0, r.size));
      out.payloads.emplace_back(r.payload);
      out.consumed += r.size;
      pos += r.size;
      break;
    case decode_status::need_more:
      require(r.size > rest.size());
      require(r.size <= frame_header_bytes + max_payload);
      return false;
    case decode_status::error:
      require(rest.size() >= frame_header_bytes);
      require(r.size > max_payload && r.size == read_length(rest.data()));
      out.error = true;
      return true;
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  static constexpr std::size_t limits[] = {0, 1, 7, 256, 1024 * 1024};
  const std::size_t max_payload = limits[data[0] % std::size(limits)];
  std::uint32_t seed = data[1] | 0x100u;
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  // One shot.
  outcome whole;
  {
    const std::string buffer(stream);
    std::size_t pos = 0;
    decode_available(buffer, pos, max_payload, whole);
  }

  // Chunked, as reads arrive: 1-16 bytes, now and then a large read.
  outcome chunked;
  std::string held; // the incomplete tail kept between reads, as the broker's session does
  std::size_t offset = 0;
  while (offset < stream.size() && !chunked.error) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    std::size_t n = (seed % 8 == 0) ? 4096 : 1 + seed % 16;
    n = std::min(n, stream.size() - offset);
    held.append(stream.substr(offset, n));
    offset += n;
    std::size_t pos = 0;
    if (decode_available(held, pos, max_payload, chunked))
      break;
    held.erase(0, pos);
    // What stays buffered is one incomplete frame: never more than header + limit bytes.
    require(held.size() < frame_header_bytes + max_payload);
  }

  require(whole.error == chunked.error);
  require(whole.payloads == chunked.payloads);
  require(whole.consumed == chunked.consumed);
  return 0;
}
