#include "server/http/representation.hpp"

#include "server/core/utc_time.hpp"
#include "server/core/yield_point.hpp"

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stdexcept>

namespace newsdesk::server {

namespace {

// Input per compression step, with yield_point() between steps, so a build on a background
// thread holds a core for about a step at a time: for gzip 16 KiB (0.1-1 ms, by level); brotli
// takes input in 16 KiB but compresses a block at a time (64 KiB at quality 5, 256 KiB at 9
// and 11), and quality 10 and 11 compress what is left in one go at the end.
constexpr std::size_t compression_step = 16 * 1024;

// gzip at zlib's best level (compressed once per change, sent thousands of times), or its
// default one.
std::string gzip_bytes(std::string_view in, compression effort) {
  z_stream zs{};
  const int level = effort == compression::best ? Z_BEST_COMPRESSION : Z_DEFAULT_COMPRESSION;
  // 15 + 16: the largest window, with a gzip header and trailer.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: cannot start compressing");
  // deflateBound's room: every step consumes all of its input.
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  std::size_t fed = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const auto step = std::min(compression_step, in.size() - fed);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + fed));
    zs.avail_in = static_cast<uInt>(step);
    fed += step;
    rc = deflate(&zs, fed == in.size() ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_OK && zs.avail_in != 0)
      rc = Z_BUF_ERROR;
    yield_point();
  }
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw std::runtime_error("zlib: cannot compress");
  return out;
}

// Brotli at its best quality, as `brotli -q 11` makes .br files for nginx's brotli_static (past a
// megabyte quality 9 keeps a rebuild from taking seconds), or at quality 5. Streamed, for the
// yield points between blocks (on the saved pages, the same bytes as the one-shot call).
std::string brotli_bytes(std::string_view in, compression effort) {
  const int quality = effort == compression::quick ? 5
                      : in.size() <= 1024 * 1024   ? BROTLI_MAX_QUALITY
                                                   : 9;
  const std::unique_ptr<BrotliEncoderState, void (*)(BrotliEncoderState*)> encoder(
      BrotliEncoderCreateInstance(nullptr, nullptr, nullptr), BrotliEncoderDestroyInstance);
  if (!encoder)
    throw std::runtime_error("brotli: cannot start compressing");
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_QUALITY,
                            static_cast<std::uint32_t>(quality));
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_MODE, BROTLI_MODE_TEXT);
  BrotliEncoderSetParameter(encoder.get(), BROTLI_PARAM_SIZE_HINT,
                            static_cast<std::uint32_t>(std::min<std::size_t>(in.size(), 1u << 30)));
  std::string out(BrotliEncoderMaxCompressedSize(in.size()), '\0');
  if (out.empty())
    throw std::runtime_error("brotli: input too large");
  auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
  auto next_out = reinterpret_cast<std::uint8_t*>(out.data());
  std::size_t available_in = 0, available_out = out.size(), fed = 0;
  for (;;) {
    if (available_in == 0 && fed < in.size()) {
      available_in = std::min(compression_step, in.size() - fed);
      fed += available_in;
    }
    // Once asked to finish, the encoder is given the same remaining input until it has.
    const auto op = fed == in.size() ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
    if (!BrotliEncoderCompressStream(encoder.get(), op, &available_in, &next_in, &available_out,
                                     &next_out, nullptr))
      throw std::runtime_error("brotli: cannot compress");
    if (BrotliEncoderIsFinished(encoder.get()))
      break;
    if (available_out == 0)
      throw std::runtime_error("brotli: output larger than its bound");
    yield_point();
  }
  out.resize(out.size() - available_out);
  return out;
}

// 64-bit FNV-1a: the same bytes give the same tag on every instance and after a restart.
std::string content_tag(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[40];
  std::snprintf(out, sizeof out, "\"%016llx-%zx\"", static_cast<unsigned long long>(h),
                bytes.size());
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// A q-value ("1", "0.5", "0.000"); nullopt when malformed.
std::optional<double> parse_q(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.size() > 5 || (text[0] != '0' && text[0] != '1'))
    return std::nullopt;
  double value = text[0] - '0';
  if (text.size() > 1) {
    if (text[1] != '.')
      return std::nullopt;
    double scale = 0.1;
    for (char c : text.substr(2)) {
      if (c < '0' || c > '9')
        return std::nullopt;
      value += (c - '0') * scale;
      scale /= 10;
    }
  }
  return value > 1.0 ? std::nullopt : std::optional<double>(value);
}

} // namespace

std::shared_ptr<const representation>
representation::make(std::string content_type, std::string_view bytes,
                     std::int64_t last_modified_ms, std::string_view cache_control,
                     const header_list& extra, compression effort) {
  auto r = std::shared_ptr<representation>(new representation());
  r->content_type_ = std::move(content_type);
  r->etag_ = content_tag(bytes);
  const std::string_view quick = effort == compression::quick ? "q" : "";
  r->etag_gzip_ = r->etag_.substr(0, r->etag_.size() - 1) + "-gz" + std::string(quick) + "\"";
  r->etag_br_ = r->etag_.substr(0, r->etag_.size() - 1) + "-br" + std::string(quick) + "\"";
  r->effort_ = effort;
  r->cache_control_ = cache_control;
  r->extra_ = extra;
  r->last_modified_ms_ = last_modified_ms;
  r->last_modified_ = http_date(last_modified_ms);
  r->identity_ = memory_file::create(bytes);
  yield_point();
  if (auto gz = gzip_bytes(bytes, effort); gz.size() < bytes.size())
    r->gzip_ = memory_file::create(gz);
  yield_point();
  if (auto br = brotli_bytes(bytes, effort); br.size() < bytes.size())
    r->br_ = memory_file::create(br);
  yield_point();
  r->format_header_lines(cache_control, extra);
  return r;
}

std::shared_ptr<const representation> representation::polished() const {
  return make(content_type_, identity_->bytes(), last_modified_ms_, cache_control_, extra_,
              compression::best);
}

void representation::format_header_lines(std::string_view cache_control, const header_list& extra) {
  std::string checked_cache_control, checked_extra;
  if (!cache_control.empty())
    append_checked_header_line(checked_cache_control, "Cache-Control", cache_control);
  for (const auto& [name, value] : extra)
    append_checked_header_line(checked_extra, name, value);
  for (auto coding : {content_coding::identity, content_coding::gzip, content_coding::br}) {
    std::string lines;
    append_header_line(lines, "ETag", etag(coding));
    append_header_line(lines, "Last-Modified", last_modified_);
    append_header_line(lines, "Vary", "Accept-Encoding");
    lines += checked_cache_control;
    auto& mine = header_lines_[static_cast<int>(coding)];
    mine.not_modified = std::make_shared<const std::string>(lines);
    lines += checked_extra;
    if (coding != content_coding::identity)
      append_header_line(lines, "Content-Encoding", coding == content_coding::br ? "br" : "gzip");
    mine.full = std::make_shared<const std::string>(std::move(lines));
  }
}

std::string representation::tag_of(std::string_view bytes) {
  return content_tag(bytes);
}

std::string representation::etag(content_coding coding) const {
  switch (coding) {
  case content_coding::gzip:
    return etag_gzip_;
  case content_coding::br:
    return etag_br_;
  case content_coding::identity:
    break;
  }
  return etag_;
}

const std::shared_ptr<const memory_file>& representation::body(content_coding coding) const {
  switch (coding) {
  case content_coding::gzip:
    return gzip_;
  case content_coding::br:
    return br_;
  case content_coding::identity:
    break;
  }
  return identity_;
}

std::size_t representation::bytes() const {
  std::size_t n = 0;
  for (const auto* f : {&identity_, &gzip_, &br_})
    if (*f)
      n += (*f)->size();
  return n;
}

http_response representation::respond(const http_request& request) const {
  auto coding =
      negotiate_coding(request.header("Accept-Encoding"), gzip_ != nullptr, br_ != nullptr);
  if (!coding) {
    auto res = text_response(406, "Not Acceptable: this resource is available as br, gzip or "
                                  "identity, and the request's Accept-Encoding refuses all three");
    res.with_header("Vary", "Accept-Encoding");
    return res;
  }
  const auto& tag = *coding == content_coding::br     ? etag_br_
                    : *coding == content_coding::gzip ? etag_gzip_
                                                      : etag_;
  const auto& lines = header_lines_[static_cast<int>(*coding)];
  bool fresh = false;
  if (auto inm = request.header("If-None-Match"))
    fresh = none_match(*inm, tag);
  else if (auto ims = request.header("If-Modified-Since"))
    if (auto since = parse_http_date(*ims))
      fresh = last_modified_ms_ / 1000 <= *since / 1000;
  http_response res;
  if (fresh) {
    res.status = 304;
    res.header_lines = lines.not_modified;
    return res;
  }
  res.content_type = content_type_;
  res.header_lines = lines.full;
  res.file_body = body(*coding);
  return res;
}

std::optional<content_coding> negotiate_coding(std::optional<std::string_view> accept_encoding,
                                               bool gzip_available, bool br_available) {
  if (!accept_encoding)
    return content_coding::identity;
  std::optional<double> q_br, q_gzip, q_identity, q_star;
  std::string_view rest = *accept_encoding;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty())
      continue;
    auto semi = item.find(';');
    auto name = trim(item.substr(0, semi));
    double q = 1.0;
    if (semi != std::string_view::npos) {
      auto param = trim(item.substr(semi + 1));
      if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=')
        continue; // a parameter we do not know: ignore the item
      auto parsed = parse_q(param.substr(2));
      if (!parsed)
        continue;
      q = *parsed;
    }
    if (iequals(name, "br"))
      q_br = q;
    else if (iequals(name, "gzip") || iequals(name, "x-gzip"))
      q_gzip = q;
    else if (iequals(name, "identity"))
      q_identity = q;
    else if (name == "*")
      q_star = q;
  }
  // Unnamed codings take "*"'s rating; identity is acceptable unless refused.
  const double br = br_available ? q_br.value_or(q_star.value_or(0)) : 0;
  const double gzip = gzip_available ? q_gzip.value_or(q_star.value_or(0)) : 0;
  const double identity = q_identity.value_or(q_star.value_or(1));
  // Ties go to the smaller body.
  if (br > 0 && br >= gzip && br >= identity)
    return content_coding::br;
  if (gzip > 0 && gzip >= identity)
    return content_coding::gzip;
  if (identity > 0)
    return content_coding::identity;
  return std::nullopt;
}

std::string http_date(std::int64_t unix_ms) {
  return format_utc(unix_ms, http_date_pattern);
}

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  std::string s(trim(text));
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0')
    return std::nullopt;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

bool none_match(std::string_view if_none_match, std::string_view etag) {
  auto opaque = [](std::string_view tag) {
    tag = trim(tag);
    if (tag.starts_with("W/"))
      tag.remove_prefix(2);
    return tag;
  };
  if (trim(if_none_match) == "*")
    return true;
  const auto wanted = opaque(etag);
  while (!if_none_match.empty()) {
    auto comma = if_none_match.find(',');
    if (opaque(if_none_match.substr(0, comma)) == wanted)
      return true;
    if (comma == std::string_view::npos)
      break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

http_response image_response(const http_request& request, std::string_view content_type,
                             std::string_view body, const std::string& etag,
                             const std::string& cache_control) {
  http_response res;
  if (auto match = request.header("If-None-Match"); match && none_match(*match, etag)) {
    res.status = 304;
  } else {
    res.content_type = content_type;
    res.body = body;
  }
  res.headers = {{"ETag", etag},
                 {"Cache-Control", cache_control},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Content-Security-Policy", "default-src 'none'"}};
  return res;
}

} // namespace newsdesk::server
