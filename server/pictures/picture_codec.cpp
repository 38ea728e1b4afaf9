#include "server/pictures/picture_codec.hpp"

#include <openssl/evp.h>
#include <vips/vips.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace newsdesk::server {

namespace {

using namespace std::string_view_literals;

// libvips once per process: its own threads off (callers bound the concurrency), no operation
// cache (every picture is new, and a cache holds decoded pixels), and only the four loaders
// pictures need (every loader blocked, then those allowed again: matload, FITS, OpenSlide,
// ImageMagick and the rest never see a byte from the network).
bool vips_ready() {
  static const bool ready = [] {
    if (VIPS_INIT("newsdesk") != 0)
      return false;
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    for (const char* allowed : {"VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadWebp",
                                "VipsForeignLoadNsgif"})
      vips_operation_block_set(allowed, FALSE);
    return true;
  }();
  return ready;
}

struct image_unref {
  void operator()(VipsImage* image) const { g_object_unref(image); }
};
using image_ptr = std::unique_ptr<VipsImage, image_unref>;

// libvips keeps its messages in one buffer for the process: taken and cleared at once, cut to a
// line (a message from another thread may have joined it).
std::string vips_message() {
  std::string text = vips_error_buffer();
  vips_error_clear();
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text.substr(0, 300);
}

std::string hex_sha256(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < 16 && i < size; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 15];
  }
  return out;
}

made_picture refused(std::string why) {
  made_picture out;
  out.error = std::move(why);
  return out;
}

} // namespace

std::string_view image_format(std::string_view bytes, std::string* what) {
  if (bytes.starts_with("\xff\xd8\xff"sv))
    return "JPEG";
  if (bytes.starts_with("\x89PNG\r\n\x1a\n"sv))
    return "PNG";
  if (bytes.starts_with("GIF87a"sv) || bytes.starts_with("GIF89a"sv))
    return "GIF";
  if (bytes.size() >= 12 && bytes.starts_with("RIFF"sv) && bytes.substr(8, 4) == "WEBP"sv)
    return "WebP";
  if (what) {
    std::string start(bytes.substr(0, 256));
    std::transform(start.begin(), start.end(), start.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto first = start.find_first_not_of(" \t\r\n\xef\xbb\xbf");
    if (bytes.empty())
      *what = "an empty body";
    else if (start.find("<svg") != std::string::npos)
      *what = "SVG";
    else if (first != std::string::npos && start[first] == '<')
      *what = start.find("<html") != std::string::npos || start.find("<!doctype html") == first
                  ? "HTML"
                  : "XML or HTML";
    else if (first != std::string::npos && (start[first] == '{' || start[first] == '['))
      *what = "JSON";
    else if (bytes.size() >= 12 && bytes.substr(4, 4) == "ftyp"sv)
      *what = "an ISO media file (AVIF, HEIC or video), which is not read";
    else
      *what = "unknown bytes";
  }
  return {};
}

bool is_picture_name(std::string_view name) {
  constexpr auto suffix = ".webp"sv;
  if (name.size() != 32 + suffix.size() || !name.ends_with(suffix))
    return false;
  return std::all_of(name.begin(), name.begin() + 32,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

made_picture make_picture(std::string_view bytes) {
  std::string what;
  const auto format = image_format(bytes, &what);
  if (format.empty())
    return refused("not a JPEG, PNG, GIF or WebP image: " + what);
  if (!vips_ready())
    return refused("libvips could not start: " + vips_message());
  // The header only: libvips decodes nothing until pixels are asked for.
  image_ptr header(vips_image_new_from_buffer(bytes.data(), bytes.size(), "", "access",
                                              VIPS_ACCESS_SEQUENTIAL, nullptr));
  if (!header)
    return refused(std::string("cannot read the ") + std::string(format) +
                   " header: " + vips_message());
  const auto w = static_cast<std::uint64_t>(std::max(0, vips_image_get_width(header.get())));
  const auto h = static_cast<std::uint64_t>(std::max(0, vips_image_get_height(header.get())));
  if (w == 0 || h == 0 || w * h > picture_limits::max_pixels)
    return refused(std::to_string(w) + " x " + std::to_string(h) + " pixels: more than " +
                   std::to_string(picture_limits::max_pixels / 1'000'000) +
                   " megapixels, or none (a decompression bomb, or a broken header)");
  header.reset();
  // Shrunk as it loads where the format allows (JPEG decodes at 1/2 to 1/8 of its size), never
  // enlarged; a decoding error anywhere refuses the picture rather than showing grey.
  VipsImage* raw = nullptr;
  if (vips_thumbnail_buffer(const_cast<char*>(bytes.data()), bytes.size(), &raw,
                            picture_limits::width, "height", picture_limits::max_height, "size",
                            VIPS_SIZE_DOWN, "option_string", "fail_on=error", nullptr) != 0)
    return refused(std::string("cannot decode the ") + std::string(format) + ": " + vips_message());
  image_ptr small(raw);
  void* out = nullptr;
  std::size_t out_size = 0;
  // Pixels are decoded as the picture is saved (libvips is lazy): a file that fails to decode
  // fails here.
  if (vips_webpsave_buffer(small.get(), &out, &out_size, "Q", picture_limits::quality, "strip",
                           TRUE, nullptr) != 0)
    return refused(std::string("cannot decode the ") + std::string(format) + ": " + vips_message());
  made_picture made;
  made.body.assign(static_cast<const char*>(out), out_size);
  g_free(out);
  made.content_type = "image/webp";
  made.width = vips_image_get_width(small.get());
  made.height = vips_image_get_height(small.get());
  made.name = hex_sha256(made.body) + ".webp";
  return made;
}

} // namespace newsdesk::server
